"""The parts a window co-group (and so a window join) is built from, as Flink builds it in ``CoGroupedStreams``.

Each input's elements are tagged with the side they come from (:class:`TaggedUnion`, by the
:class:`Input1Tagger` and :class:`Input2Tagger` maps), the two tagged streams are unioned, keyed by
:class:`UnionKeySelector` (each side's own key selector) and windowed; :class:`CoGroupWindowFunction` splits
each fired pane back into the two sides' elements and hands them to the ``CoGroupFunction``. A join is a
co-group whose function emits the cross product of the two sides (:class:`JoinCoGroupFunction`,
:class:`FlatJoinCoGroupFunction`). Nothing here is specific to a runner: every runner hosts maps, unions and
the window operator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from panes.functions.base import Function, RuntimeContext
from panes.functions.join import CoGroupFunction, FlatJoinFunction, JoinFunction
from panes.functions.stream import MapFunction
from panes.windowing.functions import WindowFunction


class TaggedUnion:
    """An element of either input of a co-group: ``value`` and the side it comes from (``is_one``: the first
    input). Triggers and evictors of a co-group see these (Flink's ``TaggedUnion``)."""

    __slots__ = ("is_one", "value")

    def __init__(self, value: Any, is_one: bool) -> None:
        self.value = value
        self.is_one = is_one

    @staticmethod
    def one(value: Any) -> TaggedUnion:
        return TaggedUnion(value, True)

    @staticmethod
    def two(value: Any) -> TaggedUnion:
        return TaggedUnion(value, False)

    def is_two(self) -> bool:
        return not self.is_one

    def get_one(self) -> Any:
        """The value when it comes from the first input, else ``None``."""
        return self.value if self.is_one else None

    def get_two(self) -> Any:
        """The value when it comes from the second input, else ``None``."""
        return None if self.is_one else self.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TaggedUnion) and (self.is_one, self.value) == (other.is_one, other.value)

    def __hash__(self) -> int:
        return hash((self.is_one, self.value))

    def __repr__(self) -> str:
        return f"TaggedUnion.{'one' if self.is_one else 'two'}({self.value!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (TaggedUnion, (self.value, self.is_one))


class Input1Tagger(MapFunction[Any, TaggedUnion]):
    """Tags an element of the first input."""

    def map(self, value: Any) -> TaggedUnion:
        return TaggedUnion(value, True)


class Input2Tagger(MapFunction[Any, TaggedUnion]):
    """Tags an element of the second input."""

    def map(self, value: Any) -> TaggedUnion:
        return TaggedUnion(value, False)


class UnionKeySelector:
    """The key of a tagged element: the first input's key selector for its elements, the second's for its."""

    def __init__(self, key_selector1: Callable[[Any], Any], key_selector2: Callable[[Any], Any]) -> None:
        self.key_selector1 = key_selector1
        self.key_selector2 = key_selector2

    def __call__(self, union: TaggedUnion) -> Any:
        if union.is_one:
            return self.key_selector1(union.value)
        return self.key_selector2(union.value)


class _Wrapping(Function):
    """Forwards ``open`` and ``close`` to the wrapped user function (Flink's ``WrappingFunction``)."""

    wrapped: Function

    def open(self, runtime_context: RuntimeContext) -> None:
        self.wrapped.open(runtime_context)

    def close(self) -> None:
        self.wrapped.close()


class CoGroupWindowFunction(_Wrapping, WindowFunction[TaggedUnion, Any, Any, Any]):
    """Splits a fired pane of tagged elements into the first input's and the second input's elements (each in
    the pane's order) and calls ``co_group(first, second)``."""

    def __init__(self, function: CoGroupFunction[Any, Any, Any]) -> None:
        self.wrapped = function
        self.function = function

    def apply(self, key: Any, window: Any, inputs: Iterable[TaggedUnion]) -> Iterable[Any] | None:
        first: list[Any] = []
        second: list[Any] = []
        for union in inputs:
            (first if union.is_one else second).append(union.value)
        return self.function.co_group(first, second)


class JoinCoGroupFunction(_Wrapping, CoGroupFunction[Any, Any, Any]):
    """The nested-loop join of a pane: ``join(first, second)`` for every pair, first input outermost."""

    def __init__(self, function: JoinFunction[Any, Any, Any]) -> None:
        self.wrapped = function
        self.function = function

    def co_group(self, first: list[Any], second: list[Any]) -> Iterator[Any]:
        join = self.function.join
        for one in first:
            for two in second:
                yield join(one, two)


class FlatJoinCoGroupFunction(_Wrapping, CoGroupFunction[Any, Any, Any]):
    """The nested-loop join of a pane with a ``FlatJoinFunction``: every pair's results, first input outermost."""

    def __init__(self, function: FlatJoinFunction[Any, Any, Any]) -> None:
        self.wrapped = function
        self.function = function

    def co_group(self, first: list[Any], second: list[Any]) -> Iterator[Any]:
        join = self.function.join
        for one in first:
            for two in second:
                results = join(one, two)
                if results is not None:
                    yield from results
