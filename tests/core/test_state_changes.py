"""Storing only what changed: a snapshot followed by the changes taken after it restores exactly the state
that a snapshot taken at the end would, for the state backend, the timer heap and whole window operators,
and an operator restored that way before every micro-batch emits what an uninterrupted one emits."""

from __future__ import annotations

import pickle
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from panes.datastream.windowed import WindowSpec
from panes.elements import StreamRecord, Watermark
from panes.functions import AggregateFunction, ReduceFunction
from panes.functions.aggregators import FieldKey
from panes.operators.base import CollectingOutput
from panes.state import (
    AggregatingStateDescriptor,
    HeapKeyedStateBackend,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from panes.tags import OutputTag
from panes.time import LONG_MAX
from panes.timers import TimerHeap
from panes.windowing import (
    EventTimeSessionWindows,
    ProcessWindowFunction,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from panes.windowing.internal_functions import aggregate_spec, process_spec
from panes.windowing.triggers.event_time import EventTimeTrigger


class Add(ReduceFunction[int]):
    def reduce(self, a: int, b: int) -> int:
        return a + b


class Mean(AggregateFunction[int, list[int], float]):
    def create_accumulator(self) -> list[int]:
        return [0, 0]

    def add(self, value: int, accumulator: list[int]) -> list[int]:
        accumulator[0] += value  # mutated in place, as Python accumulators often are
        accumulator[1] += 1
        return accumulator

    def get_result(self, accumulator: list[int]) -> float:
        return accumulator[0] / accumulator[1]

    def merge(self, a: list[int], b: list[int]) -> list[int]:
        return [a[0] + b[0], a[1] + b[1]]


DESCRIPTORS = {
    "value": ValueStateDescriptor("value"),
    "list": ListStateDescriptor("list"),
    "map": MapStateDescriptor("map"),
    "reducing": ReducingStateDescriptor("reducing", Add()),
    "aggregating": AggregatingStateDescriptor("aggregating", Mean()),
}

operations = st.lists(
    st.tuples(
        st.sampled_from(["value", "list", "map", "reducing", "aggregating"]),
        st.sampled_from(["write", "write", "write", "clear", "merge", "remove", "take", "snapshot"]),
        st.integers(0, 3),  # key
        st.integers(0, 2),  # namespace
        st.integers(-5, 5),  # value
    ),
    max_size=60,
)


def apply(backend: HeapKeyedStateBackend, kind: str, action: str, namespace: int, value: int) -> None:
    descriptor = DESCRIPTORS[kind]
    state = backend.get_partitioned_state(namespace, descriptor)
    if action == "clear":
        state.clear()
    elif action == "merge" and kind in ("list", "reducing", "aggregating"):
        backend.merge_namespaces(descriptor, namespace, [(namespace + 1) % 3, (namespace + 2) % 3])
    elif action == "remove" and kind == "map":
        state.remove(value % 3)
    elif kind == "value":
        state.update(value if value else None)
    elif kind == "map":
        state.put(value % 3, value)
    elif kind == "list" and value % 2:
        state.add_all([value, value + 1])
    elif kind == "list" and value == 4:
        state.update([value])
    else:
        state.add(value)


def tables(data: dict[str, Any]) -> dict[str, Any]:
    return {name: table for name, table in data["tables"].items() if table}


@settings(max_examples=300, deadline=None)
@given(operations)
def test_a_snapshot_and_the_changes_after_it_restore_the_backend(ops: list[tuple[str, str, int, int, int]]) -> None:
    backend = HeapKeyedStateBackend()
    backend.track_changes()
    log = [pickle.dumps(backend.snapshot())]
    for kind, action, key, namespace, value in ops:
        backend.set_current_key(key)
        if action == "take":
            log.append(pickle.dumps(backend.take_changes()))
        elif action == "snapshot":
            log = [pickle.dumps(backend.snapshot())]
            backend.forget_changes()
        else:
            apply(backend, kind, action, namespace, value)
    log.append(pickle.dumps(backend.take_changes()))
    restored = pickle.loads(log[0])
    for blob in log[1:]:
        HeapKeyedStateBackend.apply_changes(restored, pickle.loads(blob))
    assert tables(restored) == tables(pickle.loads(pickle.dumps(backend.snapshot())))


timer_operations = st.lists(
    st.tuples(st.sampled_from(["add", "add", "remove", "poll", "take"]), st.integers(0, 9), st.integers(0, 3)),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(timer_operations)
def test_replayed_timer_operations_rebuild_the_identical_heap(ops: list[tuple[str, int, int]]) -> None:
    heap = TimerHeap()
    heap.track_operations()
    snapshot = heap.snapshot()
    logged: list[Any] = []
    for action, timestamp, key in ops:
        if action == "add":
            heap.add(timestamp, key, "w")
        elif action == "remove":
            heap.remove(timestamp, key, "w")
        elif action == "poll":
            heap.poll()
        else:
            logged.extend(pickle.loads(pickle.dumps(heap.take_operations())))
    logged.extend(heap.take_operations())
    restored = TimerHeap()
    restored.restore(snapshot, logged)
    assert restored.snapshot() == heap.snapshot()  # the same array: same-time timers fire in the same order


# -- whole operators -----------------------------------------------------------------------------------------


class Contents(ProcessWindowFunction[Any, Any, Any, Any]):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        window = context.window()
        yield (key, window.start, window.end, sorted(e["v"] for e in elements))


class Total(AggregateFunction[dict[str, Any], list[int], int]):
    def create_accumulator(self) -> list[int]:
        return [0]

    def add(self, value: dict[str, Any], accumulator: list[int]) -> list[int]:
        accumulator[0] += value["v"]
        return accumulator

    def get_result(self, accumulator: list[int]) -> int:
        return accumulator[0]

    def merge(self, a: list[int], b: list[int]) -> list[int]:
        return [a[0] + b[0]]


LATE: OutputTag[Any] = OutputTag("late")
ASSIGNERS = {
    "tumbling": lambda: TumblingEventTimeWindows.of(100),
    "sliding": lambda: SlidingEventTimeWindows.of(100, 40),
    "session": lambda: EventTimeSessionWindows.with_gap(50),
}
elements = st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(-200, 1200), st.integers(0, 9))
streams = st.lists(st.lists(elements, max_size=6), min_size=1, max_size=8)


def window_spec(assigner: str, function: str, lateness: int) -> WindowSpec:
    spec = process_spec(Contents()) if function == "process" else aggregate_spec(Total())
    return WindowSpec(ASSIGNERS[assigner](), EventTimeTrigger(), None, lateness, LATE, spec, FieldKey("key"), True)


def run(spec: WindowSpec, aligned: bool, data: list[list[Any]], compact: list[bool] | None) -> list[Counter[str]]:
    """Per batch, what the operator emitted (main and late output) and how many state entries it holds.

    With ``compact``, the operator is rebuilt before every batch from the stored log: a snapshot, then one
    change per batch (``compact[b]``: batch ``b`` stores a new snapshot instead)."""

    def create() -> tuple[Any, CollectingOutput]:
        operator = spec.create_aligned_operator() if aligned else spec.create_operator()
        output = CollectingOutput()
        operator.setup(output)
        if compact is not None:
            operator.track_changes()
        return operator, output

    operator, output = create()
    operator.open()
    log = [operator.snapshot_state()] if compact is not None else []
    marks, top = [], -(2**63)
    for batch in data:
        marks.append(top)
        top = max([top, *(ts - 51 for _, ts, _ in batch)])
    per_batch = []
    for index, (mark, batch) in enumerate(zip([*marks, LONG_MAX], [*data, []], strict=True)):
        if compact is not None and index > 0:
            operator.close()
            operator, output = create()
            operator.restore_state(log[0], log[1:])
            operator.open()
        if mark > operator.current_watermark():
            operator.process_watermark(Watermark(mark))
        for key, ts, v in batch:
            operator.process_record(StreamRecord({"key": key, "v": v}, ts))
        emitted = [repr((r.value, r.timestamp)) for r in output.elements if isinstance(r, StreamRecord)]
        emitted += [f"late {r.value!r}" for r in output.side.get(LATE, [])]
        emitted.append(f"state entries {operator.state_entries()}")
        per_batch.append(Counter(emitted))
        output.elements.clear()
        output.side.clear()
        if compact is not None:
            if compact[index % len(compact)]:
                log = [operator.snapshot_state()]
            else:
                log.append(operator.snapshot_changes())
    return per_batch


@settings(max_examples=150, deadline=None)
@given(
    data=streams,
    assigner=st.sampled_from(list(ASSIGNERS)),
    function=st.sampled_from(["process", "aggregate"]),
    aligned=st.booleans(),
    lateness=st.sampled_from([0, 60]),
    compact=st.lists(st.booleans(), min_size=1, max_size=4),
)
def test_a_window_operator_restored_from_its_log_before_every_batch_emits_what_an_uninterrupted_one_does(
    data: list[list[Any]], assigner: str, function: str, aligned: bool, lateness: int, compact: list[bool]
) -> None:
    spec = window_spec(assigner, function, lateness)
    assert run(spec, aligned, data, compact) == run(spec, aligned, data, None)


def test_changes_hold_what_the_batch_touched_not_what_the_state_holds() -> None:
    spec = window_spec("tumbling", "process", 0)
    operator = spec.create_aligned_operator()
    operator.setup(CollectingOutput())
    operator.track_changes()
    operator.open()
    for key in range(2_000):
        for ts in range(0, 50, 10):
            operator.process_record(StreamRecord({"key": key, "v": ts}, ts))
    full = len(operator.snapshot_state())
    operator.process_record(StreamRecord({"key": 7, "v": 1}, 20))
    changes = len(operator.snapshot_changes())
    assert changes * 100 < full, (changes, full)


def test_a_keys_map_is_stored_entry_by_entry_not_rewritten_whole() -> None:
    """A key's map state holding many entries: a change to one entry stores that entry (or its removal), so
    storing costs what changed, not what the map holds; plain and time-to-live maps alike."""
    from panes.state import StateTtlConfig

    clock = [0]
    ttl = MapStateDescriptor("ttl map")
    ttl.enable_time_to_live(StateTtlConfig.new_builder(1_000).disable_cleanup_in_background().build())
    for descriptor in (MapStateDescriptor("map"), ttl):
        backend = HeapKeyedStateBackend(lambda: clock[0])
        backend.track_changes()
        backend.set_current_key("k")
        state = backend.get_partitioned_state(None, descriptor)
        state.put_all({i: i * i for i in range(100)})
        stored = pickle.loads(pickle.dumps(backend.snapshot()))
        backend.forget_changes()
        state.put(7, "seven")
        state.remove(8)
        state.remove(1_000)  # not there: nothing changes
        delta = backend.take_changes()[descriptor.name]
        [(slot, (puts, removed))] = delta.entries.items()
        assert slot == ("k", None) and list(puts) == [7] and removed == [8]
        assert not (delta.upserts or delta.appends or delta.removed)
        HeapKeyedStateBackend.apply_changes(stored, {descriptor.name: delta})
        assert stored["tables"] == pickle.loads(pickle.dumps(backend.snapshot()))["tables"]
        for key in range(100):  # emptied entry by entry: the slot goes
            state.remove(key)
        delta = backend.take_changes()[descriptor.name]
        assert delta.removed == [("k", None)] and not delta.entries
        HeapKeyedStateBackend.apply_changes(stored, {descriptor.name: delta})
        assert not stored["tables"].get(descriptor.name)


def test_incremental_ttl_cleanup_logs_the_expired_entries_of_a_map() -> None:
    """Flink's incremental cleanup removes expired entries as state is accessed; a map that keeps some
    entries logs the removed ones, not itself."""
    from panes.state import StateTtlConfig

    clock = [0]
    descriptor = MapStateDescriptor("ttl map")
    config = StateTtlConfig.new_builder(1_000).cleanup_incrementally(10, True).build()
    descriptor.enable_time_to_live(config)
    backend = HeapKeyedStateBackend(lambda: clock[0])
    backend.track_changes()
    backend.set_current_key("k")
    state = backend.get_partitioned_state(None, descriptor)
    state.put_all({i: i for i in range(50)})
    clock[0] = 500
    state.put(50, 50)  # written later: outlives the others
    stored = pickle.loads(pickle.dumps(backend.snapshot()))
    backend.forget_changes()
    clock[0] = 1_200  # the first fifty have expired
    assert state.contains(50)  # an access runs the cleanup
    delta = backend.take_changes()[descriptor.name]
    [(slot, (puts, removed))] = delta.entries.items()
    assert slot == ("k", None) and not puts and sorted(removed) == list(range(50)) and not delta.upserts
    HeapKeyedStateBackend.apply_changes(stored, {descriptor.name: delta})
    assert stored["tables"] == pickle.loads(pickle.dumps(backend.snapshot()))["tables"]
