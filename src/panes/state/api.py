"""The state interfaces user code sees (PyFlink's method names).

Every state is scoped to the current key and, for window state, to a window. ``clear()`` removes the
value for that scope.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from typing import Any, Generic, TypeVar

from panes.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)

T = TypeVar("T")
IN = TypeVar("IN")
OUT = TypeVar("OUT")
K = TypeVar("K")
V = TypeVar("V")


class State(ABC):
    @abstractmethod
    def clear(self) -> None:
        """Remove the value of the current scope."""


class ValueState(State, Generic[T]):
    @abstractmethod
    def value(self) -> T | None:
        """The value, or ``None`` when none was set."""

    @abstractmethod
    def update(self, value: T | None) -> None:
        """Set the value; ``None`` clears it."""


class AppendingState(State, Generic[IN, OUT]):
    @abstractmethod
    def get(self) -> OUT:
        """The current result (see each subtype for the empty case)."""

    @abstractmethod
    def add(self, value: IN) -> None: ...


class MergingState(AppendingState[IN, OUT]):
    """An appending state whose values for several namespaces can be merged (session windows)."""


class ListState(MergingState[T, Iterable[T]]):
    """``get()`` returns the list's elements (an empty list when there are none)."""

    @abstractmethod
    def update(self, values: Iterable[T]) -> None: ...

    @abstractmethod
    def add_all(self, values: Iterable[T]) -> None: ...

    def __iter__(self) -> Iterator[T]:
        """The elements, as ``get()`` (PyFlink's ``for value in list_state``)."""
        return iter(self.get())


class ReducingState(MergingState[T, T]):
    """``get()`` returns the reduced value, or ``None`` when nothing was added."""


class AggregatingState(MergingState[IN, OUT]):
    """``get()`` returns the aggregate's result, or ``None`` when nothing was added."""


class MapState(State, Generic[K, V]):
    """A map per key (and window). Besides PyFlink's methods it reads like a ``dict`` as PyFlink's does:
    ``state[k]`` is ``get(k)`` (``None`` for a missing key, as PyFlink and Java return), ``state[k] = v`` is
    ``put``, ``del state[k]`` is ``remove`` (nothing for a missing key), ``k in state`` is ``contains`` and
    iterating yields the keys."""

    @abstractmethod
    def get(self, key: K) -> V | None: ...

    def __getitem__(self, key: K) -> V | None:
        return self.get(key)

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        self.remove(key)

    def __contains__(self, key: object) -> bool:
        return self.contains(key)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[K]:
        return self.keys()

    @abstractmethod
    def put(self, key: K, value: V) -> None: ...

    @abstractmethod
    def put_all(self, entries: dict[K, V]) -> None: ...

    @abstractmethod
    def remove(self, key: K) -> None: ...

    @abstractmethod
    def contains(self, key: K) -> bool: ...

    @abstractmethod
    def items(self) -> Iterator[tuple[K, V]]: ...

    @abstractmethod
    def keys(self) -> Iterator[K]: ...

    @abstractmethod
    def values(self) -> Iterator[V]: ...

    @abstractmethod
    def is_empty(self) -> bool: ...


class KeyedStateStore(ABC):
    """Where functions get keyed state by descriptor (Flink's ``KeyedStateStore``)."""

    @abstractmethod
    def get_state(self, descriptor: ValueStateDescriptor) -> ValueState[Any]: ...

    @abstractmethod
    def get_list_state(self, descriptor: ListStateDescriptor) -> ListState[Any]: ...

    @abstractmethod
    def get_map_state(self, descriptor: MapStateDescriptor) -> MapState[Any, Any]: ...

    @abstractmethod
    def get_reducing_state(self, descriptor: ReducingStateDescriptor) -> ReducingState[Any]: ...

    @abstractmethod
    def get_aggregating_state(self, descriptor: AggregatingStateDescriptor) -> AggregatingState[Any, Any]: ...
