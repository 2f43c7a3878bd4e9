"""Kafka on the Spark runner: PyFlink's ``KafkaSource`` read and ``KafkaSink`` written by Spark tasks.

Source (:func:`kafka_input`): two ways to read, giving the same columns (``records.KAFKA_DDL``), then the same
first Python step (``records.KafkaRows``: the deserializer, Kafka's timestamp as each element's, bad records to
the source's error output):

- ``spark``: Spark's own Kafka connector (``connector``), when its jar is on the class path (``jars`` and
  ``scripts/spark-kafka.sh`` put it there for a session panes creates);
- ``python``: panes' Python data source over confluent-kafka (``python_source``), needing only pip.

The session's ``spark.panes.kafka.reader`` (:data:`READER_SETTING`) chooses: ``auto`` (the default: Spark's
connector when the session can load it, else Python), ``spark`` (``ValueError`` naming how to get the jar when the
session cannot load it) or ``python``. Either way the offsets a streaming query read live in its checkpoint, and
where each partition starts is resolved on the driver when the query is built (``offsets``).

Sink: ``sink`` (written by the tasks of each micro-batch; exactly once through Kafka transactions).
"""

from __future__ import annotations

from typing import Any

from panes.connectors.kafka.properties import require_client, timeout_seconds
from panes.connectors.kafka.source import KafkaSource
from panes.spark.kafka.records import KafkaRows

READER_SETTING = "spark.panes.kafka.reader"
"""The session setting that chooses how Kafka is read: ``auto`` (default), ``spark`` or ``python``."""

READERS = ("auto", "spark", "python")


def chosen_reader(spark: Any) -> str:
    """``"spark"`` or ``"python"``: how ``spark`` reads Kafka (see the module docstring); ``ValueError`` for another
    setting, or ``spark`` when the session cannot load Spark's connector."""
    from panes.spark.kafka.connector import available

    try:
        setting = str(spark.conf.get(READER_SETTING, "auto")).strip().lower()
    except Exception:
        setting = "auto"
    if setting not in READERS:
        raise ValueError(f"{READER_SETTING} is one of {', '.join(READERS)}, not {setting!r}")
    if setting == "python":
        return "python"
    if available(spark):
        return "spark"
    if setting == "spark":
        raise ValueError(
            f"{READER_SETTING}=spark, but this session cannot load Spark's Kafka connector (data source 'kafka'): "
            "fetch its jars with bash scripts/spark-kafka.sh (a session panes creates then loads them) or give "
            "spark.jars / --packages org.apache.spark:spark-sql-kafka-0-10_2.13:<Spark's version>; or set "
            f"{READER_SETTING}=python"
        )
    return "python"


def kafka_input(spark: Any, source: KafkaSource) -> Any:
    """The ``ColumnarInput`` of a Kafka source: Spark's Kafka columns read the chosen way, and how its first step
    turns them into the source's elements."""
    from panes.spark.kafka.offsets import positions
    from panes.spark.sources import ColumnarInput

    require_client()  # the driver resolves the offsets through librdkafka whichever way Spark reads
    found = positions(source)
    if chosen_reader(spark) == "spark":
        from panes.spark.kafka.connector import connector_dataframe

        frame = connector_dataframe(spark, source, found.start, found.stop)
    else:
        frame = python_dataframe(spark, source, found.start, found.stop)
    return ColumnarInput(
        frame,
        source.record_type(),
        kafka=KafkaRows(source.deserializer, tuple((p.topic, p.partition) for p in found.partitions)),
    )


def python_dataframe(spark: Any, source: KafkaSource, start: Any, stop: Any) -> Any:
    """The DataFrame of ``source`` read by panes' Python data source (streaming unless bounded)."""
    from panes.spark.kafka.python_source import SPEC_OPTION, PanesKafka, ReadSpec, encode_spec
    from panes.spark.session import register_data_source

    def position(offsets: Any) -> dict[str, dict[str, int]]:
        found: dict[str, dict[str, int]] = {}
        for partition, offset in sorted(offsets.items()):
            found.setdefault(partition.topic, {})[str(partition.partition)] = offset
        return found

    spec = ReadSpec(
        source.bootstrap_servers,
        {**source.properties},
        position(start),
        None if stop is None else position(stop),
        timeout_seconds(source.properties),
        source.what(),
        source.client_id_prefix or source.group_id or "KafkaSource",
    )
    register_data_source(spark, PanesKafka)
    reader = spark.read if source.is_bounded() else spark.readStream
    return reader.format("panes_kafka").option(SPEC_OPTION, encode_spec(spec)).load()
