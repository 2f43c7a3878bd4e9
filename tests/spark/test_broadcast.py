"""Broadcast state and state TTL on Spark: the local runner's pipelines (``tests/local/test_broadcast``,
``tests/local/test_state_ttl_local``) give the same results, every shard (an instance) receives every broadcast
element, and expired state is gone.

Two shards against two local instances: the broadcast side's side output has one copy per instance on both.
"""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import ListSink, StreamEnvironment
from panes.spark import SparkRunner
from panes.spark.microbatch import MicroBatchExecutor
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
from tests.local.test_state_ttl_local import TTL_BATCHES, TTL_EXPECTED, TTL_TIMES, CountWithTtl

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


def test_state_ttl_on_spark(spark: Any) -> None:
    """Micro-batches with given processing times: TTL expiry on Spark is the local runner's."""
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    source = env.from_micro_batches(TTL_BATCHES, processing_times=TTL_TIMES)
    got = source.key_by(lambda k: k).process(CountWithTtl()).execute_and_collect()
    assert sorted(got) == TTL_EXPECTED
