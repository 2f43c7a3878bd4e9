"""The Kafka source and sink on the local runner, against a real broker (``scripts/kafka.sh``): what a job writes
is what a job reads back, with each record's metadata and timestamp, from the offsets asked for, up to the
stopping offsets; bad records go to the error output; an unreachable cluster or a missing topic ends the job with
a message saying so; an exactly-once sink's records are visible to a read_committed reader only once committed."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import NewTopic

from panes.common import SimpleStringSchema, Types, WatermarkStrategy
from panes.connectors.kafka import (
    ConsumerRecord,
    DeliveryGuarantee,
    KafkaConnectorError,
    KafkaOffsetsInitializer,
    KafkaRecordDeserializationSchema,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
    KafkaTopicPartition,
)
from panes.datastream import OutputTag, StreamExecutionEnvironment
from panes.datastream.formats.csv import CsvRowDeserializationSchema, CsvRowSerializationSchema
from panes.datastream.formats.json import JsonRowDeserializationSchema, JsonRowSerializationSchema
from panes.datastream.sinks import ListSink
from panes.errors import BadRecordError, ErrorRecord
from panes.local import LocalRunner
from panes.types import Row
from panes.windowing import TumblingEventTimeWindows
from tests.kafka.conftest import SCRIPT, Broker, closed_port, produce, read_topic

ROW = Types.ROW_NAMED(["user", "n"], [Types.STRING(), Types.LONG()])


def source(bootstrap: str, topic: str, schema: Any = None, **settings: Any) -> KafkaSource:
    """A bounded source of ``topic`` (stopping at its end when the job starts) unless ``settings`` say otherwise."""
    builder = KafkaSource.builder().set_bootstrap_servers(bootstrap).set_topics(topic)
    builder.set_value_only_deserializer(schema or SimpleStringSchema())
    builder.set_starting_offsets(settings.get("start", KafkaOffsetsInitializer.earliest()))
    stop = settings.get("stop", KafkaOffsetsInitializer.latest())
    if stop is not None:
        builder.set_bounded(stop)
    for key, value in settings.get("properties", {}).items():
        builder.set_property(key, value)
    return builder.build()


def sink(bootstrap: str, topic: str, schema: Any = None, **settings: Any) -> KafkaSink:
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic(topic)
        .set_value_serialization_schema(schema or SimpleStringSchema())
        .build()
    )
    builder = KafkaSink.builder().set_bootstrap_servers(bootstrap).set_record_serializer(serializer)
    builder.set_delivery_guarantee(settings.get("guarantee", DeliveryGuarantee.AT_LEAST_ONCE))
    if "prefix" in settings:
        builder.set_transactional_id_prefix(settings["prefix"])
    for key, value in settings.get("properties", {}).items():
        builder.set_property(key, value)
    return builder.build()


def read_all(kafka_source: KafkaSource, watermarks: Any = None) -> list[tuple[Any, int | None]]:
    """Every element a job reads from ``kafka_source``, with its timestamp."""
    env = StreamExecutionEnvironment.get_execution_environment("local")
    out = ListSink()
    env.from_source(kafka_source, watermarks, "kafka").sink_to(out)
    env.execute()
    return [(record.value, record.timestamp) for record in out.records]


def test_strings_round_trip_through_a_topic(kafka_broker: Broker, topic: str) -> None:
    env = StreamExecutionEnvironment.get_execution_environment("local")
    env.from_collection(["alpha", "béta", "gamma"]).sink_to(sink(kafka_broker.bootstrap, topic))
    env.execute()
    assert [value for value, _ in read_all(source(kafka_broker.bootstrap, topic))] == ["alpha", "béta", "gamma"]


@pytest.mark.parametrize(
    ("writing", "reading", "wire"),
    [
        (
            JsonRowSerializationSchema.builder().with_type_info(ROW).build(),
            JsonRowDeserializationSchema.builder().type_info(ROW).build(),
            [b'{"user":"a","n":1}', b'{"user":"b,c","n":null}'],
        ),
        (
            CsvRowSerializationSchema.Builder(ROW).build(),
            CsvRowDeserializationSchema.Builder(ROW).build(),
            [b"a,1\n", b'"b,c",\n'],
        ),
    ],
    ids=["json", "csv"],
)
def test_rows_round_trip_through_a_topic(
    kafka_broker: Broker, topic: str, writing: Any, reading: Any, wire: list[bytes]
) -> None:
    env = StreamExecutionEnvironment.get_execution_environment("local")
    rows = [Row(user="a", n=1), Row(user="b,c", n=None)]
    env.from_collection(rows, type_info=ROW).sink_to(sink(kafka_broker.bootstrap, topic, writing))
    env.execute()
    assert [m.value() for m in read_topic(kafka_broker.bootstrap, topic, 2)] == wire
    assert [value for value, _ in read_all(source(kafka_broker.bootstrap, topic, reading))] == rows


def test_the_whole_record_with_its_metadata(kafka_broker: Broker, new_topic: Callable[..., str]) -> None:
    topic = new_topic(2)
    produce(
        kafka_broker.bootstrap,
        topic,
        [
            {"value": b"v0", "key": b"k0", "partition": 0, "timestamp": 1_000, "headers": [("h", b"x")]},
            {"value": b"v1", "partition": 1, "timestamp": 2_000},
            {"value": b"v2", "key": b"k2", "partition": 0, "timestamp": 3_000},
        ],
    )
    builder = KafkaSource.builder().set_bootstrap_servers(kafka_broker.bootstrap).set_topics(topic)
    deserializer = KafkaRecordDeserializationSchema.with_metadata(SimpleStringSchema(), SimpleStringSchema())
    kafka_source = builder.set_deserializer(deserializer).set_bounded(KafkaOffsetsInitializer.latest()).build()
    found = sorted(read_all(kafka_source), key=lambda e: (e[0].partition, e[0].offset))
    assert found == [
        (ConsumerRecord(topic, 0, 0, 1_000, "CreateTime", "k0", "v0", (("h", b"x"),)), 1_000),
        (ConsumerRecord(topic, 0, 1, 3_000, "CreateTime", "k2", "v2", ()), 3_000),
        (ConsumerRecord(topic, 1, 0, 2_000, "CreateTime", None, "v1", ()), 2_000),
    ]


def test_the_kafka_timestamp_is_the_event_time(kafka_broker: Broker, new_topic: Callable[..., str]) -> None:
    topic = new_topic(2)
    stamps = [100, 900, 1_200, 1_999, 2_500, 400]
    produce(
        kafka_broker.bootstrap,
        topic,
        [{"value": f"e{i}".encode(), "partition": i % 2, "timestamp": t} for i, t in enumerate(stamps)],
    )
    env = StreamExecutionEnvironment.get_execution_environment("local")
    kafka_source = source(kafka_broker.bootstrap, topic)
    out = ListSink()
    (
        env.from_source(kafka_source, WatermarkStrategy.for_bounded_out_of_orderness(5_000), "kafka")
        .map(lambda value: 1)
        .key_by(lambda one: "all")
        .window(TumblingEventTimeWindows.of(1_000))
        .reduce(lambda a, b: a + b, lambda key, window, counts: [(window.start, next(iter(counts)))])
        .sink_to(out)
    )
    env.execute()
    assert sorted(out.values) == [(0, 3), (1_000, 2), (2_000, 1)]


def test_a_bounded_source_stops_at_its_stopping_offsets(kafka_broker: Broker, new_topic: Callable[..., str]) -> None:
    topic = new_topic(2)
    produce(
        kafka_broker.bootstrap,
        topic,
        [{"value": f"p{i % 2}-{i // 2}".encode(), "partition": i % 2, "timestamp": 10 * i + 10} for i in range(8)],
    )
    p0, p1 = KafkaTopicPartition(topic, 0), KafkaTopicPartition(topic, 1)
    stop = KafkaOffsetsInitializer.offsets({p0: 2, p1: 3})
    assert sorted(v for v, _ in read_all(source(kafka_broker.bootstrap, topic, stop=stop))) == [
        "p0-0",
        "p0-1",
        "p1-0",
        "p1-1",
        "p1-2",
    ]
    by_time = KafkaOffsetsInitializer.timestamp(50)  # before 50 ms: offsets 0 and 1 of each partition
    assert sorted(v for v, _ in read_all(source(kafka_broker.bootstrap, topic, stop=by_time))) == [
        "p0-0",
        "p0-1",
        "p1-0",
        "p1-1",
    ]
    only_one = KafkaSource.builder().set_bootstrap_servers(kafka_broker.bootstrap).set_partitions({p1})
    only_one.set_value_only_deserializer(SimpleStringSchema()).set_bounded(KafkaOffsetsInitializer.latest())
    assert [v for v, _ in read_all(only_one.build())] == ["p1-0", "p1-1", "p1-2", "p1-3"]


def test_starting_offsets(kafka_broker: Broker, topic: str) -> None:
    produce(kafka_broker.bootstrap, topic, [{"value": f"r{i}".encode(), "timestamp": 1_000 * i + 1} for i in range(5)])

    def values(start: KafkaOffsetsInitializer) -> list[str]:
        return [v for v, _ in read_all(source(kafka_broker.bootstrap, topic, start=start))]

    assert values(KafkaOffsetsInitializer.earliest()) == ["r0", "r1", "r2", "r3", "r4"]
    assert values(KafkaOffsetsInitializer.latest()) == []
    assert values(KafkaOffsetsInitializer.timestamp(2_500)) == ["r3", "r4"]
    assert values(KafkaOffsetsInitializer.timestamp(3_001)) == ["r3", "r4"]
    assert values(KafkaOffsetsInitializer.timestamp(99_000)) == []
    assert values(KafkaOffsetsInitializer.offsets({KafkaTopicPartition(topic, 0): 4})) == ["r4"]
    assert values(KafkaOffsetsInitializer.offsets({KafkaTopicPartition(topic, 0): 77})) == [
        "r0",
        "r1",
        "r2",
        "r3",
        "r4",
    ]


def test_an_unbounded_source_reads_what_arrives_after_it_started(kafka_broker: Broker, topic: str) -> None:
    produce(kafka_broker.bootstrap, topic, [{"value": b"before"}])
    env = StreamExecutionEnvironment.get_execution_environment("local")
    out = ListSink()
    kafka_source = source(kafka_broker.bootstrap, topic, start=KafkaOffsetsInitializer.latest(), stop=None)
    env.from_source(kafka_source, None, "kafka").sink_to(out)
    job = LocalRunner().start(env.plan(), env.config())
    try:
        assert job.step()  # the reader starts at the end of the topic: nothing to read yet
        produce(kafka_broker.bootstrap, topic, [{"value": b"after-1"}, {"value": b"after-2"}])
        assert job.run(2) == 2
    finally:
        job.close()
    assert out.values == ["after-1", "after-2"]


def test_bad_records_go_to_the_error_output_or_fail_the_job(kafka_broker: Broker, topic: str) -> None:
    produce(
        kafka_broker.bootstrap,
        topic,
        [{"value": b"good", "timestamp": 5}, {"value": b"\xff\xfe", "key": b"k", "timestamp": 6}, {"value": b"fine"}],
    )
    env = StreamExecutionEnvironment.get_execution_environment("local")
    bad = OutputTag("bad")
    out, errors = ListSink(), ListSink()
    read = env.from_source(source(kafka_broker.bootstrap, topic), None, "kafka").side_output_errors(bad)
    read.sink_to(out)
    read.get_side_output(bad).sink_to(errors)
    env.execute()
    assert out.values == ["good", "fine"]
    (error,) = errors.values
    assert isinstance(error, ErrorRecord)
    assert error.value == {
        "topic": topic,
        "partition": 0,
        "offset": 1,
        "timestamp": 6,
        "key": b"k",
        "value": b"\xff\xfe",
    }
    assert error.reason.startswith(f"the record at offset 1 of partition 0 of topic {topic!r}: UnicodeDecodeError")
    assert (error.error_type, error.operator, error.timestamp) == ("UnicodeDecodeError", "kafka", 6)
    with pytest.raises(BadRecordError, match=rf"the record at offset 1 of partition 0 of topic '{topic}' could not be"):
        read_all(source(kafka_broker.bootstrap, topic))


def test_an_unreachable_cluster_ends_the_job_saying_so() -> None:
    address = f"127.0.0.1:{closed_port()}"
    quick = {"default.api.timeout.ms": "1500", "sasl.password": "hunter2"}
    with pytest.raises(KafkaConnectorError, match=rf"cannot reach the Kafka cluster at {address} within 1.5 s") as read:
        read_all(source(address, "t", properties=quick))
    assert "hunter2" not in str(read.value)
    env = StreamExecutionEnvironment.get_execution_environment("local")
    env.from_collection(["x"]).sink_to(sink(address, "t", properties=quick))
    with pytest.raises(
        KafkaConnectorError, match=rf"KafkaSink\({address}, topic 't'\): cannot reach the Kafka cluster"
    ):
        env.execute()


def test_a_missing_topic_ends_the_job_saying_so(kafka_broker: Broker) -> None:
    with pytest.raises(KafkaConnectorError, match="topic 'no-such-topic' does not exist on the Kafka cluster at"):
        read_all(source(kafka_broker.bootstrap, "no-such-topic"))
    env = StreamExecutionEnvironment.get_execution_environment("local")
    env.from_collection(["x"]).sink_to(sink(kafka_broker.bootstrap, "no-such-topic"))
    with pytest.raises(KafkaConnectorError, match=r"topic 'no-such-topic' does not exist .*; create it first"):
        env.execute()


def test_exactly_once_records_are_visible_to_read_committed_once_committed(kafka_broker: Broker, topic: str) -> None:
    env = StreamExecutionEnvironment.get_execution_environment("local")
    exactly_once = sink(kafka_broker.bootstrap, topic, guarantee=DeliveryGuarantee.EXACTLY_ONCE, prefix=f"{topic}-job")
    env.from_collection(["a", "b", "c", "d"]).sink_to(exactly_once)
    job = LocalRunner().start(env.plan(), env.config())
    committed = {"isolation": "read_committed"}
    try:
        assert job.run(2) == 2
        assert [m.value() for m in read_topic(kafka_broker.bootstrap, topic, 2)] == [b"a", b"b"]  # written, open
        assert read_topic(kafka_broker.bootstrap, topic, 1, deadline=1.0, **committed) == []
        job.snapshot()  # commits what the sink received so far
        assert [m.value() for m in read_topic(kafka_broker.bootstrap, topic, 2, **committed)] == [b"a", b"b"]
        assert job.run() == 2
    finally:
        job.close()  # the end commits the rest
    assert [m.value() for m in read_topic(kafka_broker.bootstrap, topic, 4, **committed)] == [b"a", b"b", b"c", b"d"]


def test_a_failed_exactly_once_job_leaves_nothing_committed(kafka_broker: Broker, topic: str) -> None:
    env = StreamExecutionEnvironment.get_execution_environment("local")
    exactly_once = sink(kafka_broker.bootstrap, topic, guarantee=DeliveryGuarantee.EXACTLY_ONCE, prefix=f"{topic}-job")

    def fail_on_c(value: str) -> str:
        if value == "c":
            raise ValueError("c is refused")
        return value

    env.from_collection(["a", "b", "c"]).map(fail_on_c).sink_to(exactly_once)
    with pytest.raises(Exception, match="c is refused"):
        env.execute()
    committed_only = source(kafka_broker.bootstrap, topic, properties={"isolation.level": "read_committed"})
    assert read_all(committed_only) == []  # the aborted transaction's records are skipped


def test_a_restored_job_reads_on_after_its_snapshot(kafka_broker: Broker, new_topic: Callable[..., str]) -> None:
    topic = new_topic(2)
    produce(kafka_broker.bootstrap, topic, [{"value": f"v{i}".encode(), "partition": i % 2} for i in range(6)])
    env = StreamExecutionEnvironment.get_execution_environment("local")
    out = ListSink()
    env.from_source(source(kafka_broker.bootstrap, topic), None, "kafka").sink_to(out)
    plan, config = env.plan(), env.config()
    first = LocalRunner().start(plan, config)
    assert first.run(4) == 4
    snapshot = first.snapshot()
    first.close()
    before = list(out.values)
    out.clear()
    second = LocalRunner().start(plan, config, snapshot=snapshot)
    second.run()
    second.close()
    assert sorted(before + out.values) == ["v0", "v1", "v2", "v3", "v4", "v5"]
    assert len(out.values) == 2


def test_parallel_instances_share_the_partitions_of_a_topic_pattern(
    kafka_broker: Broker, new_topic: Callable[..., str]
) -> None:
    first, second = new_topic(3), new_topic(1)
    produce(kafka_broker.bootstrap, first, [{"value": f"a{i}".encode(), "partition": i % 3} for i in range(6)])
    produce(kafka_broker.bootstrap, second, [{"value": b"b0"}])
    pattern = f"({first}|{second})"
    kafka_source = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka_broker.bootstrap)
        .set_topic_pattern(pattern)
        .set_value_only_deserializer(SimpleStringSchema())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .build()
    )
    env = StreamExecutionEnvironment.get_execution_environment("local").set_parallelism(2)
    out = ListSink()
    env.from_source(kafka_source, None, "kafka").sink_to(out)
    env.execute()
    assert sorted(out.values) == ["a0", "a1", "a2", "a3", "a4", "a5", "b0"]
    assert kafka_source.num_splits() == 4


def test_a_restored_exactly_once_job_writes_each_record_once(kafka_broker: Broker, topic: str) -> None:
    env = StreamExecutionEnvironment.get_execution_environment("local")
    exactly_once = sink(kafka_broker.bootstrap, topic, guarantee=DeliveryGuarantee.EXACTLY_ONCE, prefix=f"{topic}-job")
    env.from_collection(["a", "b", "c", "d", "e"]).sink_to(exactly_once)
    plan, config = env.plan(), env.config()
    crashed = LocalRunner().start(plan, config)
    crashed.run(2)
    snapshot = crashed.snapshot()  # a and b committed
    crashed.run(2)  # c and d written in a transaction the crash leaves open
    restored = LocalRunner().start(plan, config, snapshot=snapshot)  # same transactional id: fences the open one
    restored.run()
    restored.close()
    crashed.abort()
    committed = read_topic(kafka_broker.bootstrap, topic, 6, isolation="read_committed", deadline=3.0)
    assert [m.value() for m in committed] == [b"a", b"b", b"c", b"d", b"e"]


def test_a_cluster_lost_while_reading_ends_the_job(tmp_path: Path) -> None:
    started = subprocess.run(
        ["bash", str(SCRIPT), "start", str(tmp_path / "broker")], capture_output=True, text=True, check=False
    )
    assert started.returncode == 0, started.stderr
    address = started.stdout.split()[-1]
    try:
        admin = Broker(address).admin()
        admin.create_topics([NewTopic("lost", 1, 1)])["lost"].result(30)
        produce(address, "lost", [{"value": b"x"}])
        env = StreamExecutionEnvironment.get_execution_environment("local")
        out = ListSink()
        reading = source(address, "lost", stop=None, properties={"default.api.timeout.ms": "2000"})
        env.from_source(reading, None, "kafka").sink_to(out)
        job = LocalRunner().start(env.plan(), env.config())
        assert job.run(1) == 1
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", str(tmp_path / "broker")], capture_output=True, check=False)
    with pytest.raises(KafkaConnectorError, match=rf"lost the Kafka cluster at {address}: it did not answer for 2 s"):
        job.run(1)
    job.abort()
    assert out.values == ["x"]
