"""The Kafka connector's builders refuse what cannot run, with Flink's conditions and a message saying what to
change, and the serialization schemas read and write what PyFlink's do; none of this needs a broker."""

from __future__ import annotations

import datetime as dt
import pickle

import pytest

from panes.common import ByteArraySchema, SimpleStringSchema, Types
from panes.connectors.kafka import (
    DeliveryGuarantee,
    KafkaOffsetResetStrategy,
    KafkaOffsetsInitializer,
    KafkaRecordDeserializationSchema,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
    KafkaTopicPartition,
)
from panes.datastream.formats.csv import CsvRowDeserializationSchema, CsvRowSerializationSchema
from panes.datastream.formats.json import JsonRowDeserializationSchema, JsonRowSerializationSchema
from panes.types import Row

ROW = Types.ROW_NAMED(["user", "n", "ok"], [Types.STRING(), Types.LONG(), Types.BOOLEAN()])


def source_builder() -> object:
    return (
        KafkaSource.builder()
        .set_bootstrap_servers("127.0.0.1:9092")
        .set_topics("clicks")
        .set_value_only_deserializer(SimpleStringSchema())
    )


def serializer() -> KafkaRecordSerializationSchema:
    return (
        KafkaRecordSerializationSchema.builder()
        .set_topic("out")
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )


def test_a_source_needs_servers_topics_and_a_deserializer() -> None:
    with pytest.raises(ValueError, match=r"bootstrap.servers is required .* set_bootstrap_servers"):
        KafkaSource.builder().set_topics("a").set_value_only_deserializer(SimpleStringSchema()).build()
    with pytest.raises(ValueError, match=r"no topics to read: give set_topics"):
        KafkaSource.builder().set_bootstrap_servers("h:1").set_value_only_deserializer(SimpleStringSchema()).build()
    with pytest.raises(ValueError, match=r"no deserializer: give set_value_only_deserializer"):
        KafkaSource.builder().set_bootstrap_servers("h:1").set_topics("a").build()


def test_a_source_reads_topics_a_pattern_or_partitions_not_two_of_them() -> None:
    with pytest.raises(ValueError, match="cannot read a topic pattern: the source reads topics already"):
        KafkaSource.builder().set_topics("a").set_topic_pattern("a.*")
    with pytest.raises(ValueError, match="cannot read partitions: the source reads a topic pattern already"):
        KafkaSource.builder().set_topic_pattern("a.*").set_partitions({KafkaTopicPartition("a", 0)})
    with pytest.raises(ValueError, match="not a regular expression"):
        KafkaSource.builder().set_topic_pattern("(")
    with pytest.raises(ValueError, match="one or more topic names"):
        KafkaSource.builder().set_topics()
    with pytest.raises(ValueError, match="a partition is an int >= 0"):
        KafkaTopicPartition("a", -1)


def test_committed_offsets_need_a_group_id() -> None:
    builder = source_builder().set_starting_offsets(KafkaOffsetsInitializer.committed_offsets())  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"group.id is required when using committed offsets as the starting offsets"):
        builder.build()
    bounded = source_builder().set_bounded(KafkaOffsetsInitializer.committed_offsets())  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="as the stopping offsets"):
        bounded.build()
    assert builder.set_group_id("g").build().group_id == "g"
    auto = source_builder().set_property("enable.auto.commit", "true")  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"group.id is required when offset commit is enabled"):
        auto.build()


def test_offsets_initializers_refuse_what_kafka_cannot_read() -> None:
    with pytest.raises(ValueError, match="epoch milliseconds >= 0"):
        KafkaOffsetsInitializer.timestamp(-1)
    with pytest.raises(ValueError, match="the offset of a-0 must be an int >= 0"):
        KafkaOffsetsInitializer.offsets({KafkaTopicPartition("a", 0): -5})
    with pytest.raises(ValueError, match="per KafkaTopicPartition"):
        KafkaOffsetsInitializer.offsets({("a", 0): 1})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="the starting offsets are a KafkaOffsetsInitializer"):
        KafkaSource.builder().set_starting_offsets("earliest")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="the stopping offsets are a KafkaOffsetsInitializer"):
        KafkaSource.builder().set_bounded(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="offset reset strategy"):
        KafkaOffsetsInitializer.committed_offsets("EARLIEST")  # type: ignore[arg-type]


def test_offsets_initializers_resolve_within_what_a_partition_holds() -> None:
    a0, a1 = KafkaTopicPartition("a", 0), KafkaTopicPartition("a", 1)
    bounds = {a0: (2, 10), a1: (0, 5)}.__getitem__
    by_time = lambda parts, ts: {a0: 7, a1: None}  # noqa: E731
    committed = lambda parts: {a0: 4, a1: None}  # noqa: E731

    def resolve(initializer: KafkaOffsetsInitializer) -> dict[KafkaTopicPartition, int]:
        return initializer.resolve([a0, a1], bounds, by_time, committed)

    assert resolve(KafkaOffsetsInitializer.earliest()) == {a0: 2, a1: 0}
    assert resolve(KafkaOffsetsInitializer.latest()) == {a0: 10, a1: 5}
    assert resolve(KafkaOffsetsInitializer.timestamp(1)) == {a0: 7, a1: 5}
    specified = KafkaOffsetsInitializer.offsets({a0: 1, a1: 3}, KafkaOffsetResetStrategy.LATEST)
    assert resolve(specified) == {a0: 10, a1: 3}
    assert resolve(KafkaOffsetsInitializer.committed_offsets(KafkaOffsetResetStrategy.EARLIEST)) == {a0: 4, a1: 0}
    with pytest.raises(
        LookupError, match="partition a-1 has no committed offset and the offset reset strategy is NONE"
    ):
        resolve(KafkaOffsetsInitializer.committed_offsets())


def test_a_sink_needs_servers_a_serializer_and_for_exactly_once_a_prefix() -> None:
    with pytest.raises(ValueError, match="bootstrap servers are required"):
        KafkaSink.builder().set_record_serializer(serializer()).build()
    with pytest.raises(ValueError, match="a record serializer is required"):
        KafkaSink.builder().set_bootstrap_servers("h:1").build()
    exactly_once = (
        KafkaSink.builder()
        .set_bootstrap_servers("h:1")
        .set_record_serializer(serializer())
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
    )
    with pytest.raises(ValueError, match="EXACTLY_ONCE delivery guarantee requires a transactional id prefix"):
        exactly_once.build()
    assert exactly_once.set_transactional_id_prefix("job-1").build().transactional_id_prefix == "job-1"
    with pytest.raises(ValueError, match="not be longer than 6400 bytes"):
        KafkaSink.builder().set_transactional_id_prefix("x" * 6401)
    with pytest.raises(ValueError, match="set_transactional_id_prefix"):
        KafkaSink.builder().set_property("transactional.id", "mine")
    with pytest.raises(ValueError, match=r"DeliveryGuarantee\.NONE, AT_LEAST_ONCE or EXACTLY_ONCE"):
        KafkaSink.builder().set_delivery_guarantee("EXACTLY_ONCE")  # type: ignore[arg-type]


def test_a_record_serializer_needs_one_topic_and_a_value_schema() -> None:
    with pytest.raises(ValueError, match="no topic is set"):
        KafkaRecordSerializationSchema.builder().set_value_serialization_schema(SimpleStringSchema()).build()
    with pytest.raises(ValueError, match="no value serialization schema is set"):
        KafkaRecordSerializationSchema.builder().set_topic("a").build()
    with pytest.raises(ValueError, match="the topic is set already"):
        KafkaRecordSerializationSchema.builder().set_topic("a").set_topic_selector(lambda v: "b")
    with pytest.raises(ValueError, match="value serialization schema is set already"):
        (
            KafkaRecordSerializationSchema.builder()
            .set_value_serialization_schema(SimpleStringSchema())
            .set_value_serialization_schema(SimpleStringSchema())
        )
    with pytest.raises(TypeError, match="must be a SerializationSchema"):
        KafkaRecordSerializationSchema.builder().set_key_serialization_schema("utf-8")  # type: ignore[arg-type]
    selected = (
        KafkaRecordSerializationSchema.builder()
        .set_topic_selector(lambda v: f"t-{v[0]}")
        .set_key_serialization_schema(SimpleStringSchema())
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )
    record = selected.serialize("abc", 5)
    assert (record.topic, record.key, record.value, record.timestamp) == ("t-a", b"abc", b"abc", 5)
    assert selected.serialize("x", None).timestamp is None


def test_secrets_never_show_in_reprs() -> None:
    source = (
        source_builder()
        .set_properties(  # type: ignore[attr-defined]
            {
                "security.protocol": "SASL_SSL",
                "sasl.password": "hunter2",
                "ssl.key.password": "s3cret",
                "sasl.jaas.config": 'org.Plain required username="u" password="p4ss";',
            }
        )
        .build()
    )
    sink = KafkaSink.builder().set_bootstrap_servers("h:1").set_record_serializer(serializer())
    sink = sink.set_property("sasl.password", "hunter2").set_property("sasl.oauthbearer.client.secret", "tok").build()
    shown = repr(source) + repr(sink)
    for secret in ("hunter2", "s3cret", "p4ss", "tok"):
        assert secret not in shown
    assert "'sasl.password': '******'" in shown and "'security.protocol': 'SASL_SSL'" in shown


def test_secrets_never_show_in_plans_or_client_errors() -> None:
    from panes.connectors.kafka.properties import scrubbed
    from panes.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment("local")
    secret = source_builder().set_property("sasl.password", "hunter2").build()  # type: ignore[attr-defined]
    env.from_source(secret, None, "k").print()
    assert "hunter2" not in env.explain() and "'sasl.password': '******'" in env.explain()
    told = 'Invalid value "hunter2" for configuration property "sasl.password"'
    assert scrubbed(told, {"sasl.password": "hunter2", "acks": "all"}) == told.replace("hunter2", "******")


def test_a_source_pickles_for_snapshots() -> None:
    source = source_builder().set_bounded(KafkaOffsetsInitializer.latest()).build()  # type: ignore[attr-defined]
    assert repr(pickle.loads(pickle.dumps(source))) == repr(source)


def test_string_and_byte_schemas() -> None:
    assert SimpleStringSchema().deserialize("héllo".encode()) == "héllo"
    assert SimpleStringSchema("ISO-8859-1").serialize("é") == b"\xe9"
    with pytest.raises(UnicodeDecodeError):
        SimpleStringSchema().deserialize(b"\xff")
    with pytest.raises(TypeError, match="writes strings, not int"):
        SimpleStringSchema().serialize(3)
    with pytest.raises(LookupError, match="unknown charset 'klingon'"):
        SimpleStringSchema("klingon")
    assert (
        ByteArraySchema().deserialize(b"\x00\x01") == b"\x00\x01" == ByteArraySchema().serialize(bytearray(b"\x00\x01"))
    )


def test_json_rows() -> None:
    reading = JsonRowDeserializationSchema.builder().type_info(ROW).build()
    assert reading.deserialize(b'{"user": "a", "n": 3, "ok": true, "extra": 1}') == Row(user="a", n=3, ok=True)
    assert reading.deserialize(b'{\n  "user": "b"\n}') == Row(user="b", n=None, ok=None)
    with pytest.raises(ValueError, match="field 'n': 'x' is not a BIGINT"):
        reading.deserialize(b'{"user": "a", "n": "x"}')
    with pytest.raises(ValueError, match="not JSON"):
        reading.deserialize(b"{nope")
    strict = JsonRowDeserializationSchema.builder().type_info(ROW).fail_on_missing_field().build()
    with pytest.raises(ValueError, match="field 'n' is missing"):
        strict.deserialize(b'{"user": "a", "ok": false}')
    lenient = JsonRowDeserializationSchema.builder().type_info(ROW).ignore_parse_errors().build()
    assert lenient.deserialize(b"[1, 2]") is None
    writing = JsonRowSerializationSchema.builder().with_type_info(ROW).build()
    assert writing.serialize(Row(user="a", n=3, ok=True)) == b'{"user":"a","n":3,"ok":true}'
    assert writing.serialize({"user": "é", "n": None, "ok": False}) == '{"user":"é","n":null,"ok":false}'.encode()
    with pytest.raises(TypeError, match="needs the row type"):
        JsonRowSerializationSchema.builder().build()
    with pytest.raises(TypeError, match="needs the row type"):
        CsvRowDeserializationSchema.Builder(None)
    with pytest.raises(ValueError, match="rows of named fields"):
        JsonRowDeserializationSchema.builder().type_info(Types.STRING()).build()
    timed = Types.ROW_NAMED(["at"], [Types.SQL_TIMESTAMP()])
    at = dt.datetime(2026, 1, 2, 3, 4, 5)
    timed_json = JsonRowSerializationSchema.builder().with_type_info(timed).build().serialize(Row(at=at))
    assert timed_json == b'{"at":"2026-01-02T03:04:05"}'
    assert JsonRowDeserializationSchema.builder().type_info(timed).build().deserialize(timed_json) == Row(at=at)


def test_csv_rows() -> None:
    reading = CsvRowDeserializationSchema.Builder(ROW).build()
    assert reading.deserialize(b"a,3,true\n") == Row(user="a", n=3, ok=True)
    assert reading.deserialize(b'"x,y",,false') == Row(user="x,y", n=None, ok=False)
    with pytest.raises(ValueError, match="2 values for 3 fields"):
        reading.deserialize(b"a,1")
    with pytest.raises(ValueError, match="field 'ok': 'maybe' is not a BOOLEAN"):
        reading.deserialize(b"a,1,maybe")
    piped = CsvRowDeserializationSchema.Builder(ROW).set_field_delimiter("|").set_null_literal("NULL").build()
    assert piped.deserialize(b"NULL|7|false") == Row(user=None, n=7, ok=False)
    commented = CsvRowDeserializationSchema.Builder(ROW).set_allow_comments(True).set_ignore_parse_errors(True).build()
    assert commented.deserialize(b"# a comment") is None and commented.deserialize(b"a,x,true") is None
    writing = CsvRowSerializationSchema.Builder(ROW).build()
    assert writing.serialize(Row(user="x,y", n=None, ok=False)) == b'"x,y",,false\n'
    semi = CsvRowSerializationSchema.Builder(ROW).set_field_delimiter(";").set_line_delimiter("").build()
    assert semi.serialize(("a", 1, True)) == b"a;1;true"
    with pytest.raises(ValueError, match="single character"):
        CsvRowSerializationSchema.Builder(ROW).set_field_delimiter("::")


def test_record_deserializers() -> None:
    with pytest.raises(TypeError, match="must be a DeserializationSchema"):
        KafkaRecordDeserializationSchema.value_only("utf-8")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="KafkaRecordDeserializationSchema"):
        KafkaSource.builder().set_deserializer(42)  # type: ignore[arg-type]


def test_the_client_is_imported_only_when_a_job_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    probe = "import sys, panes.connectors.kafka, panes.common; print('confluent_kafka' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "False\n"
    from panes.datastream import StreamExecutionEnvironment

    monkeypatch.setitem(sys.modules, "confluent_kafka", None)  # as if it were not installed
    env = StreamExecutionEnvironment.get_execution_environment("local")
    bounded = source_builder().set_bounded(KafkaOffsetsInitializer.latest()).build()  # type: ignore[attr-defined]
    env.from_source(bounded, None, "clicks").print()
    with pytest.raises(ImportError, match=r"pip install 'panes\[kafka\]'"):
        env.execute()
