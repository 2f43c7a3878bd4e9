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
from tests.spark.microbatch_model import MicroBatchExecutor

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


def test_broadcast_in_batch_execution_on_spark(spark: Any) -> None:
    """BATCH execution on Spark reads the broadcast side first, as the local runner (and Flink) do."""
    from panes.datastream import RuntimeExecutionMode
    from tests.local.test_broadcast import ELEMENTS, EXPECTED_KEYED_BATCH

    env = StreamEnvironment(SparkRunner(spark, num_shards=2), runtime_mode=RuntimeExecutionMode.BATCH)
    result = keyed_pipeline(env.from_collection(ELEMENTS))
    main, seen = ListSink(), ListSink()
    result.sink_to(main)
    result.get_side_output(SEEN).sink_to(seen)
    env.execute()
    assert sorted(main.values, key=repr) == EXPECTED_KEYED_BATCH
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


def test_a_shard_restored_from_its_log_keeps_its_broadcast_state() -> None:
    """What a shard stores on Spark (a snapshot, then each call's changes) restores its broadcast state: a fresh
    host rebuilt from that log (a restart, or a move to another worker) matches events against the rules."""
    from panes.spark.layout import Record
    from panes.spark.linear import linearize
    from panes.spark.shard.element_host import StepHost

    env = StreamEnvironment("local")
    events = env.from_collection([])
    rules = env.from_collection([])
    keyed_process(events, rules).sink_to(ListSink())
    step = next(s for s in linearize(env.plan()) if s.broadcast_input is not None)
    rule_channel, event_channel = (rules.transformation.id, None), (events.transformation.id, None)

    def rows(channel: Any, values: list[Any], first_seq: int) -> list[Record]:
        return [Record(channel, v, v[3], first_seq + i, 1) for i, v in enumerate(values)]

    host = StepHost(step, track_changes=True)
    host.process(rows(rule_channel, [("rule", "r1", 5, 0)], 1))
    log = [host.snapshot()]
    host.process(rows(rule_channel, [("rule", "r2", 10, 1)], 2))
    log.append(host.changes())
    host.process(rows(event_channel, [("event", "a", 7, 2)], 3))  # no broadcast change: none logged
    log.append(host.changes())
    restored = StepHost(step, track_changes=True)
    restored.restore(log[0], log[1:])
    out = restored.process(rows(event_channel, [("event", "b", 12, 3)], 4))
    assert [r.value for r in out] == [("match", "b", 12, ["r1", "r2"])]
