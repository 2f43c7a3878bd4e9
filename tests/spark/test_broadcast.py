"""Broadcast state and state TTL on Spark: the local runner's pipelines (``tests/local/test_broadcast``) give the
same results, every shard (an instance) receives every broadcast element, and expired state is gone.

Two shards against two local instances: the broadcast side's side output has one copy per instance on both.
"""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import KeyedProcessFunction, ListSink, StreamEnvironment
from panes.spark import SparkRunner
from panes.spark.microbatch import MicroBatchExecutor
from panes.state import StateTtlConfig, ValueStateDescriptor
from tests.local.test_broadcast import (
    BATCHES,
    EXPECTED_KEYED,
    EXPECTED_UNKEYED,
    SEEN,
    SEEN_PER_INSTANCE,
    keyed_pipeline,
    keyed_process,
    split,
    unkeyed_process,
)

pytestmark = pytest.mark.spark


def test_broadcast_pipelines_on_spark(spark: Any) -> None:
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    events, rules = split(env.from_micro_batches(BATCHES))
    sinks = []
    for process in (keyed_process, unkeyed_process):
        result = process(events, rules)
        main, seen = ListSink(), ListSink()
        result.sink_to(main)
        result.get_side_output(SEEN).sink_to(seen)
        sinks.append((main, seen))
    env.execute()
    (keyed, keyed_seen), (unkeyed, unkeyed_seen) = sinks
    assert sorted(keyed.values, key=repr) == EXPECTED_KEYED
    assert sorted(unkeyed.values, key=repr) == EXPECTED_UNKEYED
    assert sorted(keyed_seen.values) == sorted(unkeyed_seen.values) == sorted(SEEN_PER_INSTANCE * 2)


def test_broadcast_over_bounded_input_on_spark(spark: Any) -> None:
    """The bounded (batch) path: one batch in source order, then the end of input fires the timers."""
    from tests.local.test_broadcast import ELEMENTS

    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    result = keyed_pipeline(env.from_collection(ELEMENTS))
    main, seen = ListSink(), ListSink()
    result.sink_to(main)
    result.get_side_output(SEEN).sink_to(seen)
    env.execute()
    assert sorted(main.values, key=repr) == EXPECTED_KEYED
    assert sorted(seen.values) == sorted(SEEN_PER_INSTANCE * 2)


def test_broadcast_pipeline_in_process_micro_batches() -> None:
    """The runner's semantics without Spark (``MicroBatchExecutor``), with three shards."""
    env = StreamEnvironment("local")
    source = env.from_collection([])
    result = keyed_pipeline(source)
    main, seen = ListSink(), ListSink()
    result.sink_to(main)
    result.get_side_output(SEEN).sink_to(seen)
    plan = env.plan()
    executor = MicroBatchExecutor(plan, num_shards=3)
    executor.run([{source.transformation.id: batch} for batch in BATCHES])
    main_id, seen_id = (sink.id for sink in plan.sinks)
    assert sorted(executor.sink_values(main_id), key=repr) == EXPECTED_KEYED
    assert sorted(executor.sink_values(seen_id)) == sorted(SEEN_PER_INSTANCE * 3)


class RememberFor(KeyedProcessFunction[str, tuple[str, int], tuple[str, int, Any, Any]]):
    """Remembers each key's last value twice: for 1 ms and for an hour of processing time."""

    def open(self, runtime_context: Any) -> None:
        short = ValueStateDescriptor("short")
        short.enable_time_to_live(StateTtlConfig.new_builder(1).build())
        long = ValueStateDescriptor("long")
        long.enable_time_to_live(StateTtlConfig.new_builder(3_600_000).build())
        self.short = runtime_context.get_state(short)
        self.long = runtime_context.get_state(long)

    def process_element(self, value: tuple[str, int], ctx: Any) -> Any:
        yield (value[0], value[1], self.short.value(), self.long.value())
        self.short.update(value[1])
        self.long.update(value[1])


def test_state_ttl_on_spark(spark: Any) -> None:
    """Processing time is the micro-batch's: a value of 1 ms TTL written in one batch is gone in the next."""
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    got = (
        env.from_micro_batches([[("a", 1), ("b", 2)], [("a", 3)], [("b", 4)]])
        .key_by(lambda e: e[0])
        .process(RememberFor())
        .execute_and_collect()
    )
    assert sorted(got) == [("a", 1, None, None), ("a", 3, None, 1), ("b", 2, None, None), ("b", 4, None, 2)]
