"""Watermarks per Kafka partition on the local runner, against a real broker (issue 40): with the strategy given to
``env.from_source``, a partition that lags holds the watermark back, so windows fire only once both partitions
passed them and none of the lagging partition's records is late; with ``with_idleness`` a partition that gets no
more records stops holding it back, without it the watermark waits. The local runner steps its clock by element
(``advance="per_element"``): a periodic watermark after every record."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from panes.datastream import StreamExecutionEnvironment
from panes.local import LocalRunner
from tests.kafka.conftest import Broker
from tests.kafka.partition_watermarks import (
    LAGGING,
    LEADING,
    LEADING_ON,
    QUIET_EARLY,
    count_windows,
    fired,
    kafka_source,
    strategy,
    watermark,
    write,
)


def _start(bootstrap: str, topic: str, idleness: bool) -> tuple[Any, Any, Any]:
    env = StreamExecutionEnvironment.get_execution_environment("local")
    out, late = count_windows(env, kafka_source(bootstrap, topic), strategy(idleness))
    job = LocalRunner(clock="stepping", advance="per_element").start(env.plan(), env.config())
    return job, out, late


def test_a_lagging_partition_holds_the_watermark(kafka_broker: Broker, new_topic: Callable[..., str]) -> None:
    topic = new_topic(2)
    write(kafka_broker.bootstrap, topic, LEADING)
    job, out, late = _start(kafka_broker.bootstrap, topic, idleness=False)
    try:
        assert job.run(len(LEADING)) == len(LEADING)
        assert out.values == []  # partition 1 has had no record: the watermark stays at LONG_MIN
        write(kafka_broker.bootstrap, topic, LAGGING)
        assert job.run(len(LAGGING)) == len(LAGGING)
    finally:
        job.close()
    records = LEADING + LAGGING
    assert sorted(out.values) == fired(records, watermark(records, set()))
    assert late.values == []


def test_an_idle_partition_lets_the_other_move_the_watermark(
    kafka_broker: Broker, new_topic: Callable[..., str]
) -> None:
    records = QUIET_EARLY + LEADING_ON
    results = {}
    for idleness in (True, False):
        topic = new_topic(2)
        write(kafka_broker.bootstrap, topic, QUIET_EARLY)
        job, out, late = _start(kafka_broker.bootstrap, topic, idleness)
        try:
            assert job.run(len(QUIET_EARLY)) == len(QUIET_EARLY)
            write(kafka_broker.bootstrap, topic, LEADING_ON)
            assert job.run(len(LEADING_ON)) == len(LEADING_ON)
        finally:
            job.close()
        assert late.values == []
        results[idleness] = sorted(out.values)
    assert results[True] == fired(records, watermark(records, {1}))  # partition 1 idle: partition 0 alone
    assert results[False] == fired(records, watermark(records, set()))  # partition 1 holds it
    assert len(results[True]) > len(results[False])
