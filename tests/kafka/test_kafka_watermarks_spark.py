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

from tests.kafka.conftest import Broker
from tests.kafka.partition_watermarks import (
    LAGGING,
    LEADING,
    LEADING_LATER,
    LEADING_ON,
    QUIET_EARLY,
    fired,
    one_watermark,
    per_partition,
    spark_runs,
    watermark,
)

pytestmark = pytest.mark.spark


def test_a_lagging_partition_holds_the_watermark(
    kafka_broker: Broker, new_topic: Callable[..., str], reader: str, spark: Any, tmp_path: Path
) -> None:
    topic = new_topic(2)
    phases = [LEADING, LAGGING]
    runs = spark_runs(kafka_broker.bootstrap, topic, phases, spark, tmp_path / "checkpoint")
    assert runs == per_partition(phases, 2)
    records = LEADING + LAGGING
    # Flink's answer (the local runner's): nothing before the lagging partition has records, then every window both
    # partitions passed, none of the lagging partition's records late
    assert runs == [([], 0), (fired(records, watermark(records, set())), 0)]
    assert runs != one_watermark(phases)  # Spark's own watermark would judge the lagging partition late


def test_an_idle_partition_stops_holding_the_watermark(
    kafka_broker: Broker, new_topic: Callable[..., str], python_reader: str, spark: Any, tmp_path: Path
) -> None:
    topic = new_topic(2)
    phases = [QUIET_EARLY, LEADING_ON, LEADING_LATER]
    runs = spark_runs(kafka_broker.bootstrap, topic, phases, spark, tmp_path / "checkpoint", idleness=True)
    assert runs == per_partition(phases, 2, short_idleness=True)
    assert runs[1] == ([], 0)  # partition 1's countdown starts in the second micro-batch without records
    records = QUIET_EARLY + LEADING_ON + LEADING_LATER
    windows = sorted(window for found, _ in runs for window in found)
    assert windows == fired(records, watermark(records, {1}))  # then partition 0 alone moves it, as in Flink
