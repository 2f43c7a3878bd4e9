"""Functions of the joins: ``JoinFunction``, ``FlatJoinFunction``, ``CoGroupFunction`` (window join and
co-group) and ``ProcessJoinFunction`` (interval join), with Flink's names and PyFlink's conventions.

As everywhere in panes, a function that may produce several results returns (or ``yield``\\ s) an iterable
instead of writing to a ``Collector``; ``None`` means no result. A yielded ``(OutputTag, value)`` pair goes to
that side output; ``ctx.output(tag, value)`` does the same where there is a context. ``JoinFunction`` returns
exactly one result per pair. Each is a one-method interface, so a plain callable is accepted where one is
expected (``as_*`` below).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from panes.functions.base import Function
from panes.tags import OutputTag

IN1 = TypeVar("IN1")
IN2 = TypeVar("IN2")
OUT = TypeVar("OUT")


class JoinFunction(Function, Generic[IN1, IN2, OUT]):
    """One result for each pair of a window join: ``join(first, second)``."""

    @abstractmethod
    def join(self, first: IN1, second: IN2) -> OUT: ...


class FlatJoinFunction(Function, Generic[IN1, IN2, OUT]):
    """Zero or more results for each pair of a window join: ``join(first, second)`` returns an iterable."""

    @abstractmethod
    def join(self, first: IN1, second: IN2) -> Iterable[OUT] | None: ...


class CoGroupFunction(Function, Generic[IN1, IN2, OUT]):
    """The elements of one key and window from both inputs: ``co_group(first, second)``, where either list
    may be empty (but not both); returns the results."""

    @abstractmethod
    def co_group(self, first: list[IN1], second: list[IN2]) -> Iterable[OUT] | None: ...


class ProcessJoinContext(ABC):
    """What a ``ProcessJoinFunction`` sees of a joined pair (Flink's ``ProcessJoinFunction.Context``)."""

    @abstractmethod
    def get_left_timestamp(self) -> int:
        """The timestamp of the pair's left (first input) element."""

    @abstractmethod
    def get_right_timestamp(self) -> int:
        """The timestamp of the pair's right (second input) element."""

    @abstractmethod
    def get_timestamp(self) -> int:
        """The timestamp of the pair's results: the larger of the two elements' timestamps."""

    @abstractmethod
    def output(self, output_tag: OutputTag[Any], value: Any) -> None:
        """Emit ``value`` to side output ``output_tag`` with the pair's timestamp (``get_timestamp()``)."""


class ProcessJoinFunction(Function, Generic[IN1, IN2, OUT]):
    """Each pair of an interval join: ``process_element(left, right, ctx)`` returns the results, which carry
    ``ctx.get_timestamp()`` (the larger of the two timestamps). Keyed state is available through the runtime
    context given to ``open``."""

    Context = ProcessJoinContext

    @abstractmethod
    def process_element(self, left: IN1, right: IN2, ctx: ProcessJoinContext) -> Iterable[OUT] | None: ...


# -- plain callables --------------------------------------------------------------------------------------


class _CallableJoin(JoinFunction[Any, Any, Any]):
    def __init__(self, fn: Callable[[Any, Any], Any]) -> None:
        self.fn = fn

    def join(self, first: Any, second: Any) -> Any:
        return self.fn(first, second)


class _CallableFlatJoin(FlatJoinFunction[Any, Any, Any]):
    def __init__(self, fn: Callable[[Any, Any], Iterable[Any] | None]) -> None:
        self.fn = fn

    def join(self, first: Any, second: Any) -> Iterable[Any] | None:
        return self.fn(first, second)


class _CallableCoGroup(CoGroupFunction[Any, Any, Any]):
    def __init__(self, fn: Callable[[list[Any], list[Any]], Iterable[Any] | None]) -> None:
        self.fn = fn

    def co_group(self, first: list[Any], second: list[Any]) -> Iterable[Any] | None:
        return self.fn(first, second)


class _CallableProcessJoin(ProcessJoinFunction[Any, Any, Any]):
    def __init__(self, fn: Callable[[Any, Any, ProcessJoinContext], Iterable[Any] | None]) -> None:
        self.fn = fn

    def process_element(self, left: Any, right: Any, ctx: ProcessJoinContext) -> Iterable[Any] | None:
        return self.fn(left, right, ctx)


def _wrap(fn: Any, interface: type[Any], wrapper: Callable[[Any], Any], shape: str) -> Any:
    if isinstance(fn, interface):
        return fn
    if callable(fn) and not isinstance(fn, Function):
        return wrapper(fn)
    raise TypeError(f"expected a {interface.__name__} or a callable {shape}, got {type(fn).__name__}")


def as_join_function(fn: Any) -> JoinFunction[Any, Any, Any] | FlatJoinFunction[Any, Any, Any]:
    """A ``JoinFunction`` or ``FlatJoinFunction`` as it is; a callable ``(first, second) -> result`` as a
    ``JoinFunction``."""
    if isinstance(fn, FlatJoinFunction):
        return fn
    result: JoinFunction[Any, Any, Any] = _wrap(fn, JoinFunction, _CallableJoin, "(first, second) -> result")
    return result


def as_flat_join_function(fn: Any) -> FlatJoinFunction[Any, Any, Any]:
    """A ``FlatJoinFunction``, or a callable ``(first, second) -> iterable`` as one."""
    result: FlatJoinFunction[Any, Any, Any] = _wrap(
        fn, FlatJoinFunction, _CallableFlatJoin, "(first, second) -> iterable"
    )
    return result


def as_co_group_function(fn: Any) -> CoGroupFunction[Any, Any, Any]:
    """A ``CoGroupFunction``, or a callable ``(first, second) -> iterable`` (two lists) as one."""
    result: CoGroupFunction[Any, Any, Any] = _wrap(fn, CoGroupFunction, _CallableCoGroup, "(first, second) -> iterable")
    return result


def as_process_join_function(fn: Any) -> ProcessJoinFunction[Any, Any, Any]:
    """A ``ProcessJoinFunction``, or a callable ``(left, right, ctx) -> iterable`` as one."""
    result: ProcessJoinFunction[Any, Any, Any] = _wrap(
        fn, ProcessJoinFunction, _CallableProcessJoin, "(left, right, ctx) -> iterable"
    )
    return result
