"""The heap keyed state backend: every state lives in a Python dict keyed by ``(key, namespace)``.

Like Flink's heap backend it stores values by reference, scopes every access to the backend's current
key, and merges namespaces for mergeable states (list, reducing, aggregating) with the target first.
Its whole content snapshots to plain Python data (see :meth:`HeapKeyedStateBackend.snapshot`); once
:meth:`HeapKeyedStateBackend.track_changes` is called it also records which entries changed, so a host can
store only those (:meth:`HeapKeyedStateBackend.take_changes`, ``panes.state.changes``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any

from panes.state.api import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    State,
    ValueState,
)
from panes.state.changes import Changes, TableDelta, apply_delta
from panes.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)


class _VoidNamespace:
    """The namespace of state that is not scoped to a window (Flink's ``VoidNamespace``)."""

    _instance: _VoidNamespace | None = None

    def __new__(cls) -> _VoidNamespace:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __reduce__(self) -> tuple[Any, ...]:
        return (_VoidNamespace, ())

    def __repr__(self) -> str:
        return "VOID_NAMESPACE"


VOID_NAMESPACE: Any = _VoidNamespace()

Table = dict[tuple[Any, Any], Any]


class HeapKeyedStateBackend:
    """Keyed state for one operator instance.

    ``set_current_key`` scopes every later access; states are obtained with :meth:`get_partitioned_state`
    (a view bound to one namespace). Registering one state name with two kinds raises ``ValueError``.
    """

    def __init__(self) -> None:
        self._tables: dict[str, Table] = {}
        self._descriptors: dict[str, StateDescriptor] = {}
        self.current_key: Any = None
        self.changes: dict[str, Changes] | None = None
        """Per state name, the entries changed since the last :meth:`take_changes` (``None``: not tracked)."""

    def set_current_key(self, key: Any) -> None:
        self.current_key = key

    def get_current_key(self) -> Any:
        return self.current_key

    # -- registration ---------------------------------------------------------------------------------

    def table(self, descriptor: StateDescriptor) -> Table:
        """The table of ``descriptor``'s state, created on first use."""
        name = descriptor.name
        known = self._descriptors.get(name)
        if known is None:
            self._descriptors[name] = descriptor
            return self._tables.setdefault(name, {})
        if known.kind != descriptor.kind:
            raise ValueError(
                f"state {name!r} is already registered as {known.kind} state; "
                f"a {descriptor.kind} state needs another name"
            )
        if known is not descriptor and descriptor.kind in ("reducing", "aggregating"):
            # keep the function of the latest registration (restored tables have no descriptors yet)
            self._descriptors[name] = descriptor
        return self._tables[name]

    def table_changes(self, name: str) -> Changes | None:
        """Where changes to table ``name`` are recorded (``None`` when changes are not tracked)."""
        if self.changes is None:
            return None
        changes = self.changes.get(name)
        if changes is None:
            changes = self.changes[name] = Changes()
        return changes

    def get_partitioned_state(self, namespace: Any, descriptor: StateDescriptor) -> Any:
        """A state of ``descriptor``'s kind, bound to ``namespace`` and to whatever key is current on access."""
        table = self.table(descriptor)
        changes = self.table_changes(descriptor.name)
        if isinstance(descriptor, ValueStateDescriptor):
            return HeapValueState(self, table, namespace, changes)
        if isinstance(descriptor, ListStateDescriptor):
            return HeapListState(self, table, namespace, changes)
        if isinstance(descriptor, ReducingStateDescriptor):
            return HeapReducingState(self, table, namespace, changes, descriptor)
        if isinstance(descriptor, AggregatingStateDescriptor):
            return HeapAggregatingState(self, table, namespace, changes, descriptor)
        if isinstance(descriptor, MapStateDescriptor):
            return HeapMapState(self, table, namespace, changes)
        raise TypeError(f"unknown state descriptor {type(descriptor).__name__}")

    def merge_namespaces(self, descriptor: StateDescriptor, target: Any, sources: Collection[Any]) -> None:
        """Merge the current key's values in ``sources`` into ``target`` (target first), removing the sources.

        As Flink's heap backend (``AbstractHeapMergingState.mergeNamespaces``): the sources are first
        combined with each other in order, then that result is combined into the target, so a reducing
        state ends as ``reduce(target, reduce(s1, s2))`` and a list as ``target + s1 + s2``. (The order
        shows only for functions that are not associative.)

        Only list, reducing and aggregating states merge; others raise ``ValueError``.
        """
        if not sources:
            return
        table = self.table(descriptor)
        merge: Callable[[Any, Any], Any]
        if isinstance(descriptor, ListStateDescriptor):
            merge = _extend
        elif isinstance(descriptor, ReducingStateDescriptor):
            merge = descriptor.reduce_function.reduce
        elif isinstance(descriptor, AggregatingStateDescriptor):
            merge = descriptor.agg_function.merge
        else:
            raise ValueError("The given state descriptor does not refer to a mergeable state (MergingState)")
        key = self.current_key
        changes = self.table_changes(descriptor.name)
        if changes is not None:
            changes.replaced((key, target))
            for source in sources:
                changes.replaced((key, source))
        merged: Any = None
        for source in sources:
            source_value = table.pop((key, source), None)
            if merged is None:
                merged = source_value
            elif source_value is not None:
                merged = merge(merged, source_value)
        if merged is None:
            return
        target_value = table.get((key, target))
        if target_value is not None:
            merged = merge(target_value, merged)
        if merged is None:
            table.pop((key, target), None)
        else:
            table[(key, target)] = merged

    # -- inspection and snapshots -----------------------------------------------------------------------

    def state_names(self) -> list[str]:
        return list(self._tables)

    def entries(self, name: str) -> Iterator[tuple[Any, Any, Any]]:
        """``(key, namespace, value)`` of every entry of state ``name`` (for tests and invariants)."""
        for (key, namespace), value in self._tables.get(name, {}).items():
            yield key, namespace, value

    def keys(self, name: str) -> set[Any]:
        return {key for key, _ in self._tables.get(name, {})}

    def is_empty(self) -> bool:
        return not any(self._tables.values())

    def entry_count(self, name: str | None = None) -> int:
        """How many (key, namespace) entries all states hold (``name``: state ``name`` holds)."""
        if name is not None:
            return len(self._tables.get(name, ()))
        return sum(len(table) for table in self._tables.values())

    def snapshot(self) -> dict[str, Any]:
        """All state as plain data: ``{"tables": {name: {(key, namespace): value}}, "kinds": {name: kind}}``.

        Values are shared, not copied: pickle the result (as the operators do) before mutating further.
        """
        return {
            "tables": {name: table for name, table in self._tables.items() if table},
            "kinds": {name: d.kind for name, d in self._descriptors.items()},
        }

    def restore(self, data: dict[str, Any]) -> None:
        """Replace all state with a :meth:`snapshot`'s content. Descriptors re-register on first use."""
        self._tables = {name: dict(table) for name, table in data["tables"].items()}
        self._descriptors = {}
        self.forget_changes()

    # -- changes ------------------------------------------------------------------------------------------

    def track_changes(self) -> None:
        """Record from now on which entries change (see :meth:`take_changes`)."""
        if self.changes is None:
            self.changes = {}

    def take_changes(self) -> dict[str, TableDelta]:
        """The entries changed since the last call (or since :meth:`track_changes`), per state name; starts
        recording afresh. Values are shared, as in :meth:`snapshot`."""
        if self.changes is None:
            raise RuntimeError("changes are not tracked: call track_changes() first")
        deltas = {name: changes.take(self._tables.get(name, {})) for name, changes in self.changes.items()}
        return {name: delta for name, delta in deltas.items() if delta}

    def forget_changes(self) -> None:
        """Start recording afresh (after a full snapshot)."""
        if self.changes is not None:
            for changes in self.changes.values():
                changes.slots = {}

    @staticmethod
    def apply_changes(data: dict[str, Any], deltas: dict[str, TableDelta]) -> None:
        """Replay :meth:`take_changes` deltas onto a :meth:`snapshot`'s content (in place)."""
        tables = data["tables"]
        for name, delta in deltas.items():
            apply_delta(tables.setdefault(name, {}), delta)


def _extend(a: list[Any], b: list[Any]) -> list[Any]:
    a.extend(b)
    return a


class _HeapState(State):
    __slots__ = ("_backend", "_changes", "_namespace", "_table")

    def __init__(self, backend: HeapKeyedStateBackend, table: Table, namespace: Any, changes: Changes | None) -> None:
        self._backend = backend
        self._table = table
        self._namespace = namespace
        self._changes = changes

    def _slot(self) -> tuple[Any, Any]:
        return (self._backend.current_key, self._namespace)

    def set_current_namespace(self, namespace: Any) -> None:
        """Re-bind this view to ``namespace`` (internal; operators reuse one view across windows)."""
        self._namespace = namespace

    def get_internal(self) -> Any:
        """The stored object itself, or ``None`` when empty (what Flink's window operator reads)."""
        return self._table.get(self._slot())

    def clear(self) -> None:
        slot = self._slot()
        if self._table.pop(slot, None) is not None and self._changes is not None:
            self._changes.replaced(slot)


class HeapValueState(_HeapState, ValueState[Any]):
    __slots__ = ()

    def value(self) -> Any:
        return self._table.get(self._slot())

    def update(self, value: Any) -> None:
        if value is None:
            self.clear()
        else:
            slot = self._slot()
            self._table[slot] = value
            if self._changes is not None:
                self._changes.replaced(slot)


class HeapListState(_HeapState, ListState[Any]):
    __slots__ = ()

    def get(self) -> list[Any]:
        stored = self._table.get(self._slot())
        return list(stored) if stored is not None else []

    def add(self, value: Any) -> None:
        slot = self._slot()
        stored = self._table.get(slot)
        changes = self._changes
        if stored is None:
            self._table[slot] = [value]
            if changes is not None:
                changes.replaced(slot)
        else:
            if changes is not None:
                changes.appended(slot, len(stored))
            stored.append(value)

    def add_all(self, values: Iterable[Any]) -> None:
        items = list(values)
        if not items:
            return
        slot = self._slot()
        stored = self._table.get(slot)
        changes = self._changes
        if stored is None:
            self._table[slot] = items
            if changes is not None:
                changes.replaced(slot)
        else:
            if changes is not None:
                changes.appended(slot, len(stored))
            stored.extend(items)

    def update(self, values: Iterable[Any]) -> None:
        items = list(values)
        if items:
            slot = self._slot()
            self._table[slot] = items
            if self._changes is not None:
                self._changes.replaced(slot)
        else:
            self.clear()


class HeapReducingState(_HeapState, ReducingState[Any]):
    __slots__ = ("_reduce",)

    def __init__(
        self,
        backend: HeapKeyedStateBackend,
        table: Table,
        namespace: Any,
        changes: Changes | None,
        descriptor: ReducingStateDescriptor,
    ) -> None:
        super().__init__(backend, table, namespace, changes)
        self._reduce = descriptor.reduce_function.reduce

    def get(self) -> Any:
        return self._table.get(self._slot())

    def add(self, value: Any) -> None:
        slot = self._slot()
        previous = self._table.get(slot)
        reduced = value if previous is None else self._reduce(previous, value)
        if reduced is None:
            self._table.pop(slot, None)
        else:
            self._table[slot] = reduced
        if self._changes is not None:
            self._changes.replaced(slot)


class HeapAggregatingState(_HeapState, AggregatingState[Any, Any]):
    __slots__ = ("_agg",)

    def __init__(
        self,
        backend: HeapKeyedStateBackend,
        table: Table,
        namespace: Any,
        changes: Changes | None,
        descriptor: AggregatingStateDescriptor,
    ) -> None:
        super().__init__(backend, table, namespace, changes)
        self._agg = descriptor.agg_function

    def get(self) -> Any:
        accumulator = self._table.get(self._slot())
        return None if accumulator is None else self._agg.get_result(accumulator)

    def add(self, value: Any) -> None:
        slot = self._slot()
        accumulator = self._table.get(slot)
        if accumulator is None:
            accumulator = self._agg.create_accumulator()
        self._table[slot] = self._agg.add(value, accumulator)
        if self._changes is not None:
            self._changes.replaced(slot)


class HeapMapState(_HeapState, MapState[Any, Any]):
    __slots__ = ()

    def _map(self) -> dict[Any, Any]:
        stored: dict[Any, Any] | None = self._table.get(self._slot())
        return stored if stored is not None else {}

    def get(self, key: Any) -> Any:
        return self._map().get(key)

    def _changed(self, slot: tuple[Any, Any]) -> None:
        if self._changes is not None:
            self._changes.replaced(slot)

    def put(self, key: Any, value: Any) -> None:
        slot = self._slot()
        self._table.setdefault(slot, {})[key] = value
        self._changed(slot)

    def put_all(self, entries: dict[Any, Any]) -> None:
        if entries:
            slot = self._slot()
            self._table.setdefault(slot, {}).update(entries)
            self._changed(slot)

    def remove(self, key: Any) -> None:
        slot = self._slot()
        stored = self._table.get(slot)
        if stored is None:
            return
        stored.pop(key, None)
        if not stored:
            del self._table[slot]
        self._changed(slot)

    def contains(self, key: Any) -> bool:
        return key in self._map()

    def items(self) -> Iterator[tuple[Any, Any]]:
        return iter(list(self._map().items()))

    def keys(self) -> Iterator[Any]:
        return iter(list(self._map()))

    def values(self) -> Iterator[Any]:
        return iter(list(self._map().values()))

    def is_empty(self) -> bool:
        return not self._map()
