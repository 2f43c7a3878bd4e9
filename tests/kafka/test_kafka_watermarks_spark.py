"""A Kafka source's watermark on Spark, against a real broker (issue 40), with both ways Spark reads Kafka: the
scenarios of ``test_kafka_watermarks_local`` as a streaming query restarted from its checkpoint between the writes
(``trigger="available_now"``: each run one micro-batch of what was written). The Spark runner tracks each partition's
watermark itself (``panes.spark.split_watermarks``), as Flink's ``KafkaSource`` and the local runner do: a lagging
partition holds the watermark back, a partition without new records holds it until it is idle. The expected answers are
worked out from that rule at micro-batch granularity (``partition_watermarks.per_partition``), and each scenario is
checked to tell it apart from Spark's own one watermark over all partitions (``one_watermark``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from panes.datastream import OutputTag, StreamExecutionEnvironment
from panes.datastream.sinks import ListSink
from panes.spark import SparkRunner
from panes.spark.kafka import READER_SETTING, chosen_reader
from panes.time import LONG_MIN
from panes.windowing import TumblingEventTimeWindows
from tests.kafka.conftest import Broker, load_spark_connector
from tests.kafka.partition_watermarks import (
    BOUND,
    LAGGING,
    LEADING,
    LEADING_LATER,
    LEADING_ON,
    QUIET_EARLY,
    SHORT_IDLE_TIMEOUT,
    SIZE,
    Records,
    by_run,
    count_windows,
    fired,
    kafka_source,
    one_watermark,
    per_partition,
    strategy,
    watermark,
    write,
)

pytestmark = pytest.mark.spark


@pytest.fixture(params=["spark", "python"])
def reader(request: Any, spark: Any) -> Any:
    """Each way Spark reads Kafka, chosen through the session's setting (restored afterwards)."""
    if request.param == "spark":
        load_spark_connector(spark)
    spark.conf.set(READER_SETTING, request.param)
    assert chosen_reader(spark) == request.param
    yield request.param
    spark.conf.unset(READER_SETTING)


@pytest.fixture
def python_reader(spark: Any) -> Any:
    """panes' Python reader alone: the scenarios past the first one rate partitions the same way whichever reader
    brought the records (the first scenario runs both)."""
    spark.conf.set(READER_SETTING, "python")
    yield "python"
    spark.conf.unset(READER_SETTING)


def _runs(
    bootstrap: str,
    topic: str,
    phases: list[Records],
    spark: Any,
    checkpoint: Path,
    idleness: bool = False,
    twice: bool = False,
) -> list[tuple[Any, int]]:
    """Write each phase's records, then run the job over what arrived (restarting from ``checkpoint``): each
    run's windows and how many records were late (``twice``: the windows of a second window step after the first,
    ``partition_watermarks.count_windows``)."""
    found = []
    for records in phases:
        write(bootstrap, topic, records)
        runner = SparkRunner(spark, checkpoint_location=str(checkpoint), trigger="available_now")
        env = StreamExecutionEnvironment.get_execution_environment(runner)
        chosen = strategy(idleness, SHORT_IDLE_TIMEOUT)
        out, late = count_windows(env, kafka_source(bootstrap, topic), chosen, twice)
        env.execute()
        found.append((sorted(out.values), len(late.values)))
    return found


def test_a_lagging_partition_holds_the_watermark(
    kafka_broker: Broker, new_topic: Callable[..., str], reader: str, spark: Any, tmp_path: Path
) -> None:
    topic = new_topic(2)
    phases = [LEADING, LAGGING]
    runs = _runs(kafka_broker.bootstrap, topic, phases, spark, tmp_path / "checkpoint")
    assert runs == per_partition(phases, 2)
    records = LEADING + LAGGING
    # Flink's answer (the local runner's): nothing before the lagging partition has records, then every window both
    # partitions passed, none of the lagging partition's records late
    assert runs == [([], 0), (fired(records, watermark(records, set())), 0)]
    assert runs != one_watermark(phases)  # Spark's own watermark would judge the lagging partition late


def test_a_partition_without_new_records_holds_the_watermark(
    kafka_broker: Broker, new_topic: Callable[..., str], python_reader: str, spark: Any, tmp_path: Path
) -> None:
    topic = new_topic(2)
    phases = [QUIET_EARLY, LEADING_ON]
    runs = _runs(kafka_broker.bootstrap, topic, phases, spark, tmp_path / "checkpoint")
    assert runs == per_partition(phases, 2)
    assert runs[1] == ([], 0)  # partition 1 holds the windows partition 0 passed
    assert runs != one_watermark(phases)


def test_an_idle_partition_stops_holding_the_watermark(
    kafka_broker: Broker, new_topic: Callable[..., str], python_reader: str, spark: Any, tmp_path: Path
) -> None:
    topic = new_topic(2)
    phases = [QUIET_EARLY, LEADING_ON, LEADING_LATER]
    runs = _runs(kafka_broker.bootstrap, topic, phases, spark, tmp_path / "checkpoint", idleness=True)
    assert runs == per_partition(phases, 2, short_idleness=True)
    assert runs[1] == ([], 0)  # partition 1's countdown starts in the second micro-batch without records
    records = QUIET_EARLY + LEADING_ON + LEADING_LATER
    windows = sorted(window for found, _ in runs for window in found)
    assert windows == fired(records, watermark(records, {1}))  # then partition 0 alone moves it, as in Flink


def test_a_keyed_step_further_down_tracks_the_same_partitions(
    kafka_broker: Broker, new_topic: Callable[..., str], python_reader: str, spark: Any, tmp_path: Path
) -> None:
    # the second window step reads the first's results: it moves by the partitions' watermark too (the first step's
    # shard 0 passes the split rows on), so its windows are the first's, in the same micro-batches
    topic = new_topic(2)
    phases = [LEADING, LAGGING]
    runs = _runs(kafka_broker.bootstrap, topic, phases, spark, tmp_path / "checkpoint", twice=True)
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
        late: OutputTag[Any] = OutputTag("late")
        first = env.from_source(kafka_source(kafka_broker.bootstrap, a), strategy(False), "a")
        second = env.from_source(kafka_source(kafka_broker.bootstrap, b), None, "b")
        counts = (
            first.union(second.assign_timestamps_and_watermarks(strategy(False)))
            .map(lambda value: (value, 1))
            .key_by(lambda pair: 0)
            .window(TumblingEventTimeWindows.of(SIZE))
            .side_output_late_data(late)
            .process(_count)
        )
        out, late_out = ListSink(), ListSink()
        counts.sink_to(out)
        counts.get_side_output(late).sink_to(late_out)
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


def _count(key: Any, context: Any, elements: Any) -> Any:
    yield (context.window().start, sum(1 for _ in elements))
