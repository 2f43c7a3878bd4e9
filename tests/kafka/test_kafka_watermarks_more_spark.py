"""More of a Kafka source's watermark per partition on Spark (``test_kafka_watermarks_spark`` has the lagging and the
idle partition), against a real broker, each scenario a streaming query restarted between writes on panes' Python
reader: a partition without new records holds the watermark; a keyed step further down tracks the same partitions (the
split rows passed on); a window that also reads another watermarked input follows the smaller of the two and wakes up
when Spark's watermark moves."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from panes.datastream import StreamExecutionEnvironment
from panes.spark import SparkRunner
from panes.time import LONG_MIN
from tests.kafka.conftest import Broker
from tests.kafka.partition_watermarks import (
    BOUND,
    LAGGING,
    LEADING,
    LEADING_ON,
    QUIET_EARLY,
    Records,
    by_run,
    count_stream,
    kafka_source,
    one_watermark,
    per_partition,
    spark_runs,
    strategy,
    write,
)

pytestmark = pytest.mark.spark


def test_a_partition_without_new_records_holds_the_watermark(
    kafka_broker: Broker, new_topic: Callable[..., str], python_reader: str, spark: Any, tmp_path: Path
) -> None:
    topic = new_topic(2)
    phases = [QUIET_EARLY, LEADING_ON]
    runs = spark_runs(kafka_broker.bootstrap, topic, phases, spark, tmp_path / "checkpoint")
    assert runs == per_partition(phases, 2)
    assert runs[1] == ([], 0)  # partition 1 holds the windows partition 0 passed
    assert runs != one_watermark(phases)


def test_a_keyed_step_further_down_tracks_the_same_partitions(
    kafka_broker: Broker, new_topic: Callable[..., str], python_reader: str, spark: Any, tmp_path: Path
) -> None:
    # the second window step reads the first's results: it moves by the partitions' watermark too (the first step's
    # shard 0 passes the split rows on), so its windows are the first's, in the same micro-batches
    topic = new_topic(2)
    phases = [LEADING, LAGGING]
    runs = spark_runs(kafka_broker.bootstrap, topic, phases, spark, tmp_path / "checkpoint", twice=True)
    assert runs == per_partition(phases, 2)


def test_a_step_that_also_reads_another_input_waits_for_it_too(
    kafka_broker: Broker, new_topic: Callable[..., str], python_reader: str, spark: Any, tmp_path: Path
) -> None:
    # topic A with its own strategy (per partition), topic B with a strategy on the stream (one watermark): the window
    # follows the smaller, Flink's minimum over its inputs; here B lags, so Spark's watermark (B's) bounds the
    # partitions' one, and the window step wakes up when Spark's moves. A gets a record in each run: a query restarted
    # from its checkpoint counts a watermarked input without data since the restart at 0 (Spark's WatermarkTracker
    # forgets each input's watermark on a restart), which would hold Spark's watermark where it was
    a, b = new_topic(2), new_topic(1)
    runs_a: list[Records] = [[(p, t) for p in (0, 1) for t in range(1_000, 12_000, 500)], [(0, 11_500)]]
    runs_b: list[Records] = [[(0, t) for t in range(1_000, 5_000, 500)], [(0, t) for t in range(5_000, 10_000, 500)]]
    found = []
    for records_a, records_b in zip(runs_a, runs_b, strict=True):
        write(kafka_broker.bootstrap, a, records_a)
        write(kafka_broker.bootstrap, b, records_b)
        runner = SparkRunner(spark, checkpoint_location=str(tmp_path / "checkpoint"), trigger="available_now")
        env = StreamExecutionEnvironment.get_execution_environment(runner)
        first = env.from_source(kafka_source(kafka_broker.bootstrap, a), strategy(False), "a")
        second = env.from_source(kafka_source(kafka_broker.bootstrap, b), None, "b")
        out, late_out = count_stream(first.union(second.assign_timestamps_and_watermarks(strategy(False))))
        env.execute()
        found.append((sorted(out.values), len(late_out.values)))
    # the expected watermark after each run: the least of A's partitions and B, each its largest timestamp - BOUND - 1
    highest: dict[str, int] = {}
    after = []
    for records_a, records_b in zip(runs_a, runs_b, strict=True):
        for name, records in (("a0", [t for p, t in records_a if p == 0]), ("a1", [t for p, t in records_a if p == 1])):
            highest[name] = max([highest.get(name, LONG_MIN), *(t - BOUND - 1 for t in records)])
        highest["b"] = max([highest.get("b", LONG_MIN), *(t - BOUND - 1 for _, t in records_b)])
        after.append(min(highest.values()))
    both = [records_a + records_b for records_a, records_b in zip(runs_a, runs_b, strict=True)]
    assert found == by_run(both, after)
    assert found[1][0] != []  # B moved on alone in the second run, and so did the window
