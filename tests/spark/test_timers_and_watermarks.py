"""Timers and watermarks beyond windows, on Spark as on the local runner (and in Flink): an event-time timer
registered behind the watermark fires at the next watermark, whatever the step that registers it; a step after a
keyed step reads the watermark the keyed step forwarded; a bounded job whose sinks receive nothing succeeds."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from panes.datastream import (
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    ListSink,
    ProcessFunction,
    RuntimeExecutionMode,
    StreamEnvironment,
)
from panes.state import MapStateDescriptor
from panes.time import LONG_MAX, LONG_MIN
from panes.types import Types
from panes.watermarks import WatermarkStrategy
from panes.windowing import CountEvictor, GlobalWindows, ProcessWindowFunction

pytestmark = pytest.mark.spark


class LateAndLater(KeyedProcessFunction[Any, Any, Any]):
    """The repro of the issue: at the element of 200 (the watermark is 99), a timer behind it and one ahead."""

    def process_element(self, value: Any, ctx: Any) -> Any:
        if value["ts"] == 200:
            ctx.timer_service().register_event_time_timer(50)
            ctx.timer_service().register_event_time_timer(300)
        return iter(())

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield (ctx.get_current_key(), timestamp, ctx.timer_service().current_watermark())


class Offsets(KeyedProcessFunction[Any, Any, Any]):
    """Registers an event-time timer at the current watermark plus each of the element's offsets (behind, at,
    just ahead of and far ahead of it); a timer at a multiple of 7 registers one more, just behind itself."""

    def process_element(self, value: Any, ctx: Any) -> Any:
        service = ctx.timer_service()
        for offset in value["offsets"]:
            service.register_event_time_timer(max(service.current_watermark(), -(10**9)) + offset)
        return iter(())

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        watermark = ctx.timer_service().current_watermark()
        if timestamp % 7 == 0 and watermark < LONG_MAX:
            ctx.timer_service().register_event_time_timer(timestamp - 1)  # behind the watermark, from a timer
        yield ("keyed", ctx.get_current_key(), timestamp, watermark)


class CoOffsets(KeyedCoProcessFunction[Any, Any, Any, Any]):
    """The same on connected keyed streams (both inputs register; a timer registered twice is one timer)."""

    def _register(self, value: Any, ctx: Any) -> Any:
        service = ctx.timer_service()
        for offset in value["offsets"]:
            service.register_event_time_timer(max(service.current_watermark(), -(10**9)) + offset)
        return iter(())

    def process_element1(self, value: Any, ctx: Any) -> Any:
        return self._register(value, ctx)

    def process_element2(self, value: Any, ctx: Any) -> Any:
        return self._register(value, ctx)

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield ("co", ctx.get_current_key(), timestamp, ctx.timer_service().current_watermark())


class Watermarks(ProcessFunction[Any, Any]):
    """What a step after a keyed step reads of the watermark."""

    def process_element(self, value: Any, ctx: Any) -> Any:
        yield (value, ctx.timer_service().current_watermark())


def one_per_batch(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """One element per micro-batch: Spark's watermark then moves as the local runner's does, element by element."""
    return [[row] for row in rows]


def run(env: StreamEnvironment, build: Callable[[StreamEnvironment], Any]) -> list[Any]:
    sink = ListSink()
    build(env).sink_to(sink)
    env.execute()
    return sink.values


def both(spark: Any, build: Callable[[StreamEnvironment], Any]) -> tuple[list[Any], list[Any]]:
    """The job's output on the local runner and on Spark (sorted: the order across keys follows shards)."""
    from panes.spark import SparkRunner

    local = run(StreamEnvironment("local"), build)
    on_spark = run(StreamEnvironment(SparkRunner(spark, num_shards=3)), build)
    return sorted(local, key=repr), sorted(on_spark, key=repr)


def stamped(env: StreamEnvironment, rows: list[dict[str, Any]]) -> Any:
    return env.from_micro_batches(one_per_batch(rows)).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    )


def test_a_timer_registered_behind_the_watermark_fires_at_the_next_one_and_later_timers_still_fire(
    spark: Any,
) -> None:
    def build(env: StreamEnvironment) -> Any:
        return stamped(env, [{"k": "a", "ts": 100}, {"k": "a", "ts": 200}]).key_by("k").process(LateAndLater())

    local, on_spark = both(spark, build)
    assert local == sorted([("a", 50, 199), ("a", 300, LONG_MAX)], key=repr)  # Flink 2.3 gives these
    assert on_spark == local


def test_timers_registered_anywhere_relative_to_the_watermark_fire_at_the_same_watermarks(spark: Any) -> None:
    draw = random.Random(21)
    rows = [
        {
            "k": f"k{draw.randrange(5)}",
            "ts": 100 * i + draw.randrange(60),
            "offsets": draw.sample([-250, -100, -1, 0, 1, 40, 350, 2_000], 3),
        }
        for i in range(12)  # every offset drawn, 80 firings (16 of them re-register behind the watermark)
    ]

    def build(env: StreamEnvironment) -> Any:
        keyed = stamped(env, rows).key_by("k")
        # connected with itself, so both inputs carry the same watermarks on both runners (how a runner combines
        # the watermarks of two sources is another matter: docs/spark-runner.md)
        return keyed.process(Offsets()).union(keyed.connect(keyed).process(CoOffsets()))

    local, on_spark = both(spark, build)
    assert len(local) > 40 and any(watermark == LONG_MAX for *_, watermark in local)
    assert on_spark == local


def test_a_step_after_a_keyed_step_reads_the_watermark_the_keyed_step_forwarded(spark: Any) -> None:
    def build(env: StreamEnvironment) -> Any:
        rows = [{"k": "a", "ts": 10}, {"k": "b", "ts": 20}, {"k": "a", "ts": 300}]
        counted = stamped(env, rows).key_by("k").map(lambda row: row["ts"])
        return counted.process(Watermarks())

    local, on_spark = both(spark, build)
    # each element reaches the step before the watermark its own timestamp makes (Flink's order)
    assert local == sorted([(10, LONG_MIN), (20, 9), (300, 19)], key=repr)
    assert on_spark == local


def test_a_bounded_job_whose_sinks_receive_nothing_succeeds(spark: Any) -> None:
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark))
    out: list[Any] = []
    env.from_collection([1, 2, 3]).filter(lambda x: x > 10).add_sink(out.append)
    result = env.execute()
    assert out == []
    assert result.metrics["Filter"].records_in == 3 and result.metrics["Filter"].records_out == 0


class TimerWatermark(KeyedBroadcastProcessFunction[Any, Any, Any, Any]):
    """Registers a timer per element; reports both watermarks a timer reads."""

    def process_element(self, value: Any, ctx: Any) -> Any:
        ctx.timer_service().register_event_time_timer(value["ts"] + 5)
        return iter(())

    def process_broadcast_element(self, value: Any, ctx: Any) -> Any:
        ctx.get_broadcast_state(RULES).put(value, ctx.current_watermark())
        return iter(())

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield (ctx.get_current_key(), timestamp, ctx.current_watermark(), ctx.timer_service().current_watermark())


RULES = MapStateDescriptor("rules", Types.STRING(), Types.LONG())


def test_a_keyed_broadcast_timer_in_batch_execution_reads_the_final_watermark(spark: Any) -> None:
    def build(env: StreamEnvironment) -> Any:
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)
        events = env.from_collection([{"k": "a", "ts": 10}, {"k": "b", "ts": 20}, {"k": "a", "ts": 30}])
        events = events.assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
        )
        rules = env.from_collection(["r"]).broadcast(RULES)
        return events.key_by("k").connect(rules).process(TimerWatermark())

    local, on_spark = both(spark, build)
    # Flink fires the timers at the end of each key's input, at watermark Long.MAX_VALUE, and both read it
    expected = [("a", 15, LONG_MAX, LONG_MAX), ("a", 35, LONG_MAX, LONG_MAX), ("b", 25, LONG_MAX, LONG_MAX)]
    assert local == sorted(expected, key=repr)
    assert on_spark == local


class Arrived(ProcessWindowFunction[Any, Any, Any, Any]):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield (key, [element["ts"] for element in elements])


@pytest.mark.parametrize("mode", ["STREAMING", "BATCH"])
def test_a_window_that_emits_only_at_the_end_of_input_sees_each_keys_elements_in_timestamp_order(
    spark: Any, mode: str
) -> None:
    rows = [{"k": "a", "ts": 30}, {"k": "b", "ts": 5}, {"k": "a", "ts": 10}, {"k": "a", "ts": 20}, {"k": "b", "ts": 1}]

    def build(env: StreamEnvironment) -> Any:
        env.set_runtime_mode(getattr(RuntimeExecutionMode, mode))
        stamped = env.from_collection(rows).assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
        )
        keyed = stamped.key_by(lambda row: row["k"])
        end = GlobalWindows.create_with_end_of_stream_trigger
        evicting = keyed.window(end()).evictor(CountEvictor.of(2)).process(Arrived())
        concatenated = keyed.window(end()).reduce(lambda a, b: {"k": a["k"], "ts": a["ts"] * 100 + b["ts"]})
        return evicting.union(concatenated.map(lambda row: (row["k"], row["ts"])))

    local, on_spark = both(spark, build)
    # Flink 2 runs such a window on sorted input in STREAMING as in BATCH execution (FLIP-331): an evictor keeps the
    # latest elements by time, a reduce folds them in time order
    assert local == sorted([("a", 102030), ("a", [20, 30]), ("b", 105), ("b", [1, 5])], key=repr)
    assert on_spark == local


def test_a_window_that_emits_only_at_the_end_of_micro_batches_is_woken_for_it(spark: Any) -> None:
    rows = [{"k": "a", "ts": 30}, {"k": "b", "ts": 5}, {"k": "a", "ts": 10}, {"k": "a", "ts": 20}, {"k": "b", "ts": 1}]

    def build(env: StreamEnvironment) -> Any:
        stamped = env.from_micro_batches([rows[:2], rows[2:]]).assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(100).with_timestamp_assigner("ts")
        )
        end = GlobalWindows.create_with_end_of_stream_trigger()
        return stamped.key_by(lambda row: row["k"]).window(end).evictor(CountEvictor.of(2)).process(Arrived())

    local, on_spark = both(spark, build)
    assert local == [("a", [20, 30]), ("b", [1, 5])]
    assert on_spark == local
