"""A Kafka source's watermark on Spark, against a real broker (issue 40), with both ways Spark reads Kafka: the
scenarios of ``test_kafka_watermarks_local`` as a streaming query restarted from its checkpoint between the writes
(``trigger="available_now"``: each run one micro-batch of what was written). Spark keeps one watermark over all
partitions (it refuses a second watermark operator in one lineage; ``docs/sources-and-sinks.md``, "Kafka"), not
Flink's minimum over the partitions that the local runner makes: a lagging partition's records are late there and a
partition without new records does not hold the watermark back. These tests pin that answer, worked out from its
definition (``partition_watermarks.one_watermark``), and that ``with_idleness`` is refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from panes.datastream import StreamExecutionEnvironment
from panes.spark import SparkRunner
from panes.spark.kafka import READER_SETTING, chosen_reader
from tests.kafka.conftest import Broker, load_spark_connector
from tests.kafka.partition_watermarks import (
    LAGGING,
    LEADING,
    LEADING_ON,
    QUIET_EARLY,
    Records,
    count_windows,
    fired,
    kafka_source,
    one_watermark,
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


def _runs(bootstrap: str, topic: str, phases: list[Records], spark: Any, checkpoint: Path) -> list[tuple[Any, int]]:
    """Write each phase's records, then run the job over what arrived (restarting from ``checkpoint``): each
    run's windows and how many records were late."""
    found = []
    for records in phases:
        write(bootstrap, topic, records)
        runner = SparkRunner(spark, checkpoint_location=str(checkpoint), trigger="available_now")
        env = StreamExecutionEnvironment.get_execution_environment(runner)
        out, late = count_windows(env, kafka_source(bootstrap, topic), strategy(idleness=False))
        env.execute()
        found.append((sorted(out.values), len(late.values)))
    return found


def test_one_watermark_over_all_partitions_judges_a_lagging_partition_late(
    kafka_broker: Broker, new_topic: Callable[..., str], reader: str, spark: Any, tmp_path: Path
) -> None:
    topic = new_topic(2)
    phases = [LEADING, LAGGING]
    runs = _runs(kafka_broker.bootstrap, topic, phases, spark, tmp_path / "checkpoint")
    assert runs == one_watermark(phases)
    assert runs[1] == ([], len(LAGGING))  # every record of the lagging partition is late on Spark
    records = LEADING + LAGGING
    assert runs[0][0] != fired(records, watermark(records, set()))  # Flink's (the local runner's) answer differs


def test_a_partition_without_new_records_does_not_hold_the_watermark(
    kafka_broker: Broker, new_topic: Callable[..., str], reader: str, spark: Any, tmp_path: Path
) -> None:
    topic = new_topic(2)
    phases = [QUIET_EARLY, LEADING_ON]
    runs = _runs(kafka_broker.bootstrap, topic, phases, spark, tmp_path / "checkpoint")
    assert runs == one_watermark(phases)
    assert runs[1][0] != []  # on the local runner (Flink) the quiet partition holds these windows back


def test_idleness_is_refused_saying_why(kafka_broker: Broker, topic: str, spark: Any, tmp_path: Path) -> None:
    runner = SparkRunner(spark, checkpoint_location=str(tmp_path / "checkpoint"), trigger="available_now")
    env = StreamExecutionEnvironment.get_execution_environment(runner)
    count_windows(env, kafka_source(kafka_broker.bootstrap, topic), strategy(idleness=True))
    with pytest.raises(ValueError, match="with_idleness is not supported on Spark"):
        env.execute()
