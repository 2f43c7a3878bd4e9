"""How the window operator evaluates a pane: the state it keeps per window and the function it calls.

A :class:`WindowFunctionSpec` pairs the window-contents state (a list of elements, a running reduce, or an
aggregate accumulator) with an :class:`InternalWindowFunction` that turns those contents into results.
The builders below are the combinations Flink offers: ``process``/``apply`` (list state), ``reduce`` and
``aggregate`` (incremental, optionally followed by a process function), and, with an evictor, the same
functions applied to the evicted list.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from panes.functions.base import (
    AggregateFunction,
    Function,
    ReduceFunction,
    as_aggregate_function,
    as_reduce_function,
)
from panes.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
)
from panes.windowing.functions import (
    AllWindowFunction,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    WindowContext,
    WindowFunction,
)

WINDOW_CONTENTS = "window-contents"

ProcessCallable = Callable[[Any, WindowContext[Any], Iterable[Any]], Iterable[Any] | None]


class InternalWindowFunction(ABC):
    """Evaluates a pane's contents for ``key`` and ``window``; results are returned as an iterable."""

    @abstractmethod
    def process(self, key: Any, context: WindowContext[Any], contents: Any) -> Iterable[Any] | None: ...

    @abstractmethod
    def clear(self, context: WindowContext[Any]) -> None: ...

    def clears_nothing(self) -> bool:
        """Whether :meth:`clear` does nothing (the user's function keeps ``ProcessWindowFunction``'s), so an
        operator cleaning many windows up may leave the calls out."""
        return False

    def open_functions(self) -> list[Any]:
        """The user functions inside, for lifecycle calls (open/close)."""
        return []


class _CallableProcessWindowFunction(ProcessWindowFunction[Any, Any, Any, Any]):
    def __init__(self, fn: ProcessCallable) -> None:
        self._fn = fn

    def process(self, key: Any, context: WindowContext[Any], elements: Iterable[Any]) -> Iterable[Any] | None:
        return self._fn(key, context, elements)


class _Wrapping(ProcessWindowFunction[Any, Any, Any, Any]):
    """An adapter around a user function; ``open``/``close`` reach the user function, as Flink's wrapping
    window functions open and close the rich function they wrap."""

    def __init__(self, wrapped: Function) -> None:
        self._wrapped = wrapped

    def open(self, runtime_context: Any) -> None:
        self._wrapped.open(runtime_context)

    def close(self) -> None:
        self._wrapped.close()


class _WindowFunctionAdapter(_Wrapping):
    def __init__(self, fn: WindowFunction[Any, Any, Any, Any]) -> None:
        super().__init__(fn)
        self.fn = fn

    def process(self, key: Any, context: WindowContext[Any], elements: Iterable[Any]) -> Iterable[Any] | None:
        results: Iterable[Any] | None = self.fn.apply(key, context.window(), elements)
        return results


class _AllWindowFunctionAdapter(_Wrapping):
    def __init__(self, fn: AllWindowFunction[Any, Any, Any]) -> None:
        super().__init__(fn)
        self.fn = fn

    def process(self, key: Any, context: WindowContext[Any], elements: Iterable[Any]) -> Iterable[Any] | None:
        return self.fn.apply(context.window(), elements)


class _ProcessAllWindowFunctionAdapter(_Wrapping):
    def __init__(self, fn: ProcessAllWindowFunction[Any, Any, Any]) -> None:
        super().__init__(fn)
        self.fn = fn

    def process(self, key: Any, context: WindowContext[Any], elements: Iterable[Any]) -> Iterable[Any] | None:
        return self.fn.process(context, elements)

    def clear(self, context: WindowContext[Any]) -> None:
        self.fn.clear(context)


class PassThroughWindowFunction(ProcessWindowFunction[Any, Any, Any, Any]):
    """Emits the pane's elements (the reduced value or aggregate result) unchanged."""

    def process(self, key: Any, context: WindowContext[Any], elements: Iterable[Any]) -> Iterable[Any]:
        return elements


def as_process_window_function(fn: Any) -> ProcessWindowFunction[Any, Any, Any, Any]:
    """Any window function as a ``ProcessWindowFunction``.

    Accepts ``ProcessWindowFunction``, ``WindowFunction``, ``ProcessAllWindowFunction``, ``AllWindowFunction``,
    or a plain callable ``(key, context, elements) -> iterable``. ``None`` means pass-through.
    """
    if fn is None:
        return PassThroughWindowFunction()
    if isinstance(fn, ProcessWindowFunction):
        return fn
    if isinstance(fn, WindowFunction):
        return _WindowFunctionAdapter(fn)
    if isinstance(fn, ProcessAllWindowFunction):
        return _ProcessAllWindowFunctionAdapter(fn)
    if isinstance(fn, AllWindowFunction):
        return _AllWindowFunctionAdapter(fn)
    if callable(fn):
        return _CallableProcessWindowFunction(fn)
    raise TypeError(
        "expected a ProcessWindowFunction, WindowFunction, ProcessAllWindowFunction, AllWindowFunction "
        f"or a callable (key, context, elements) -> iterable, got {type(fn).__name__}"
    )


def as_window_function(fn: Any) -> ProcessWindowFunction[Any, Any, Any, Any]:
    """A ``WindowFunction`` (or callable ``(key, window, inputs) -> iterable``) as a process window function."""
    if isinstance(fn, WindowFunction):
        return _WindowFunctionAdapter(fn)
    if callable(fn) and not isinstance(fn, (ProcessWindowFunction, ProcessAllWindowFunction, AllWindowFunction)):

        class _Apply(WindowFunction[Any, Any, Any, Any]):
            def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any] | None:
                results: Iterable[Any] | None = fn(key, window, inputs)
                return results

        return _WindowFunctionAdapter(_Apply())
    return as_process_window_function(fn)


def as_all_window_function(fn: Any) -> ProcessWindowFunction[Any, Any, Any, Any]:
    """An ``AllWindowFunction`` (or callable ``(window, inputs) -> iterable``) as a process window function."""
    if isinstance(fn, AllWindowFunction):
        return _AllWindowFunctionAdapter(fn)
    if callable(fn) and not isinstance(fn, (ProcessWindowFunction, ProcessAllWindowFunction, WindowFunction)):

        class _ApplyAll(AllWindowFunction[Any, Any, Any]):
            def apply(self, window: Any, inputs: Iterable[Any]) -> Iterable[Any] | None:
                results: Iterable[Any] | None = fn(window, inputs)
                return results

        return _AllWindowFunctionAdapter(_ApplyAll())
    return as_process_window_function(fn)


def as_process_all_window_function(fn: Any) -> ProcessWindowFunction[Any, Any, Any, Any]:
    """A ``ProcessAllWindowFunction`` (or callable ``(context, elements) -> iterable``) as a process function."""
    if isinstance(fn, ProcessAllWindowFunction):
        return _ProcessAllWindowFunctionAdapter(fn)
    if callable(fn) and not isinstance(fn, (ProcessWindowFunction, WindowFunction, AllWindowFunction)):

        class _ProcessAll(ProcessAllWindowFunction[Any, Any, Any]):
            def process(self, context: WindowContext[Any], elements: Iterable[Any]) -> Iterable[Any] | None:
                results: Iterable[Any] | None = fn(context, elements)
                return results

        return _ProcessAllWindowFunctionAdapter(_ProcessAll())
    return as_process_window_function(fn)


class _IterableFunction(InternalWindowFunction):
    """Contents are the pane's elements; hand them to the process function as a list of their own.

    The window state's list itself is not handed out: a function that emits the iterable it was given
    would otherwise emit the live state, and its result would change as the pane grows. In Flink the
    emitted record is copied on its way out (object reuse off), so it shows the pane as it was.
    """

    def __init__(self, fn: ProcessWindowFunction[Any, Any, Any, Any]) -> None:
        self.fn = fn

    def process(self, key: Any, context: WindowContext[Any], contents: Any) -> Iterable[Any] | None:
        return self.fn.process(key, context, list(contents))

    def clear(self, context: WindowContext[Any]) -> None:
        self.fn.clear(context)

    def clears_nothing(self) -> bool:
        return type(self.fn).clear is ProcessWindowFunction.clear

    def open_functions(self) -> list[Any]:
        return [self.fn]


class _SingleValueFunction(_IterableFunction):
    """Contents are one value (a reduce result or aggregate result); hand it over as a one-element list."""

    def process(self, key: Any, context: WindowContext[Any], contents: Any) -> Iterable[Any] | None:
        return self.fn.process(key, context, [contents])


class _ReduceApplyFunction(_IterableFunction):
    """Contents are elements (evicting operator); reduce them, then call the process function."""

    def __init__(self, reduce: ReduceFunction[Any], fn: ProcessWindowFunction[Any, Any, Any, Any]) -> None:
        super().__init__(fn)
        self.reduce = reduce

    def process(self, key: Any, context: WindowContext[Any], contents: Any) -> Iterable[Any] | None:
        current: Any = None
        for value in contents:
            current = value if current is None else self.reduce.reduce(current, value)
        return self.fn.process(key, context, [current])

    def open_functions(self) -> list[Any]:
        return [self.reduce, self.fn]


class _AggregateApplyFunction(_IterableFunction):
    """Contents are elements (evicting operator); aggregate them, then call the process function."""

    def __init__(
        self, aggregate: AggregateFunction[Any, Any, Any], fn: ProcessWindowFunction[Any, Any, Any, Any]
    ) -> None:
        super().__init__(fn)
        self.aggregate = aggregate

    def process(self, key: Any, context: WindowContext[Any], contents: Any) -> Iterable[Any] | None:
        accumulator = self.aggregate.create_accumulator()
        for value in contents:
            accumulator = self.aggregate.add(value, accumulator)
        return self.fn.process(key, context, [self.aggregate.get_result(accumulator)])

    def open_functions(self) -> list[Any]:
        return [self.aggregate, self.fn]


@dataclass(frozen=True)
class WindowFunctionSpec:
    """The window-contents state and the function that evaluates it.

    ``kind`` is ``"process"``, ``"reduce"`` or ``"aggregate"``; ``reduce``/``aggregate`` hold the incremental
    function when there is one (runners use them to recognise plans they can execute vectorised).
    ``for_evictor()`` gives the form an evicting operator uses: all elements kept, the incremental function
    applied at firing time.
    """

    kind: str
    state_descriptor: StateDescriptor
    function: InternalWindowFunction
    process_function: ProcessWindowFunction[Any, Any, Any, Any]
    reduce: ReduceFunction[Any] | None = None
    aggregate: AggregateFunction[Any, Any, Any] | None = None

    def for_evictor(self) -> WindowFunctionSpec:
        state = ListStateDescriptor(WINDOW_CONTENTS)
        if self.reduce is not None:
            function: InternalWindowFunction = _ReduceApplyFunction(self.reduce, self.process_function)
        elif self.aggregate is not None:
            function = _AggregateApplyFunction(self.aggregate, self.process_function)
        else:
            function = _IterableFunction(self.process_function)
        return WindowFunctionSpec(self.kind, state, function, self.process_function, self.reduce, self.aggregate)


def process_spec(fn: Any) -> WindowFunctionSpec:
    """Keep every element; evaluate with ``fn`` (any form :func:`as_process_window_function` accepts)."""
    pwf = as_process_window_function(fn)
    return WindowFunctionSpec("process", ListStateDescriptor(WINDOW_CONTENTS), _IterableFunction(pwf), pwf)


def reduce_spec(reduce: Any, fn: Any = None) -> WindowFunctionSpec:
    """Reduce incrementally with ``reduce``; hand the result to ``fn`` (pass-through when ``None``)."""
    reducer = as_reduce_function(reduce)
    pwf = as_process_window_function(fn)
    return WindowFunctionSpec(
        "reduce",
        ReducingStateDescriptor(WINDOW_CONTENTS, reducer),
        _SingleValueFunction(pwf),
        pwf,
        reduce=reducer,
    )


def aggregate_spec(aggregate: Any, fn: Any = None) -> WindowFunctionSpec:
    """Aggregate incrementally with ``aggregate``; hand the result to ``fn`` (pass-through when ``None``)."""
    aggregator = as_aggregate_function(aggregate)
    pwf = as_process_window_function(fn)
    return WindowFunctionSpec(
        "aggregate",
        AggregatingStateDescriptor(WINDOW_CONTENTS, aggregator),
        _SingleValueFunction(pwf),
        pwf,
        aggregate=aggregator,
    )
