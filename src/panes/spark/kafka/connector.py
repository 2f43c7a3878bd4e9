"""A Kafka source read by Spark's own Kafka connector (``spark.readStream.format("kafka")``, or ``spark.read``
when the source is bounded), whose jar (``spark-sql-kafka-0-10``) must be on the session's class path.

How a :class:`~panes.connectors.kafka.source.KafkaSource` becomes the connector's options:

- ``set_topics`` -> ``subscribe``, ``set_topic_pattern`` -> ``subscribePattern`` (Spark matches the whole name, as
  panes does), ``set_partitions`` -> ``assign``. Spark discovers partitions added while a streaming query runs
  (the local runner does not).
- starting offsets: ``earliest()`` / ``latest()`` as they are; ``timestamp(ms)`` -> ``startingTimestamp`` (a
  partition without a record at or after it starts at its end, ``startingOffsetsByTimestampStrategy=latest``);
  ``offsets(...)`` and ``committed_offsets(...)`` -> per-partition JSON resolved on the driver (Spark cannot read a
  group's committed offsets itself, nor apply a reset strategy to some partitions: panes resolves both).
- stopping offsets (bounded: a batch read): ``latest()`` -> ``endingOffsets=latest``; any other -> per-partition
  JSON resolved on the driver.
- properties -> ``kafka.<name>`` options, but those Spark's connector refuses or manages (deserializers,
  ``auto.offset.reset``, ``enable.auto.commit``, ``interceptor.classes``) and panes' own
  (``default.api.timeout.ms`` is handed on as it is Java's); ``set_group_id`` -> ``kafka.group.id``.
- ``includeHeaders=true``, so a metadata deserializer sees each record's headers.
"""

from __future__ import annotations

from typing import Any

from panes.connectors.kafka.properties import NOT_FOR_LIBRDKAFKA, TIMEOUT_PROPERTY
from panes.connectors.kafka.source import KafkaSource
from panes.spark.kafka.offsets import Offsets, spark_json

PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
"""The class Spark's Kafka connector registers as data source ``kafka``."""

REFUSED_BY_SPARK = frozenset(
    {"auto.offset.reset", "enable.auto.commit", "interceptor.classes", "group.id", "bootstrap.servers"}
)
"""Consumer properties Spark's connector refuses as ``kafka.`` options (or that panes sets another way)."""


def available(spark: Any) -> bool:
    """Whether Spark's Kafka connector can be loaded by ``spark`` (classic sessions: its data source ``kafka``
    resolves; over Spark Connect the client cannot tell: ``False``)."""
    from panes.spark.session import is_connect

    if is_connect(spark):
        return False
    try:
        jvm = spark.sparkContext._jvm
        conf = spark._jsparkSession.sessionState().conf()
        jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource("kafka", conf)
        return True
    except Exception:
        return False


def kafka_options(source: KafkaSource) -> dict[str, str]:
    """The ``kafka.``-prefixed consumer options of ``source`` (see the module docstring)."""
    options = {"kafka.bootstrap.servers": source.bootstrap_servers}
    if source.group_id is not None:
        options["kafka.group.id"] = source.group_id
    for name, value in source.properties.items():
        if name == TIMEOUT_PROPERTY or (name not in NOT_FOR_LIBRDKAFKA and name not in REFUSED_BY_SPARK):
            options[f"kafka.{name}"] = value
    return options


def source_options(source: KafkaSource, start: Offsets, stop: Offsets | None) -> dict[str, str]:
    """Every option of Spark's Kafka source for ``source``, given its resolved offsets."""
    options = kafka_options(source)
    if source.topic_pattern is not None:
        options["subscribePattern"] = source.topic_pattern
    elif source.partitions is not None:
        assigned: dict[str, list[int]] = {}
        for partition in sorted(source.partitions):
            assigned.setdefault(partition.topic, []).append(partition.partition)
        import json

        options["assign"] = json.dumps(assigned, sort_keys=True)
    else:
        options["subscribe"] = ",".join(source.topics)
    starting = source.starting_offsets
    if starting.kind in ("earliest", "latest"):
        options["startingOffsets"] = starting.kind
    elif starting.kind == "timestamp":
        options["startingTimestamp"] = str(starting.argument)
        options["startingOffsetsByTimestampStrategy"] = "latest"
    else:
        options["startingOffsets"] = spark_json(start)
    if stop is not None:
        stopping = source.stopping_offsets
        assert stopping is not None
        options["endingOffsets"] = "latest" if stopping.kind == "latest" else spark_json(stop)
    options["includeHeaders"] = "true"
    return options


def connector_dataframe(spark: Any, source: KafkaSource, start: Offsets, stop: Offsets | None) -> Any:
    """The DataFrame of ``source`` read by Spark's connector: streaming unless the source is bounded."""
    reader = spark.read if source.is_bounded() else spark.readStream
    return reader.format("kafka").options(**source_options(source, start, stop)).load()
