"""A real Apache Kafka broker for the Kafka connector's tests: one broker per test run (per pytest worker), started
by the project's own ``scripts/kafka.sh`` (which fetches Kafka's jars with Maven the first time) and stopped at the
end, and a fresh topic for each test that asks for one.

When the broker cannot be started, every test that needs it fails with the script's message: a machine that
cannot run the broker is a broken test machine, not a reason to skip. ``PANES_KAFKA_BOOTSTRAP=host:port`` points
the tests at a broker that already runs (started by ``bash scripts/kafka.sh start``; topic auto-creation off), which
they then neither start nor stop.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "kafka.sh"
START_TIMEOUT = 600
"""Seconds the script may take: a first start fetches Kafka's jars (about 45 MB; half a minute here)."""


@dataclass(frozen=True)
class Broker:
    """The test run's broker."""

    bootstrap: str

    def admin(self) -> Any:
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap})


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[Broker]:
    """The broker (``scripts/kafka.sh start`` once per run, ``stop`` at the end); fails the test with the
    script's output when it cannot start."""
    given = os.environ.get("PANES_KAFKA_BOOTSTRAP")
    if given:
        yield Broker(given)
        return
    folder = tempfile.mkdtemp(prefix="panes-kafka-test-")
    try:
        started = subprocess.run(
            ["bash", str(SCRIPT), "start", folder],
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        subprocess.run(["bash", str(SCRIPT), "stop", folder], capture_output=True, check=False, timeout=60)
        pytest.fail(f"scripts/kafka.sh start did not finish within {START_TIMEOUT} s: {error.stderr!r}")
    address = started.stdout.strip().splitlines()[-1] if started.stdout.strip() else ""
    if started.returncode != 0 or not address.startswith("127.0.0.1:"):
        shutil.rmtree(folder, ignore_errors=True)
        pytest.fail(
            f"scripts/kafka.sh start failed (exit {started.returncode}):\n{started.stderr}{started.stdout}",
            pytrace=False,
        )
    try:
        yield Broker(address)
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", folder], capture_output=True, check=False, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def new_topic(kafka_broker: Broker) -> Iterator[Callable[..., str]]:
    """Makes a fresh topic: ``new_topic(partitions=1)`` returns its name; the test's topics are deleted after it."""
    made: list[str] = []
    admin = kafka_broker.admin()

    def make(partitions: int = 1) -> str:
        from confluent_kafka.admin import NewTopic

        name = f"t-{uuid.uuid4().hex[:10]}"
        admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
        made.append(name)
        # the controller made it; wait until the broker serves it (every partition with its leader)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = admin.list_topics(name, timeout=10).topics.get(name)
            ready = found is not None and found.error is None and len(found.partitions) == partitions
            if ready and all(p.leader >= 0 and p.error is None for p in found.partitions.values()):
                return name
            time.sleep(0.05)
        pytest.fail(f"topic {name} was created but not served within 30 s")

    yield make
    if made:
        for future in admin.delete_topics(made).values():
            future.exception(30)


@pytest.fixture
def topic(new_topic: Callable[..., str]) -> str:
    """A fresh topic of one partition."""
    return new_topic(1)


def produce(bootstrap: str, topic: str, records: list[dict[str, Any]]) -> None:
    """Write ``records`` (each ``value``, optionally ``key``, ``partition``, ``timestamp``, ``headers``) in order and
    wait until all are acknowledged."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for record in records:
        options = {name: record[name] for name in ("key", "partition", "timestamp", "headers") if name in record}
        producer.produce(topic, record["value"], **options)
    assert producer.flush(30) == 0


def read_topic(
    bootstrap: str, topic: str, count: int, *, isolation: str = "read_uncommitted", deadline: float = 30.0
) -> list[Any]:
    """The first ``count`` records of every partition of ``topic`` (fewer when the deadline passes first), as
    confluent-kafka messages sorted by partition and offset."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        found: list[Any] = []
        end = time.monotonic() + deadline
        while len(found) < count and time.monotonic() < end:
            found += [m for m in consumer.consume(count - len(found), timeout=0.2) if m.error() is None]
        return sorted(found, key=lambda m: (m.partition(), m.offset()))
    finally:
        consumer.close()


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


SPARK_KAFKA_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "spark-kafka.sh"


def load_spark_connector(spark: Any) -> None:
    """Make Spark's Kafka connector loadable by the shared session: its jars are fetched once by
    ``scripts/spark-kafka.sh`` (Maven, like ``scripts/kafka.sh``) and, when the session was created before they were
    cached, added to it (``ADD JAR``); fails the test with the script's output when they cannot be fetched."""
    from panes.spark.kafka.connector import available

    if available(spark):
        return
    fetched = subprocess.run(
        ["bash", str(SPARK_KAFKA_SCRIPT), "fetch"], capture_output=True, text=True, timeout=START_TIMEOUT, check=False
    )
    if fetched.returncode != 0:
        pytest.fail(f"scripts/spark-kafka.sh could not fetch Spark's Kafka connector:\n{fetched.stderr}", pytrace=False)
    folder = Path(fetched.stdout.strip().splitlines()[-1])
    for jar in sorted((folder / "jars").glob("*.jar")):
        spark.sql(f"ADD JAR '{jar}'")
    assert available(spark), f"the jars in {folder} do not give Spark a Kafka data source"


@pytest.fixture(params=["spark", "python"])
def reader(request: Any, spark: Any) -> Any:
    """Each way Spark reads Kafka, chosen through the session's setting (restored afterwards)."""
    from panes.spark.kafka import READER_SETTING, chosen_reader

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
    from panes.spark.kafka import READER_SETTING

    spark.conf.set(READER_SETTING, "python")
    yield "python"
    spark.conf.unset(READER_SETTING)
