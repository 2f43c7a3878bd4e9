"""Heap states with time-to-live: the views a TTL-enabled descriptor gets, and the cleanup of expired values.

Stored values are :class:`~panes.state.ttl.TtlValue` pairs (user value, last access): the whole value of value,
reducing and aggregating state, each element of a list, each entry of a map. The rules are Flink's
(``AbstractTtlDecorator``, ``TtlValueState``, ``TtlListState``, ``TtlMapState``, ``TtlReduceFunction``,
``TtlAggregateFunction``):

- a write stores the value with the current processing time;
- a read that finds an expired value removes it from storage; it returns it only under
  ``ReturnExpiredIfNotCleanedUp``; a read of an unexpired value renews its time under ``OnReadAndWrite``;
- list elements and map entries expire one by one; a list read with ``OnReadAndWrite`` stores back only the
  unexpired elements, renewed; a list whose elements all expired is removed when read;
- reducing and aggregating states combine a new value with the stored one only while that is visible
  (an expired accumulator is replaced by a fresh one under ``NeverReturnExpired``).

:class:`IncrementalCleanup` walks a state's stored entries a few at a time (``cleanup_incrementally``);
:func:`purge` is what it and the snapshot filter (``cleanup_full_snapshot``) apply to one stored entry.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from panes.state.api import AggregatingState, ListState, MapState, ReducingState, ValueState
from panes.state.changes import Changes
from panes.state.ttl import StateTtlConfig, StateVisibility, TtlValue, UpdateType, is_expired

if TYPE_CHECKING:
    from panes.state.backend import HeapKeyedStateBackend, Table

MISSING: Any = object()


def purge(kind: str, stored: Any, ttl: int, now: int) -> Any:
    """``stored`` (one entry of a TTL state of ``kind``) without its expired values: the same object when nothing
    expired, a new one when some did, :data:`MISSING` when nothing is left. Never mutates ``stored``."""
    if kind == "list":
        kept = [element for element in stored if not is_expired(element, ttl, now)]
        if len(kept) == len(stored):
            return stored
        return kept if kept else MISSING
    if kind == "map":
        entries = {key: value for key, value in stored.items() if not is_expired(value, ttl, now)}
        if len(entries) == len(stored):
            return stored
        return entries if entries else MISSING
    return MISSING if is_expired(stored, ttl, now) else stored


class IncrementalCleanup:
    """Checks stored entries of one state a few at a time, in a lazy pass over all its entries that restarts
    when done (Flink's ``TtlIncrementalCleanup``); expired values are removed and the changes recorded."""

    def __init__(self, kind: str, ttl: int, size: int) -> None:
        self.kind = kind
        self.ttl = ttl
        self.size = size
        self._pending: deque[Any] = deque()

    def run(self, table: Table, changes: Changes | None, now: int) -> None:
        """Check up to ``size`` entries of ``table``."""
        refilled = False
        checked = 0
        while checked < self.size:
            if not self._pending:
                if refilled or not table:
                    return
                self._pending.extend(list(table))
                refilled = True
            slot = self._pending.popleft()
            stored = table.get(slot)
            if stored is None:
                continue
            checked += 1
            kept = purge(self.kind, stored, self.ttl, now)
            if kept is stored:
                continue
            if kept is MISSING:
                del table[slot]
            else:
                table[slot] = kept
            if changes is None:
                continue
            if kept is not MISSING and self.kind == "map":
                for key in stored.keys() - kept.keys():  # a map keeps its other entries: log the removed ones
                    changes.entry(slot, key)
            else:
                changes.replaced(slot)


class _TtlState:
    """What the TTL views share: the slot of the current key, the clock, the config and the cleanup."""

    __slots__ = (
        "_backend",
        "_changes",
        "_cleanup",
        "_namespace",
        "_now",
        "_return_expired",
        "_table",
        "_ttl",
        "_update_on_read",
    )

    def __init__(
        self,
        backend: HeapKeyedStateBackend,
        table: Table,
        namespace: Any,
        changes: Changes | None,
        config: StateTtlConfig,
        cleanup: IncrementalCleanup | None,
    ) -> None:
        self._backend = backend
        self._table = table
        self._namespace = namespace
        self._changes = changes
        self._ttl = config.ttl
        self._update_on_read = config.update_type is UpdateType.OnReadAndWrite
        self._return_expired = config.state_visibility is StateVisibility.ReturnExpiredIfNotCleanedUp
        self._cleanup = cleanup
        self._now: Callable[[], int] = backend.processing_time

    def _slot(self) -> tuple[Any, Any]:
        return (self._backend.current_key, self._namespace)

    def set_current_namespace(self, namespace: Any) -> None:
        self._namespace = namespace

    def _accessed(self) -> None:
        if self._cleanup is not None:
            self._cleanup.run(self._table, self._changes, self._now())

    def _changed(self, slot: tuple[Any, Any]) -> None:
        if self._changes is not None:
            self._changes.replaced(slot)

    def _expired(self, value: TtlValue) -> bool:
        return is_expired(value, self._ttl, self._now())

    def _checked(self, slot: tuple[Any, Any]) -> TtlValue | None:
        """The stored value of ``slot`` as a read sees it: an expired one is removed (and returned only when
        expired values are visible); an unexpired one is renewed on read when configured."""
        stored: TtlValue | None = self._table.get(slot)
        if stored is None:
            return None
        now = self._now()
        if is_expired(stored, self._ttl, now):
            del self._table[slot]
            self._changed(slot)
            return stored if self._return_expired else None
        if self._update_on_read:
            self._table[slot] = TtlValue(stored.user_value, now)
            self._changed(slot)
        return stored

    def _visible(self, stored: TtlValue | None) -> Any:
        """The user value of ``stored`` when a write may build on it (not expired, or expired values visible)."""
        if stored is None or (not self._return_expired and self._expired(stored)):
            return None
        return stored.user_value

    def get_internal(self) -> Any:
        return self._table.get(self._slot())

    def clear(self) -> None:
        self._accessed()
        slot = self._slot()
        if self._table.pop(slot, None) is not None:
            self._changed(slot)


class TtlValueState(_TtlState, ValueState[Any]):
    __slots__ = ()

    def value(self) -> Any:
        self._accessed()
        stored = self._checked(self._slot())
        return None if stored is None else stored.user_value

    def update(self, value: Any) -> None:
        self._accessed()
        if value is None:
            self.clear()
            return
        slot = self._slot()
        self._table[slot] = TtlValue(value, self._now())
        self._changed(slot)


class TtlListState(_TtlState, ListState[Any]):
    __slots__ = ()

    def get(self) -> list[Any]:
        self._accessed()
        slot = self._slot()
        stored: list[TtlValue] | None = self._table.get(slot)
        if not stored:
            return []
        now = self._now()
        unexpired = [element for element in stored if not is_expired(element, self._ttl, now)]
        visible = stored if self._return_expired else unexpired
        result = [element.user_value for element in visible]
        if not unexpired:
            del self._table[slot]
            self._changed(slot)
        elif self._update_on_read:
            self._table[slot] = [TtlValue(element.user_value, now) for element in unexpired]
            self._changed(slot)
        return result

    def _wrap(self, values: Iterable[Any]) -> list[TtlValue]:
        now = self._now()
        wrapped = []
        for value in values:
            if value is None:
                raise ValueError("You cannot add null to a ListState.")
            wrapped.append(TtlValue(value, now))
        return wrapped

    def add(self, value: Any) -> None:
        self.add_all([value])

    def add_all(self, values: Iterable[Any]) -> None:
        self._accessed()
        items = self._wrap(values)
        if not items:
            return
        slot = self._slot()
        stored = self._table.get(slot)
        if stored is None:
            self._table[slot] = items
            self._changed(slot)
        else:
            if self._changes is not None:
                self._changes.appended(slot, len(stored))
            stored.extend(items)

    def update(self, values: Iterable[Any]) -> None:
        self._accessed()
        items = self._wrap(values)
        slot = self._slot()
        if items:
            self._table[slot] = items
            self._changed(slot)
        elif self._table.pop(slot, None) is not None:
            self._changed(slot)


class TtlReducingState(_TtlState, ReducingState[Any]):
    __slots__ = ("_reduce",)

    def __init__(self, *args: Any, reduce: Callable[[Any, Any], Any]) -> None:
        super().__init__(*args)
        self._reduce = reduce

    def get(self) -> Any:
        self._accessed()
        stored = self._checked(self._slot())
        return None if stored is None else stored.user_value

    def add(self, value: Any) -> None:
        self._accessed()
        slot = self._slot()
        previous = self._visible(self._table.get(slot))
        reduced = value if previous is None else self._reduce(previous, value)
        if reduced is None:
            self._table.pop(slot, None)
        else:
            self._table[slot] = TtlValue(reduced, self._now())
        self._changed(slot)


class TtlAggregatingState(_TtlState, AggregatingState[Any, Any]):
    __slots__ = ("_agg",)

    def __init__(self, *args: Any, agg: Any) -> None:
        super().__init__(*args)
        self._agg = agg

    def get(self) -> Any:
        self._accessed()
        stored = self._checked(self._slot())
        return None if stored is None else self._agg.get_result(stored.user_value)

    def add(self, value: Any) -> None:
        self._accessed()
        slot = self._slot()
        accumulator = self._visible(self._table.get(slot))
        if accumulator is None:
            accumulator = self._agg.create_accumulator()
        self._table[slot] = TtlValue(self._agg.add(value, accumulator), self._now())
        self._changed(slot)


class TtlMapState(_TtlState, MapState[Any, Any]):
    __slots__ = ()

    def _entry(self, key: Any) -> TtlValue | None:
        """The entry ``key`` as a read sees it (the rule of ``_TtlState._checked``, per entry)."""
        slot = self._slot()
        stored: dict[Any, TtlValue] | None = self._table.get(slot)
        if stored is None:
            return None
        entry = stored.get(key)
        if entry is None:
            return None
        now = self._now()
        if is_expired(entry, self._ttl, now):
            del stored[key]
            if not stored:
                del self._table[slot]
            self._changed_entry(slot, key)
            return entry if self._return_expired else None
        if self._update_on_read:
            stored[key] = TtlValue(entry.user_value, now)
            self._changed_entry(slot, key)
        return entry

    def _changed_entry(self, slot: tuple[Any, Any], key: Any) -> None:
        if self._changes is not None:
            self._changes.entry(slot, key)

    def get(self, key: Any) -> Any:
        self._accessed()
        entry = self._entry(key)
        return None if entry is None else entry.user_value

    def contains(self, key: Any) -> bool:
        self._accessed()
        return self._entry(key) is not None

    def put(self, key: Any, value: Any) -> None:
        self.put_all({key: value})

    def put_all(self, entries: dict[Any, Any]) -> None:
        self._accessed()
        if not entries:
            return
        now = self._now()
        slot = self._slot()
        stored = self._table.setdefault(slot, {})
        for key, value in entries.items():
            stored[key] = TtlValue(value, now)
            self._changed_entry(slot, key)

    def remove(self, key: Any) -> None:
        self._accessed()
        slot = self._slot()
        stored = self._table.get(slot)
        if stored is None or key not in stored:
            return
        del stored[key]
        if not stored:
            del self._table[slot]
        self._changed_entry(slot, key)

    def items(self) -> Iterator[tuple[Any, Any]]:
        self._accessed()
        stored: dict[Any, TtlValue] | None = self._table.get(self._slot())
        if stored is None:
            return iter([])
        visible = []
        for key in list(stored):
            entry = self._entry(key)
            if entry is not None:
                visible.append((key, entry.user_value))
        return iter(visible)

    def keys(self) -> Iterator[Any]:
        return iter([key for key, _ in self.items()])

    def values(self) -> Iterator[Any]:
        return iter([value for _, value in self.items()])

    def is_empty(self) -> bool:
        return not list(self.items())


def ttl_merge(
    merge: Callable[[Any, Any], Any], config: StateTtlConfig, now: Callable[[], int]
) -> Callable[[TtlValue, TtlValue], TtlValue | None]:
    """``merge`` of two user values lifted to stored ``TtlValue``s (Flink's ``TtlReduceFunction.reduce`` and
    ``TtlAggregateFunction.merge``): values a read could not see are left out; the result gets the current time."""
    return_expired = config.state_visibility is StateVisibility.ReturnExpiredIfNotCleanedUp

    def merged(a: TtlValue, b: TtlValue) -> TtlValue | None:
        time = now()
        user_a = a.user_value if return_expired or not is_expired(a, config.ttl, time) else None
        user_b = b.user_value if return_expired or not is_expired(b, config.ttl, time) else None
        if user_a is not None and user_b is not None:
            return TtlValue(merge(user_a, user_b), time)
        if user_a is not None:
            return TtlValue(user_a, time)
        if user_b is not None:
            return TtlValue(user_b, time)
        return None

    return merged


def ttl_state(
    backend: HeapKeyedStateBackend,
    table: Table,
    namespace: Any,
    changes: Changes | None,
    descriptor: Any,
    cleanup: IncrementalCleanup | None,
) -> Any:
    """The TTL view of ``descriptor``'s state (its ``ttl_config`` is set)."""
    config: StateTtlConfig = descriptor.ttl_config
    args = (backend, table, namespace, changes, config, cleanup)
    kind = descriptor.kind
    if kind == "value":
        return TtlValueState(*args)
    if kind == "list":
        return TtlListState(*args)
    if kind == "map":
        return TtlMapState(*args)
    if kind == "reducing":
        return TtlReducingState(*args, reduce=descriptor.reduce_function.reduce)
    if kind == "aggregating":
        return TtlAggregatingState(*args, agg=descriptor.agg_function)
    raise TypeError(f"state kind {kind!r} has no time-to-live")
