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

from panes.errors import RESTART_ADVICE, IncompatibleCheckpointError
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
from panes.state.ttl_states import MISSING, IncrementalCleanup, purge, ttl_merge, ttl_state


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


class _NoKey:
    """The current key where there is none (the broadcast side of a keyed broadcast operator): any access to
    keyed state raises, as Flink's "No key set" (the check costs nothing elsewhere: it lives in ``__hash__``)."""

    def __hash__(self) -> int:
        raise RuntimeError("No key set. This method should not be called outside of a keyed context.")

    def __repr__(self) -> str:
        return "NO_KEY"


NO_KEY: Any = _NoKey()

Table = dict[tuple[Any, Any], Any]


class HeapKeyedStateBackend:
    """Keyed state for one operator instance.

    ``set_current_key`` scopes every later access; states are obtained with :meth:`get_partitioned_state`
    (a view bound to one namespace). Registering one state name with two kinds raises ``ValueError``.
    """

    def __init__(self, processing_time: Callable[[], int] | None = None) -> None:
        self._tables: dict[str, Table] = {}
        self._descriptors: dict[str, StateDescriptor] = {}
        self._restored_kinds: dict[str, str] = {}
        self.owner = "an operator"
        """Who owns the state (the operator instance's name), for messages."""
        self.current_key: Any = None
        self.changes: dict[str, Changes] | None = None
        """Per state name, the entries changed since the last :meth:`take_changes` (``None``: not tracked)."""
        self.processing_time: Callable[[], int] = processing_time or _no_clock
        """The clock of states with time-to-live (the hosting operator's processing time)."""
        self._cleanups: dict[str, IncrementalCleanup] = {}
        self.record_cleanups: list[tuple[str, IncrementalCleanup]] = []
        """Incremental TTL cleanups that also run on every record (:meth:`run_record_cleanups`)."""
        self._restored_ttl: set[str] = set()
        """Names of restored states stored with time-to-live whose descriptors have not registered again yet."""

    def set_current_key(self, key: Any) -> None:
        self.current_key = key

    def get_current_key(self) -> Any:
        return self.current_key

    # -- registration ---------------------------------------------------------------------------------

    def table(self, descriptor: StateDescriptor) -> Table:
        """The table of ``descriptor``'s state, created on first use."""
        name = descriptor.name
        known = self._descriptors.get(name)
        with_ttl = descriptor.ttl_config is not None
        if known is None:
            if self._tables.get(name) and (name in self._restored_ttl) != with_ttl:
                raise ValueError(_ttl_mismatch(name, name in self._restored_ttl))
            restored = self._restored_kinds.get(name)
            if restored is not None and restored != descriptor.kind:
                raise IncompatibleCheckpointError(
                    f"cannot restore {self.owner}: its state {name!r} is {restored} state in the checkpoint and "
                    f"the job now registers it as {descriptor.kind} state (a state keeps its kind for the life of "
                    f"the checkpoint; a {descriptor.kind} state needs another name).\n{RESTART_ADVICE}",
                    changes=((None, f"state {name!r}", restored, descriptor.kind),),
                )
            self._descriptors[name] = descriptor
            return self._tables.setdefault(name, {})
        if known.kind != descriptor.kind:
            raise ValueError(
                f"state {name!r} is already registered as {known.kind} state; "
                f"a {descriptor.kind} state needs another name"
            )
        if (known.ttl_config is not None) != with_ttl:
            raise ValueError(_ttl_mismatch(name, known.ttl_config is not None))
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
        if descriptor.ttl_config is not None:
            return ttl_state(self, table, namespace, changes, descriptor, self._incremental_cleanup(descriptor))
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

    def _incremental_cleanup(self, descriptor: StateDescriptor) -> IncrementalCleanup | None:
        """The incremental TTL cleanup of ``descriptor``'s state (one per state), or ``None``."""
        name = descriptor.name
        cleanup = self._cleanups.get(name)
        if cleanup is None:
            config = descriptor.ttl_config
            strategy = config.cleanup_strategies.get_incremental_cleanup_strategy()
            if strategy is None:
                return None
            cleanup = self._cleanups[name] = IncrementalCleanup(descriptor.kind, config.ttl, strategy.cleanup_size)
            if strategy.run_cleanup_for_every_record:
                self.record_cleanups.append((name, cleanup))
        return cleanup

    def run_record_cleanups(self) -> None:
        """Run the incremental TTL cleanups configured to run on every record (operators call this per record)."""
        now = self.processing_time()
        for name, cleanup in self.record_cleanups:
            cleanup.run(self._tables.get(name, {}), self.table_changes(name), now)

    def apply_to_all_keys(
        self, namespace: Any, descriptor: StateDescriptor, function: Callable[[Any, Any], None]
    ) -> None:
        """Call ``function(key, state)`` for every key holding ``descriptor``'s state in ``namespace``, with that
        key current (Flink's ``applyToAllKeys``); the current key is restored afterwards."""
        table = self.table(descriptor)
        keys = [key for key, ns in list(table) if ns == namespace]
        previous = self.current_key
        state = self.get_partitioned_state(namespace, descriptor)
        try:
            for key in keys:
                self.current_key = key
                function(key, state)
        finally:
            self.current_key = previous

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
        if descriptor.ttl_config is not None and not isinstance(descriptor, ListStateDescriptor):
            merge = ttl_merge(merge, descriptor.ttl_config, self.processing_time)
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

        Values are shared, not copied: pickle the result (as the operators do) before mutating further. States
        with time-to-live whose cleanup filters snapshots (``panes.state.ttl``) leave their expired values out.
        """
        tables = {}
        for name, table in self._tables.items():
            if not table:
                continue
            descriptor = self._descriptors.get(name)
            config = None if descriptor is None else descriptor.ttl_config
            kept = table
            if config is not None and config.cleanup_strategies.filters_snapshots():
                kept = self._unexpired(descriptor.kind, table, config.ttl)  # type: ignore[union-attr]
                if not kept:
                    continue
            tables[name] = kept
        registered = self._descriptors
        ttl = {name for name, d in registered.items() if d.ttl_config is not None}
        ttl |= {name for name in self._restored_ttl if name not in registered}
        return {"tables": tables, "kinds": self.kinds(), "ttl": sorted(ttl)}

    def _unexpired(self, kind: str, table: Table, ttl: int) -> Table:
        """``table`` without expired values (a new table when some expired; ``table`` itself otherwise)."""
        now = self.processing_time()
        kept: Table = {}
        changed = False
        for slot, stored in table.items():
            value = purge(kind, stored, ttl, now)
            if value is not stored:
                changed = True
            if value is not MISSING:
                kept[slot] = value
        return kept if changed else table

    def kinds(self) -> dict[str, str]:
        """The kind of every state registered, or restored and not registered again since."""
        return {**self._restored_kinds, **{name: d.kind for name, d in self._descriptors.items()}}

    def restore(self, data: dict[str, Any]) -> None:
        """Replace all state with a :meth:`snapshot`'s content. Descriptors re-register on first use; one
        registered with another kind than the snapshot's raises ``IncompatibleCheckpointError``."""
        self._tables = {name: dict(table) for name, table in data["tables"].items()}
        self._restored_kinds = dict(data.get("kinds", {}))
        self._descriptors = {}
        self._restored_ttl = set(data.get("ttl", ()))
        self._cleanups = {}
        self.record_cleanups = []
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


def _ttl_mismatch(name: str, stored_with_ttl: bool) -> str:
    if stored_with_ttl:
        return (
            f"state {name!r} holds values with time-to-live; its descriptor must enable the same time-to-live "
            "(enable_time_to_live) or the state needs another name"
        )
    return (
        f"state {name!r} holds values without time-to-live; a descriptor with time-to-live needs another name "
        "(Flink refuses to change a state's time-to-live on restore)"
    )


def _no_clock() -> int:
    raise RuntimeError(
        "state with time-to-live needs processing time: host the state in an operator (its clock is the runner's)"
    )


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
        slot = (self._backend.current_key, self._namespace)  # _slot(), inline: this runs once per element
        table = self._table
        accumulator = table.get(slot)
        if accumulator is None:
            accumulator = self._agg.create_accumulator()
        table[slot] = self._agg.add(value, accumulator)
        if self._changes is not None:
            self._changes.replaced(slot)


class HeapMapState(_HeapState, MapState[Any, Any]):
    __slots__ = ()

    def _map(self) -> dict[Any, Any]:
        stored: dict[Any, Any] | None = self._table.get(self._slot())
        return stored if stored is not None else {}

    def get(self, key: Any) -> Any:
        return self._map().get(key)

    def put(self, key: Any, value: Any) -> None:
        slot = self._slot()
        self._table.setdefault(slot, {})[key] = value
        if self._changes is not None:
            self._changes.entry(slot, key)

    def put_all(self, entries: dict[Any, Any]) -> None:
        if entries:
            slot = self._slot()
            self._table.setdefault(slot, {}).update(entries)
            if self._changes is not None:
                for key in entries:
                    self._changes.entry(slot, key)

    def remove(self, key: Any) -> None:
        slot = self._slot()
        stored = self._table.get(slot)
        if stored is None or key not in stored:
            return
        del stored[key]
        if not stored:
            del self._table[slot]
        if self._changes is not None:
            self._changes.entry(slot, key)

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
