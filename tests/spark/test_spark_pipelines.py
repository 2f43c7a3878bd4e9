"""Plans beyond one window on Spark: keyed process functions with timers, connected streams, chained keyed
steps and several watermarked sources. Each result is compared with the in-process statement of the
runner's semantics (``MicroBatchExecutor``) and, where micro-batches cannot matter, with the local runner."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from panes.datastream import DataStream, ListSink, StreamEnvironment
from panes.local import LocalRunner
from panes.spark import SparkRunner
from panes.watermarks import WatermarkStrategy
from panes.windowing import SlidingEventTimeWindows, TumblingEventTimeWindows
from tests.aggregates import Count
from tests.local.test_process_functions import CountWithTimeout, IntervalJoin
from tests.spark.microbatch_model import MicroBatchExecutor

pytestmark = pytest.mark.spark


Build = Callable[[StreamEnvironment, list[DataStream]], DataStream]


def strategy(field: Any, delay: int = 0) -> WatermarkStrategy:
    return WatermarkStrategy.for_bounded_out_of_orderness(delay).with_timestamp_assigner(lambda e, _: e[field])


def on_spark(spark: Any, batches_per_source: list[list[list[Any]]], build: Build) -> list[Any]:
    env = StreamEnvironment(SparkRunner(spark, num_shards=3))
    sources = [env.from_micro_batches(batches) for batches in batches_per_source]
    sink = ListSink()
    build(env, sources).sink_to(sink)
    env.execute()
    return sink.values


def in_process(batches_per_source: list[list[list[Any]]], build: Build) -> list[Any]:
    env = StreamEnvironment("local")
    sources = [env.from_collection([]) for _ in batches_per_source]
    sink = ListSink()
    build(env, sources).sink_to(sink)
    executor = MicroBatchExecutor(env.plan(), num_shards=3)
    steps = max(len(b) for b in batches_per_source)
    executor.run(
        [
            {
                s.transformation.id: (b[i] if i < len(b) else [])
                for s, b in zip(sources, batches_per_source, strict=True)
            }
            for i in range(steps)
        ]
    )
    return executor.sink_values(env.plan().sinks[0].id)


def on_local(batches_per_source: list[list[list[Any]]], build: Build) -> list[Any]:
    env = StreamEnvironment(LocalRunner(clock="stepping"), auto_watermark_interval=200)
    sources = [env.from_micro_batches(batches) for batches in batches_per_source]
    return build(env, sources).execute_and_collect()


def test_keyed_process_function_with_state_and_timers(spark: Any) -> None:
    events = [[("a", 0), ("b", 100)], [("a", 500)], [("a", 2000)], [("b", 2600)], [("a", 3200)]]

    def build(env: StreamEnvironment, sources: list[DataStream]) -> DataStream:
        return (
            sources[0].assign_timestamps_and_watermarks(strategy(1)).key_by(lambda e: e[0]).process(CountWithTimeout())
        )

    got = on_spark(spark, [events], build)
    assert sorted(got) == sorted(in_process([events], build))
    # with one element per batch after the first, this is the local runner's (and Flink's) result too
    assert sorted(got) == sorted(on_local([events], build)) == [("a", 4, 4200), ("b", 1, 1100), ("b", 2, 3600)]


def test_interval_join_of_two_watermarked_sources(spark: Any) -> None:
    orders = [[{"id": "o1", "ts": 0}], [{"id": "o2", "ts": 100}], [{"id": "o3", "ts": 300}], [{"id": "o4", "ts": 3000}]]
    payments = [
        [{"id": "o2", "ts": 600}],
        [{"id": "o3", "ts": 900}],
        [{"id": "o1", "ts": 1500}],
        [{"id": "o4", "ts": 2900}],
    ]

    def build(env: StreamEnvironment, sources: list[DataStream]) -> DataStream:
        first, second = (s.assign_timestamps_and_watermarks(strategy("ts", 500)) for s in sources)
        return first.connect(second).key_by(lambda o: o["id"], lambda p: p["id"]).process(IntervalJoin())

    got = on_spark(spark, [orders, payments], build)
    assert sorted(got) == sorted(in_process([orders, payments], build))
    assert sorted(got) == [("paid", "o2"), ("paid", "o3"), ("unpaid", "o1"), ("unpaid", "o4")]


def test_chained_keyed_steps_see_results_before_the_watermark_that_fired_them(spark: Any) -> None:
    # per-user counts per 1 s window, then the busiest user per 2 s window: the second window must receive
    # the first's results (stamped 999, 1999, ...) before the watermark that fired them passes its own end
    batches = [[(f"u{i % 3}", t) for i in range(4)] for t in range(0, 6000, 500)]

    def build(env: StreamEnvironment, sources: list[DataStream]) -> DataStream:
        per_user = (
            sources[0]
            .assign_timestamps_and_watermarks(strategy(1))
            .key_by(lambda e: e[0])
            .window(TumblingEventTimeWindows.of(1000))
            .aggregate(Count(), lambda user, window, counts: [(user, window.start, c) for c in counts])
        )
        return (
            per_user.key_by(lambda r: "all")
            .window(SlidingEventTimeWindows.of(2000, 1000))
            .process(lambda key, ctx, rows: [(ctx.window().start, sorted(r[2] for r in rows))])
        )

    got = on_spark(spark, [batches], build)
    assert sorted(got) == sorted(in_process([batches], build))
    assert sorted(got) == sorted(on_local([batches], build))
    assert len(got) == 7
