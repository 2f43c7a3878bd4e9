"""Jobs shaped like Flink's PyFlink Kafka examples (``pyflink/examples/datastream/connectors/kafka_*.py``),
written as PyFlink users write them (only the imports are panes'), against the test broker: rows written and read
back as Avro, JSON and CSV of an unnamed ``Types.ROW``, raw bytes, a record's key and value taken from a row's
byte fields (``RowFieldExtractorSchema``), ``env.add_jars`` of a connector jar, and a read without an end that
``$PANES_MAX_RECORDS`` ends on the local runner. The Spark variants run the same shapes with Spark tasks writing
and reading. ``tools/pyflink_kafka_examples.py`` runs Flink's own examples, unchanged but for their imports."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from panes.common import ByteArraySchema, Row, Types, WatermarkStrategy
from panes.common.serialization import RowFieldExtractorSchema
from panes.connectors.kafka import (
    DeliveryGuarantee,
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)
from panes.datastream import StreamExecutionEnvironment
from panes.datastream.formats.avro import AvroRowDeserializationSchema, AvroRowSerializationSchema
from panes.datastream.formats.csv import CsvRowDeserializationSchema, CsvRowSerializationSchema
from panes.datastream.formats.json import JsonRowDeserializationSchema, JsonRowSerializationSchema
from panes.datastream.sinks import ListSink
from tests.kafka.conftest import Broker, read_topic

AVRO_SCHEMA = """
    {
        "type": "record",
        "name": "TestRecord",
        "fields": [
            {"name": "id", "type": "int"},
            {"name": "name", "type": "string"}
        ]
    }"""
ROWS = [(1, "hi"), (2, "hello"), (3, "hi"), (6, "hello"), (6, "hello")]
ROW_TYPE = Types.ROW([Types.INT(), Types.STRING()])


def write_to_kafka(env: StreamExecutionEnvironment, bootstrap: str, topic: str, schema: Any) -> None:
    """The examples' ``write_to_kafka``: a collection of rows into ``topic`` through ``schema``."""
    ds = env.from_collection(ROWS, type_info=ROW_TYPE)
    record_serializer = (
        KafkaRecordSerializationSchema.builder().set_topic(topic).set_value_serialization_schema(schema).build()
    )
    kafka_sink = (
        KafkaSink.builder()
        .set_record_serializer(record_serializer)
        .set_bootstrap_servers(bootstrap)
        .set_property("group.id", "test_group")
        .build()
    )
    ds.sink_to(kafka_sink)
    env.execute()


def kafka_source(bootstrap: str, topic: str, schema: Any, bounded: bool = True) -> KafkaSource:
    """The examples' source (``bounded``: with ``set_bounded(latest())``, which the examples leave out)."""
    builder = (
        KafkaSource.builder()
        .set_topics(topic)
        .set_value_only_deserializer(schema)
        .set_properties({"bootstrap.servers": bootstrap, "group.id": "test_group_1"})
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
    )
    if bounded:
        builder.set_bounded(KafkaOffsetsInitializer.latest())
    return builder.build()


def read_from_kafka(env: StreamExecutionEnvironment, source: KafkaSource) -> list[Any]:
    """The examples' ``read_from_kafka``, into a list sink instead of ``print``."""
    out = ListSink()
    env.from_source(source, watermark_strategy=WatermarkStrategy.no_watermarks(), source_name="kafka source").sink_to(
        out
    )
    env.execute()
    return [record.value for record in out.records]


FORMATS: dict[str, tuple[Callable[[], Any], Callable[[], Any], Callable[[int, str], bytes]]] = {
    "avro": (
        lambda: AvroRowSerializationSchema(avro_schema_string=AVRO_SCHEMA),
        lambda: AvroRowDeserializationSchema(avro_schema_string=AVRO_SCHEMA),
        # Avro's binary encoding: the int zig-zag, the string's length zig-zag, its bytes
        lambda n, s: bytes([n * 2, len(s) * 2]) + s.encode(),
    ),
    "json": (
        lambda: JsonRowSerializationSchema.Builder().with_type_info(ROW_TYPE).build(),
        lambda: JsonRowDeserializationSchema.Builder().type_info(ROW_TYPE).build(),
        # an unnamed row's fields are f0, f1, ... (PyFlink's names), as Flink writes them
        lambda n, s: json.dumps({"f0": n, "f1": s}, separators=(",", ":")).encode(),
    ),
    "csv": (
        lambda: CsvRowSerializationSchema.Builder(ROW_TYPE).build(),
        lambda: CsvRowDeserializationSchema.Builder(ROW_TYPE).build(),
        lambda n, s: f"{n},{s}\n".encode(),
    ),
}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_rows_go_through_a_topic_as_the_examples_write_and_read_them(
    kafka_broker: Broker, topic: str, name: str
) -> None:
    writer, reader, encoded = FORMATS[name]
    env = StreamExecutionEnvironment.get_execution_environment("local")
    env.add_jars("file:///path/to/flink-sql-avro-1.15.0.jar", "file:///path/to/flink-sql-connector-kafka-1.15.0.jar")
    write_to_kafka(env, kafka_broker.bootstrap, topic, writer())
    assert [m.value() for m in read_topic(kafka_broker.bootstrap, topic, len(ROWS))] == [encoded(*r) for r in ROWS]
    values = read_from_kafka(env, kafka_source(kafka_broker.bootstrap, topic, reader()))
    assert [tuple(value) for value in values] == ROWS
    assert all(isinstance(value, Row) for value in values)
    assert env.jars == [
        "file:///path/to/flink-sql-avro-1.15.0.jar",
        "file:///path/to/flink-sql-connector-kafka-1.15.0.jar",
    ]


def test_a_read_without_an_end_stops_after_panes_max_records(
    kafka_broker: Broker, topic: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As Flink's examples read: no ``set_bounded``, printed; the script's environment comes from
    ``get_execution_environment()``, which takes ``$PANES_MAX_RECORDS`` on the local runner."""
    monkeypatch.delenv("PANES_RUNNER", raising=False)
    monkeypatch.setenv("PANES_MAX_RECORDS", str(len(ROWS)))
    env = StreamExecutionEnvironment.get_execution_environment()
    write_to_kafka(env, kafka_broker.bootstrap, topic, FORMATS["avro"][0]())
    capsys.readouterr()
    source = kafka_source(kafka_broker.bootstrap, topic, FORMATS["avro"][1](), bounded=False)
    env.from_source(source, watermark_strategy=WatermarkStrategy.no_watermarks(), source_name="kafka source").print()
    result = env.execute()
    assert capsys.readouterr().out.splitlines() == [f"+I[{n},{s}]" for n, s in ROWS]
    assert result.details["records_read"] == len(ROWS)


def test_without_panes_max_records_a_read_without_an_end_says_how_to_end_it(
    kafka_broker: Broker, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PANES_RUNNER", raising=False)
    monkeypatch.delenv("PANES_MAX_RECORDS", raising=False)
    env = StreamExecutionEnvironment.get_execution_environment()
    source = kafka_source(kafka_broker.bootstrap, topic, ByteArraySchema(), bounded=False)
    env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka source").print()
    with pytest.raises(ValueError, match=r"\$PANES_MAX_RECORDS"):
        env.execute()


def test_bytes_go_through_a_topic_as_they_are(kafka_broker: Broker, topic: str) -> None:
    """The byte-array example: rows of one byte field, mapped to the bytes, written and read with
    ``ByteArraySchema``."""
    data = [(json.dumps({"id": i, "country": c}).encode("utf-8"),) for i, c in ((1, "USA"), (2, "Canada"))]
    env = StreamExecutionEnvironment.get_execution_environment("local")
    ds = env.from_collection(data, type_info=Types.ROW([Types.PRIMITIVE_ARRAY(Types.BYTE())]))
    ds = ds.map(lambda x: x[0], output_type=Types.PRIMITIVE_ARRAY(Types.BYTE()))
    serializer = (
        KafkaRecordSerializationSchema.builder().set_topic(topic).set_value_serialization_schema(ByteArraySchema())
    )
    ds.sink_to(
        KafkaSink.builder()
        .set_record_serializer(serializer.build())
        .set_bootstrap_servers(kafka_broker.bootstrap)
        .build()
    )
    env.execute()
    values = read_from_kafka(env, kafka_source(kafka_broker.bootstrap, topic, ByteArraySchema()))
    assert [value.decode("utf-8") for value in values] == [row[0].decode("utf-8") for row in data]


def test_a_records_key_and_value_are_fields_of_the_row(kafka_broker: Broker, new_topic: Callable[..., str]) -> None:
    """The row field extractor example: key and value bytes from two fields, on a topic of three partitions."""
    topic = new_topic(3)
    events = [
        ("user-001", {"item": "laptop"}),
        ("user-002", {"item": "phone"}),
        ("user-001", {"item": "mouse"}),
        ("user-003", {"item": "keyboard"}),
        ("user-000", {"item": "cable"}),
        ("user-005", {"item": "desk"}),
        ("user-008", {"item": "lamp"}),
    ]
    env = StreamExecutionEnvironment.get_execution_environment("local")
    env.set_parallelism(1)
    rows = [Row(user.encode("utf-8"), json.dumps(event).encode("utf-8")) for user, event in events]
    byte_rows = Types.ROW([Types.PRIMITIVE_ARRAY(Types.BYTE()), Types.PRIMITIVE_ARRAY(Types.BYTE())])
    ds = env.from_collection(rows, type_info=byte_rows).map(lambda row: row, output_type=byte_rows)
    kafka_sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(kafka_broker.bootstrap)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(topic)
            .set_key_serialization_schema(RowFieldExtractorSchema(0))
            .set_value_serialization_schema(RowFieldExtractorSchema(1))
            .build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.AT_LEAST_ONCE)
        .build()
    )
    ds.sink_to(kafka_sink)
    env.execute("Kafka RowFieldExtractorSchema Example")
    found = read_topic(kafka_broker.bootstrap, topic, len(events))
    assert sorted((m.key(), m.value()) for m in found) == sorted(
        (user.encode(), json.dumps(event).encode()) for user, event in events
    )
    # each key in the partition Kafka's Java producer (Flink's sink) sends it to, by the murmur2 hash of the key:
    # Java's Utils.toPositive(Utils.murmur2(key)) % 3 (kafka-clients 4.4; PyFlink 2.3 wrote Flink's example, keys
    # 001-003, there too); librdkafka's own default partitioner sends 000, 005 and 008 to partitions 0, 0 and 2
    assert {m.key(): m.partition() for m in found} == {
        b"user-000": 1,
        b"user-001": 2,
        b"user-002": 0,
        b"user-003": 2,
        b"user-005": 2,
        b"user-008": 0,
    }
    assert [json.loads(m.value())["item"] for m in found if m.key() == b"user-001"] == ["laptop", "mouse"]


# -- no broker ------------------------------------------


def test_row_field_extractor_schema_takes_the_bytes_of_one_field() -> None:
    schema = RowFieldExtractorSchema(1)
    assert schema.serialize(Row(b"k", b"v")) == b"v"
    assert schema.serialize((b"k", bytearray(b"w"))) == b"w"
    assert schema.serialize(Row(b"k", None)) == b""
    assert schema.serialize(None) == b""
    with pytest.raises(TypeError, match="must be bytes"):
        schema.serialize(Row(b"k", "text"))
    with pytest.raises(IndexError, match="out of range"):
        schema.serialize(Row(b"k"))
    with pytest.raises(TypeError, match="a field of a Row"):
        schema.serialize("k,v")
    with pytest.raises(ValueError, match="non-negative"):
        RowFieldExtractorSchema(-1)


def test_avro_rows_of_every_kind_of_field_round_trip() -> None:
    schema = json.dumps(
        {
            "type": "record",
            "name": "Order",
            "namespace": "shop",
            "fields": [
                {"name": "id", "type": "long"},
                {"name": "note", "type": ["null", "string"]},
                {"name": "day", "type": {"type": "int", "logicalType": "date"}},
                {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
                {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
                {"name": "tags", "type": {"type": "array", "items": "string"}},
                {"name": "stock", "type": {"type": "map", "values": "double"}},
                {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "PAID"]}},
                {
                    "name": "buyer",
                    "type": {"type": "record", "name": "Buyer", "fields": [{"name": "ok", "type": "boolean"}]},
                },
            ],
        }
    )
    writer = AvroRowSerializationSchema(avro_schema_string=schema)
    reader = AvroRowDeserializationSchema(avro_schema_string=schema)
    value = (
        -3,
        None,
        dt.date(2024, 1, 2),
        dt.datetime(2024, 1, 2, 3, 4, 5, 6000),
        Decimal("-12.34"),
        ["a", "b"],
        {"x": 1.5},
        "PAID",
        Row(ok=True),
    )
    encoded = writer.serialize(value)
    assert encoded[:2] == b"\x05\x00"  # -3 zig-zag, then the union's null branch
    back = reader.deserialize(encoded)
    assert tuple(back)[:-1] == value[:-1] and back.as_dict()["buyer"].as_dict() == {"ok": True}
    assert reader.get_produced_type() is not None
    assert reader.get_produced_type().ddl().startswith("id BIGINT, note STRING, day DATE")
    with pytest.raises(ValueError, match="after it"):
        reader.deserialize(encoded + b"\x00")
    with pytest.raises(ValueError, match="ends at byte"):
        reader.deserialize(encoded[:5])
    with pytest.raises(TypeError, match="field 'id'"):
        writer.serialize(("x", None, dt.date(2024, 1, 2), dt.datetime(2024, 1, 2), Decimal(0), [], {}, "NEW", (True,)))


def test_avro_schemas_refuse_what_panes_cannot_read() -> None:
    with pytest.raises(TypeError, match="record_class or avro_schema_string"):
        AvroRowSerializationSchema()
    with pytest.raises(ValueError, match="Java class"):
        AvroRowDeserializationSchema(record_class="com.example.Order")
    union = '{"type": "record", "name": "R", "fields": [{"name": "v", "type": ["int", "string", "int"]}]}'
    with pytest.raises(ValueError, match="two branches of the type 'int'"):
        AvroRowDeserializationSchema(avro_schema_string=union)
    looped = '{"type": "record", "name": "L", "fields": [{"name": "next", "type": "L"}]}'
    with pytest.raises(ValueError, match="no finite value"):
        AvroRowDeserializationSchema(avro_schema_string=looped)
    with pytest.raises(ValueError, match="not JSON"):
        AvroRowSerializationSchema(avro_schema_string="{record")


def test_add_jars_keeps_the_paths_and_checks_them(monkeypatch: pytest.MonkeyPatch) -> None:
    env = StreamExecutionEnvironment.get_execution_environment("local")
    env.add_jars("file:///a.jar")
    env.add_classpaths("file:///b/")
    assert (env.jars, env.classpaths) == (["file:///a.jar"], ["file:///b/"])
    with pytest.raises(TypeError, match="strings"):
        env.add_jars(3)  # type: ignore[arg-type]
    monkeypatch.delenv("PANES_RUNNER", raising=False)
    monkeypatch.setenv("PANES_MAX_RECORDS", "none")
    with pytest.raises(ValueError, match="PANES_MAX_RECORDS"):
        StreamExecutionEnvironment.get_execution_environment()


# -- on Spark ------------------------------------------


@pytest.mark.spark
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_spark_tasks_write_and_read_rows_as_the_examples_do(
    kafka_broker: Broker, topic: str, name: str, spark: Any
) -> None:
    from panes.spark import SparkRunner

    writer, reader, encoded = FORMATS[name]
    env = StreamExecutionEnvironment.get_execution_environment(SparkRunner(spark))
    env.add_jars("file:///path/to/flink-sql-connector-kafka-1.15.0.jar")
    write_to_kafka(env, kafka_broker.bootstrap, topic, writer())
    assert sorted(m.value() for m in read_topic(kafka_broker.bootstrap, topic, len(ROWS))) == sorted(
        encoded(*r) for r in ROWS
    )
    values = read_from_kafka(env, kafka_source(kafka_broker.bootstrap, topic, reader()))
    assert sorted(tuple(value) for value in values) == sorted(ROWS)


@pytest.mark.spark
def test_spark_tasks_write_keys_and_values_from_row_fields(
    kafka_broker: Broker, new_topic: Callable[..., str], spark: Any
) -> None:
    from panes.spark import SparkRunner

    topic = new_topic(3)
    rows = [Row(f"user-{i % 2}".encode(), f"event-{i}".encode()) for i in range(6)]
    byte_rows = Types.ROW([Types.PRIMITIVE_ARRAY(Types.BYTE()), Types.PRIMITIVE_ARRAY(Types.BYTE())])
    env = StreamExecutionEnvironment.get_execution_environment(SparkRunner(spark))
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic(topic)
        .set_key_serialization_schema(RowFieldExtractorSchema(0))
        .set_value_serialization_schema(RowFieldExtractorSchema(1))
        .build()
    )
    env.from_collection(rows, type_info=byte_rows).sink_to(
        KafkaSink.builder().set_bootstrap_servers(kafka_broker.bootstrap).set_record_serializer(serializer).build()
    )
    env.execute()
    found = read_topic(kafka_broker.bootstrap, topic, len(rows))
    assert sorted((m.key(), m.value()) for m in found) == sorted((bytes(r[0]), bytes(r[1])) for r in rows)
    assert all(len({m.partition() for m in found if m.key() == key}) == 1 for key in (b"user-0", b"user-1"))
