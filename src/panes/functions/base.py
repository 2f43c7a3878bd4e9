"""Base function interfaces: ``ReduceFunction`` and ``AggregateFunction`` (Flink's names, PyFlink's methods).

Where Flink has a one-method interface, a plain callable is accepted and wrapped by ``as_*`` helpers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, TypeVar

IN = TypeVar("IN")
ACC = TypeVar("ACC")
OUT = TypeVar("OUT")
T = TypeVar("T")


class RuntimeContext(ABC):
    """What a rich function sees of its runtime (PyFlink's ``RuntimeContext``); given to ``open``.

    Keyed state (``get_state`` and friends) is only available to functions on a keyed stream; elsewhere
    those methods raise ``RuntimeError``.
    """

    @abstractmethod
    def get_task_name(self) -> str: ...

    @abstractmethod
    def get_index_of_this_subtask(self) -> int: ...

    @abstractmethod
    def get_number_of_parallel_subtasks(self) -> int: ...

    @abstractmethod
    def get_max_number_of_parallel_subtasks(self) -> int: ...

    @abstractmethod
    def get_state(self, state_descriptor: Any) -> Any: ...

    @abstractmethod
    def get_list_state(self, state_descriptor: Any) -> Any: ...

    @abstractmethod
    def get_map_state(self, state_descriptor: Any) -> Any: ...

    @abstractmethod
    def get_reducing_state(self, state_descriptor: Any) -> Any: ...

    @abstractmethod
    def get_aggregating_state(self, state_descriptor: Any) -> Any: ...


class Function(ABC):
    """Base of user functions. ``open``/``close`` are optional lifecycle hooks (Flink's rich functions)."""

    def open(self, runtime_context: RuntimeContext) -> None:
        """Called once before the first element; default does nothing."""

    def close(self) -> None:
        """Called once after the last element; default does nothing."""


class ReduceFunction(Function, Generic[T]):
    """Combines two values of the same type into one: ``reduce(a, b)``. ``a`` is the running result."""

    @abstractmethod
    def reduce(self, value1: T, value2: T) -> T: ...


class AggregateFunction(Function, Generic[IN, ACC, OUT]):
    """Incremental aggregation with an accumulator (Flink's ``AggregateFunction``).

    ``add`` and ``merge`` may mutate and return the accumulator or return a new one; the returned value is
    what is kept.
    """

    @abstractmethod
    def create_accumulator(self) -> ACC: ...

    @abstractmethod
    def add(self, value: IN, accumulator: ACC) -> ACC: ...

    @abstractmethod
    def get_result(self, accumulator: ACC) -> OUT: ...

    @abstractmethod
    def merge(self, acc_a: ACC, acc_b: ACC) -> ACC: ...


class _CallableReduceFunction(ReduceFunction[T]):
    def __init__(self, fn: Callable[[T, T], T]) -> None:
        self._fn = fn

    def reduce(self, value1: T, value2: T) -> T:
        return self._fn(value1, value2)

    def __repr__(self) -> str:
        return f"ReduceFunction({getattr(self._fn, '__name__', self._fn)!r})"


def as_reduce_function(fn: ReduceFunction[T] | Callable[[T, T], T]) -> ReduceFunction[T]:
    """``fn`` as a ``ReduceFunction``; a plain two-argument callable is wrapped.

    Raises ``TypeError`` when ``fn`` is neither.
    """
    if isinstance(fn, ReduceFunction):
        return fn
    if callable(fn):
        return _CallableReduceFunction(fn)
    raise TypeError(f"expected a ReduceFunction or a callable (a, b) -> value, got {type(fn).__name__}")


def as_aggregate_function(fn: Any) -> AggregateFunction[Any, Any, Any]:
    """``fn`` if it is an ``AggregateFunction``; raises ``TypeError`` naming the four methods otherwise."""
    if isinstance(fn, AggregateFunction):
        return fn
    raise TypeError(
        f"expected an AggregateFunction (create_accumulator, add, get_result, merge), got {type(fn).__name__}"
    )
