"""The broadcast state pattern end to end on the local runner, with parallel instances.

Rules arrive on a broadcast stream and events on a keyed (or non-keyed) stream, both split from one source so
the order in which an instance sees them is the source's. What the functions emit follows Flink's documented
broadcast state pattern and ``BroadcastStateITCase``: every parallel instance receives every broadcast element
(the side output of the broadcast side has one copy per instance), each instance's broadcast state is built from
them alone, the non-broadcast side reads it, ``apply_to_keyed_state`` visits the keys of its own instance (their
union is every key), and keyed timers fire with the key current. The Spark test (``tests/spark/test_broadcast``)
runs the same pipelines.
"""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import (
    BroadcastProcessFunction,
    DataStream,
    KeyedBroadcastProcessFunction,
    ListSink,
    StreamEnvironment,
)
from panes.local import LocalRunner
from panes.state import MapStateDescriptor, ValueStateDescriptor
from panes.tags import OutputTag
from panes.types import Types
from panes.watermarks import WatermarkStrategy

RULES = MapStateDescriptor("rules", Types.STRING(), Types.LONG())
SEEN: OutputTag[str] = OutputTag("seen-rules")

# (kind, name or key, threshold or value, timestamp)
ELEMENTS: list[tuple[str, str, int, int]] = [
    ("rule", "r1", 5, 0),
    ("rule", "r2", 10, 1),
    ("event", "a", 7, 2),
    ("event", "b", 12, 3),
    ("event", "a", 11, 4),
    ("rule", "report", 0, 5),
    ("rule", "r1", 20, 6),
    ("event", "b", 15, 7),
]
BATCHES = [ELEMENTS[0:2], ELEMENTS[2:5], ELEMENTS[5:6], ELEMENTS[6:8]]
"""The same elements as micro-batches (the Spark test's input; the local runner reads them in order)."""


def matching(rules: Any, value: int) -> list[str]:
    return sorted(name for name, threshold in rules.items() if value >= threshold)


class RuleMatcher(KeyedBroadcastProcessFunction[str, Any, Any, Any]):
    """Counts events per key (keyed state), matches each against the broadcast rules, sets a timer 10 ms after
    each event; the broadcast rule ``report`` reports every key's count through ``apply_to_keyed_state``."""

    COUNT = ValueStateDescriptor("count")

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(self.COUNT)

    def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
        _, name, threshold, _ = value
        if name == "report":
            counts: list[Any] = []
            ctx.apply_to_keyed_state(self.COUNT, lambda key, state: counts.append(("report", key, state.value())))
            return counts
        ctx.get_broadcast_state(RULES).put(name, threshold)
        ctx.output(SEEN, name)
        return None

    def process_element(self, value: Any, ctx: Any) -> Any:
        _, key, amount, ts = value
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(ts + 10)
        yield ("match", key, amount, matching(ctx.get_broadcast_state(RULES), amount))

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield ("timer", ctx.get_current_key(), timestamp)


class UnkeyedRuleMatcher(BroadcastProcessFunction[Any, Any, Any]):
    def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
        _, name, threshold, _ = value
        if name != "report":
            ctx.get_broadcast_state(RULES).put(name, threshold)
            ctx.output(SEEN, name)

    def process_element(self, value: Any, ctx: Any) -> Any:
        _, key, amount, _ = value
        yield ("match", key, amount, matching(ctx.get_broadcast_state(RULES), amount))


def split(source: DataStream) -> tuple[DataStream, DataStream]:
    """(events, rules) of the source, with timestamps from the fourth field."""
    stamped = source.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[3])
    )
    return stamped.filter(lambda e: e[0] == "event"), stamped.filter(lambda e: e[0] == "rule")


def keyed_process(events: DataStream, rules: DataStream) -> DataStream:
    return events.key_by(lambda e: e[1]).connect(rules.broadcast(RULES)).process(RuleMatcher())


def unkeyed_process(events: DataStream, rules: DataStream) -> DataStream:
    return events.connect(rules.broadcast(RULES)).process(UnkeyedRuleMatcher())


def keyed_pipeline(source: DataStream) -> DataStream:
    return keyed_process(*split(source))


def unkeyed_pipeline(source: DataStream) -> DataStream:
    return unkeyed_process(*split(source))


EXPECTED_KEYED = sorted(
    [
        ("match", "a", 7, ["r1"]),
        ("match", "b", 12, ["r1", "r2"]),
        ("match", "a", 11, ["r1", "r2"]),
        ("report", "a", 2),
        ("report", "b", 1),
        ("match", "b", 15, ["r2"]),
        ("timer", "a", 12),
        ("timer", "a", 14),
        ("timer", "b", 13),
        ("timer", "b", 17),
    ],
    key=repr,
)
EXPECTED_UNKEYED = sorted(
    [
        ("match", "a", 7, ["r1"]),
        ("match", "b", 12, ["r1", "r2"]),
        ("match", "a", 11, ["r1", "r2"]),
        ("match", "b", 15, ["r2"]),
    ],
    key=repr,
)
SEEN_PER_INSTANCE = ["r1", "r1", "r2"]
# BATCH execution: the broadcast side first (final rules r1 = 20, r2 = 10; the report finds no keyed state)
EXPECTED_UNKEYED_BATCH = sorted(
    [("match", "a", 7, []), ("match", "a", 11, ["r2"]), ("match", "b", 12, ["r2"]), ("match", "b", 15, ["r2"])],
    key=repr,
)
EXPECTED_KEYED_BATCH = sorted(
    [*EXPECTED_UNKEYED_BATCH, ("timer", "a", 12), ("timer", "a", 14), ("timer", "b", 13), ("timer", "b", 17)],
    key=repr,
)


def run_local(pipeline: Any, parallelism: int) -> tuple[list[Any], list[Any]]:
    env = StreamEnvironment(LocalRunner(clock="stepping"), parallelism=parallelism)
    result = pipeline(env.from_micro_batches(BATCHES))
    main, seen = ListSink(), ListSink()
    result.sink_to(main)
    result.get_side_output(SEEN).sink_to(seen)
    env.execute()
    return sorted(main.values, key=repr), sorted(seen.values)


def test_keyed_broadcast_with_two_instances() -> None:
    main, seen = run_local(keyed_pipeline, 2)
    assert main == EXPECTED_KEYED
    assert seen == sorted(SEEN_PER_INSTANCE * 2)


def test_keyed_broadcast_with_one_instance() -> None:
    main, seen = run_local(keyed_pipeline, 1)
    assert main == EXPECTED_KEYED
    assert seen == SEEN_PER_INSTANCE


def test_non_keyed_broadcast_with_three_instances() -> None:
    main, seen = run_local(unkeyed_pipeline, 3)
    assert main == EXPECTED_UNKEYED
    assert seen == sorted(SEEN_PER_INSTANCE * 3)


def test_the_function_kind_must_match_the_stream() -> None:
    env = StreamEnvironment("local")
    events, rules = split(env.from_collection(ELEMENTS))
    with pytest.raises(TypeError, match="KeyedBroadcastProcessFunction"):
        events.key_by(lambda e: e[1]).connect(rules.broadcast(RULES)).process(UnkeyedRuleMatcher())
    with pytest.raises(TypeError, match="needs a BroadcastProcessFunction"):
        events.connect(rules.broadcast(RULES)).process(RuleMatcher())


def test_batch_execution_reads_the_broadcast_side_first() -> None:
    """Flink's docs (Execution Mode, "Order of Processing"): in BATCH execution broadcast inputs are processed
    first, then the keyed input key by key. So every event sees the final rules (r1 = 20, r2 = 10), the report
    finds no keyed state yet, and each key's timers fire when its input ends."""
    from panes.datastream import RuntimeExecutionMode

    env = StreamEnvironment(LocalRunner(), parallelism=2, runtime_mode=RuntimeExecutionMode.BATCH)
    result = keyed_pipeline(env.from_collection(ELEMENTS))
    main, seen = ListSink(), ListSink()
    result.sink_to(main)
    result.get_side_output(SEEN).sink_to(seen)
    env.execute()
    assert sorted(main.values, key=repr) == EXPECTED_KEYED_BATCH
    assert sorted(seen.values) == sorted(SEEN_PER_INSTANCE * 2)
    unkeyed_env = StreamEnvironment(LocalRunner(), parallelism=2, runtime_mode=RuntimeExecutionMode.BATCH)
    unkeyed = unkeyed_pipeline(unkeyed_env.from_collection(ELEMENTS)).execute_and_collect()
    assert sorted(unkeyed, key=repr) == EXPECTED_UNKEYED_BATCH
