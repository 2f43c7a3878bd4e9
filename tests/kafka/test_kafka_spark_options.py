"""How the Spark runner takes a Kafka source and sink, without starting Spark: the options of Spark's Kafka connector
(subscription, starting and stopping offsets, ``kafka.`` properties, secrets), the reader setting, the cached
connector jars, and what is refused before anything starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from panes.common import SimpleStringSchema
from panes.connectors.kafka import (
    DeliveryGuarantee,
    KafkaOffsetResetStrategy,
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
    KafkaTopicPartition,
)
from panes.datastream import StreamExecutionEnvironment
from panes.spark import kafka_jars
from panes.spark.kafka import READER_SETTING, chosen_reader
from panes.spark.kafka.connector import source_options
from panes.spark.kafka.python_source import SPEC_OPTION
from panes.spark.kafka.sink import check_sink
from panes.spark.runner import refuse_local_only

A0, A1 = KafkaTopicPartition("a", 0), KafkaTopicPartition("a", 1)


def builder() -> Any:
    return KafkaSource.builder().set_bootstrap_servers("h:1").set_value_only_deserializer(SimpleStringSchema())


def test_the_subscription_and_offsets_become_the_connectors_options() -> None:
    source = builder().set_topics("a", "b").build()
    options = source_options(source, {A0: 0}, None)
    assert options["subscribe"] == "a,b" and options["startingOffsets"] == "earliest"
    assert options["kafka.bootstrap.servers"] == "h:1" and options["includeHeaders"] == "true"
    assert "endingOffsets" not in options
    pattern = builder().set_topic_pattern("a.*").set_starting_offsets(KafkaOffsetsInitializer.latest()).build()
    assert source_options(pattern, {}, None)["subscribePattern"] == "a.*"
    assert source_options(pattern, {}, None)["startingOffsets"] == "latest"
    stamped = builder().set_partitions({A1, A0}).set_starting_offsets(KafkaOffsetsInitializer.timestamp(7)).build()
    options = source_options(stamped, {}, None)
    assert json.loads(options["assign"]) == {"a": [0, 1]}
    assert options["startingTimestamp"] == "7" and options["startingOffsetsByTimestampStrategy"] == "latest"
    given = KafkaOffsetsInitializer.offsets({A0: 3}, KafkaOffsetResetStrategy.LATEST)
    bounded = (
        builder().set_topics("a").set_starting_offsets(given).set_bounded(KafkaOffsetsInitializer.offsets({A0: 9}))
    )
    options = source_options(bounded.build(), {A0: 3, A1: 12}, {A0: 9, A1: 12})
    # resolved on the driver: the reset strategy applied where Spark would not
    assert json.loads(options["startingOffsets"]) == {"a": {"0": 3, "1": 12}}
    assert json.loads(options["endingOffsets"]) == {"a": {"0": 9, "1": 12}}
    latest = builder().set_topics("a").set_bounded(KafkaOffsetsInitializer.latest()).build()
    assert source_options(latest, {A0: 0}, {A0: 5})["endingOffsets"] == "latest"


def test_properties_become_kafka_options_without_those_spark_refuses() -> None:
    source = (
        builder()
        .set_topics("a")
        .set_group_id("g")
        .set_properties(
            {
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": "false",
                "partition.discovery.interval.ms": "10",
                "default.api.timeout.ms": "5000",
                "sasl.password": "hunter2",
            }
        )
        .build()
    )
    options = source_options(source, {A0: 0}, None)
    assert options["kafka.group.id"] == "g"
    assert options["kafka.isolation.level"] == "read_committed"
    assert options["kafka.default.api.timeout.ms"] == "5000"
    assert options["kafka.sasl.password"] == "hunter2"  # handed to Spark, which redacts it
    for dropped in ("auto.offset.reset", "enable.auto.commit", "partition.discovery.interval.ms"):
        assert f"kafka.{dropped}" not in options
    assert "secret" in SPEC_OPTION  # the Python source's option is one Spark's redaction covers


class _Conf:
    def __init__(self, value: str | None) -> None:
        self.value = value

    def get(self, key: str, default: str) -> str:
        assert key == READER_SETTING
        return default if self.value is None else self.value


class _Session:
    def __init__(self, value: str | None) -> None:
        self.conf = _Conf(value)


def test_the_reader_setting_chooses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("panes.spark.kafka.connector.available", lambda spark: False)
    assert chosen_reader(_Session(None)) == "python"
    assert chosen_reader(_Session("python")) == "python"
    with pytest.raises(ValueError, match=r"scripts/spark-kafka\.sh"):
        chosen_reader(_Session("spark"))
    with pytest.raises(ValueError, match="one of auto, spark, python"):
        chosen_reader(_Session("jvm"))
    monkeypatch.setattr("panes.spark.kafka.connector.available", lambda spark: True)
    assert chosen_reader(_Session(None)) == "spark"
    assert chosen_reader(_Session("python")) == "python"


def test_created_sessions_load_the_cached_connector(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PANES_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(kafka_jars.SWITCH, raising=False)
    assert kafka_jars.connector_jars("4.3.0") == []
    for version in ("4.1.1", "4.2.0", "3.5.4"):
        folder = tmp_path / "spark-kafka" / version
        (folder / "jars").mkdir(parents=True)
        (folder / "jars" / f"spark-sql-kafka-0-10_2.13-{version}.jar").write_bytes(b"")
        (folder / ".complete").write_text(version)
    # the newest of the same major version when Spark's own is not cached; never another major version
    assert [Path(j).name for j in kafka_jars.connector_jars("4.3.0")] == ["spark-sql-kafka-0-10_2.13-4.2.0.jar"]
    assert [Path(j).name for j in kafka_jars.connector_jars("4.1.1")] == ["spark-sql-kafka-0-10_2.13-4.1.1.jar"]
    assert kafka_jars.connector_jars("5.0.0") == []
    assert kafka_jars.with_connector({"spark.jars": "/x/spark-sql-kafka-mine.jar"}) == {
        "spark.jars": "/x/spark-sql-kafka-mine.jar"
    }
    monkeypatch.setenv(kafka_jars.SWITCH, "off")
    assert kafka_jars.connector_jars("4.3.0") == []


def _sink(selector: bool, guarantee: DeliveryGuarantee) -> KafkaSink:
    schema = KafkaRecordSerializationSchema.builder().set_value_serialization_schema(SimpleStringSchema())
    schema = schema.set_topic_selector(lambda value: "t") if selector else schema.set_topic("t")
    built = KafkaSink.builder().set_bootstrap_servers("h:1").set_record_serializer(schema.build())
    return built.set_delivery_guarantee(guarantee).set_transactional_id_prefix("p").build()


def test_what_the_spark_runner_takes_and_refuses() -> None:
    env = StreamExecutionEnvironment.get_execution_environment("local")
    source = builder().set_topics("a").build()
    env.from_source(source, None, "clicks").sink_to(_sink(False, DeliveryGuarantee.EXACTLY_ONCE))
    refuse_local_only(env.plan())  # Kafka runs on Spark: nothing refused
    check_sink(_sink(True, DeliveryGuarantee.AT_LEAST_ONCE), "out")
    check_sink(_sink(False, DeliveryGuarantee.EXACTLY_ONCE), "out")
    with pytest.raises(ValueError, match=r"sink 'out': on Spark an EXACTLY_ONCE KafkaSink .*\(set_topic\)"):
        check_sink(_sink(True, DeliveryGuarantee.EXACTLY_ONCE), "out")


def test_a_range_the_cluster_does_not_serve_fails_saying_where_the_read_stood(
    kafka_broker: Any, new_topic: Any
) -> None:
    """A read task waiting for offsets the cluster does not hold fails after ``default.api.timeout.ms``, naming the
    offset it reached, the partition's offsets as the cluster gives them, and what librdkafka reported."""
    from panes.connectors.kafka.errors import KafkaConnectorError
    from panes.spark.kafka.python_source import ReadSpec, _Range, read_range
    from tests.kafka.conftest import produce

    topic = new_topic(1)
    produce(kafka_broker.bootstrap, topic, [{"value": b"a", "timestamp": 1}, {"value": b"b", "timestamp": 2}])
    spec = ReadSpec(kafka_broker.bootstrap, {}, {topic: {"0": 0}}, None, 1.0, "KafkaSource 'words'", "test")
    with pytest.raises(KafkaConnectorError) as failed:
        list(read_range(spec, _Range(topic, 0, 0, 5)))
    message = str(failed.value)
    assert "did not serve offsets 0 to 5 of partition 0" in message
    assert "the read stood at offset 2, the partition holds offsets 0 to 2 now" in message
    assert "the client reported" in message
