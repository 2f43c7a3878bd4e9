"""Broadcast state: a map per operator instance, written only by the broadcast side (Flink's ``BroadcastState``).

Every instance of a broadcast operator receives every broadcast element, so when the function updates the
state the same way from those elements alone, all instances hold the same state. The non-broadcast side sees
a :class:`ReadOnlyBroadcastState`; its writes raise ``UnsupportedOperationError``. Values are returned by
reference, as in Flink: do not mutate what ``get`` or ``items`` return.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from panes.errors import UnsupportedOperationError
from panes.state.api import State

K = TypeVar("K")
V = TypeVar("V")


class ReadOnlyBroadcastState(State, Generic[K, V]):
    """What the non-broadcast side reads: ``get``, ``contains``, ``items``, ``keys``, ``values``, ``is_empty``."""

    @abstractmethod
    def get(self, key: K) -> V | None: ...

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

    def __getitem__(self, key: K) -> V | None:
        return self.get(key)

    def __contains__(self, key: object) -> bool:
        return self.contains(key)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[K]:
        return self.keys()


class BroadcastState(ReadOnlyBroadcastState[K, V]):
    """What the broadcast side reads and writes."""

    @abstractmethod
    def put(self, key: K, value: V) -> None: ...

    @abstractmethod
    def put_all(self, entries: dict[K, V]) -> None: ...

    @abstractmethod
    def remove(self, key: K) -> None: ...

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        self.remove(key)


class HeapBroadcastState(BroadcastState[Any, Any]):
    """A broadcast state held in a dict; ``on_change`` is called after every write (change tracking)."""

    def __init__(self, name: str, on_change: Callable[[], None]) -> None:
        self.name = name
        self.entries: dict[Any, Any] = {}
        self._on_change = on_change

    def get(self, key: Any) -> Any:
        return self.entries.get(key)

    def contains(self, key: Any) -> bool:
        return key in self.entries

    def items(self) -> Iterator[tuple[Any, Any]]:
        return iter(list(self.entries.items()))

    def keys(self) -> Iterator[Any]:
        return iter(list(self.entries))

    def values(self) -> Iterator[Any]:
        return iter(list(self.entries.values()))

    def is_empty(self) -> bool:
        return not self.entries

    def put(self, key: Any, value: Any) -> None:
        self.entries[key] = value
        self._on_change()

    def put_all(self, entries: dict[Any, Any]) -> None:
        self.entries.update(entries)
        self._on_change()

    def remove(self, key: Any) -> None:
        if self.entries.pop(key, None) is not None:
            self._on_change()

    def clear(self) -> None:
        if self.entries:
            self.entries.clear()
            self._on_change()


class ReadOnlyBroadcastStateView(ReadOnlyBroadcastState[Any, Any]):
    """The non-broadcast side's view of a :class:`HeapBroadcastState`: reads pass through, writes raise."""

    def __init__(self, state: HeapBroadcastState) -> None:
        self._state = state

    def get(self, key: Any) -> Any:
        return self._state.get(key)

    def contains(self, key: Any) -> bool:
        return self._state.contains(key)

    def items(self) -> Iterator[tuple[Any, Any]]:
        return self._state.items()

    def keys(self) -> Iterator[Any]:
        return self._state.keys()

    def values(self) -> Iterator[Any]:
        return self._state.values()

    def is_empty(self) -> bool:
        return self._state.is_empty()

    def _refuse(self, *args: Any) -> None:
        raise UnsupportedOperationError(
            f"broadcast state {self._state.name!r} is read-only on the non-broadcast side: "
            "change it in process_broadcast_element"
        )

    put = put_all = remove = clear = __setitem__ = __delitem__ = _refuse
