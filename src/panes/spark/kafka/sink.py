"""A ``KafkaSink`` written by Spark tasks (never the driver), once per micro-batch (once for a bounded run).

- ``NONE`` / ``AT_LEAST_ONCE``: each task of the batch's rows opens a producer
  (``panes.connectors.kafka.sink.KafkaSinkWriter``), hands it its records in stream order and waits until every one
  is acknowledged (``acks=all`` for ``AT_LEAST_ONCE``) before the task ends, so Spark commits a micro-batch only
  once its records are in Kafka; a batch replayed after a crash writes its records again.
- ``EXACTLY_ONCE``: the records are serialized, then spread over the sink's ``W`` writers by their topic and key
  (``W`` is the sink's parallelism, ``sink_to(...).set_parallelism(W)``, default 1; keep it across restarts), so
  a replayed batch gives each writer the same records. Writer ``i`` uses transactional id ``<prefix>-<i>`` (opening
  it aborts what an earlier attempt left open) and writes its records and a marker in one Kafka transaction: the
  marker is the offset ``batch + 1`` committed for partition 0 of the sink's topic in consumer group
  ``<prefix>-<run>-<i>`` (``send_offsets_to_transaction``), where ``run`` names the query (its checkpoint
  location). A writer that finds the marker at or past its batch skips it: a batch replayed after a crash writes
  nothing twice, and one whose transaction did not commit is written again. A ``read_committed`` consumer sees
  each record once.

Costs of ``EXACTLY_ONCE``: one producer (``init_transactions``, a metadata and a group request) per writer per
micro-batch; records are visible to ``read_committed`` consumers when their writer commits (during the batch's
write, before Spark commits the batch), not later; a transaction is open only while its task writes, so
``transaction.timeout.ms`` bounds one task's write, not the trigger interval. Each writer commits on its own: a
batch that fails after some writers committed leaves theirs visible (its replay skips them). A sink with a topic
selector cannot keep a marker (no fixed topic): ``EXACTLY_ONCE`` needs ``set_topic`` on Spark (``ValueError``).

A value the serializer cannot write fails the job (``BadRecordError`` naming the sink and the value).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import functions as F

from panes.connectors.base import DeliveryGuarantee
from panes.connectors.kafka.serialization import ProducerRecord
from panes.connectors.kafka.sink import KafkaSink, KafkaSinkWriter
from panes.errors import BadRecordError
from panes.spark import crash_hook
from panes.spark.failures import carrying_iterators
from panes.spark.layout import ChannelCodes, channel_mask, read_records, records_in_stream_order

SERIALIZED_DDL = "topic STRING, key BINARY, value BINARY, ts BIGINT, ph INT, seq BIGINT"
WRITTEN_DDL = "written BIGINT"
_WRITTEN = pa.schema([pa.field("written", pa.int64())])


def run_name(checkpoint: str) -> str:
    """The name of a query's run in its markers' group: a digest of its checkpoint location."""
    return hashlib.sha256(checkpoint.encode()).hexdigest()[:16]


def check_sink(sink: KafkaSink, name: str) -> None:
    """``ValueError`` for what the Spark runner cannot write (see the module docstring)."""
    if sink.delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE and sink.record_serializer.topic is None:
        raise ValueError(
            f"sink {name!r}: on Spark an EXACTLY_ONCE KafkaSink keeps its marker of the last committed micro-batch in "
            "its topic's consumer groups, so it needs a fixed topic (set_topic): write one topic per sink, or use "
            "AT_LEAST_ONCE with the topic selector"
        )


def _serialize(sink: KafkaSink, name: str, value: Any, timestamp: int | None) -> ProducerRecord:
    try:
        return sink.record_serializer.serialize(value, timestamp)
    except Exception as error:
        raise BadRecordError(f"{name} cannot write {value!r}: {type(error).__name__}: {error}") from error


def _written(count: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"written": [count]}, schema=_WRITTEN)


def plain_writer(
    sink: KafkaSink, name: str, codes: ChannelCodes, wanted: list[int]
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``mapInArrow`` function writing a task's records (``NONE``, ``AT_LEAST_ONCE``) and giving their count."""

    @carrying_iterators
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        records = records_in_stream_order(batches, codes, wanted)
        if not records:
            return
        context = TaskContext.get()
        writer = KafkaSinkWriter(sink, 0 if context is None else context.partitionId())
        try:
            for record in records:
                writer.produce(_serialize(sink, name, record.value, record.timestamp))
            writer.flush(True)
        except BaseException:
            writer.abort()
            raise
        finally:
            writer.close()
        yield _written(len(records))

    return run


def serializer(
    sink: KafkaSink, name: str, codes: ChannelCodes, wanted: list[int]
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``mapInArrow`` function turning a task's records into :data:`SERIALIZED_DDL` rows."""
    schema = pa.schema(
        [
            pa.field("topic", pa.string()),
            pa.field("key", pa.binary()),
            pa.field("value", pa.binary()),
            pa.field("ts", pa.int64()),
            pa.field("ph", pa.int32()),
            pa.field("seq", pa.int64()),
        ]
    )

    @carrying_iterators
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            records = read_records(batch, codes, channel_mask(batch, wanted))
            if not records:
                continue
            produced = [_serialize(sink, name, r.value, r.timestamp) for r in records]
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array([p.topic for p in produced], pa.string()),
                    pa.array([p.key for p in produced], pa.binary()),
                    pa.array([p.value for p in produced], pa.binary()),
                    pa.array([p.timestamp for p in produced], pa.int64()),
                    pa.array([r.phase for r in records], pa.int32()),
                    pa.array([r.seq for r in records], pa.int64()),
                ],
                schema=schema,
            )

    return run


def last_committed(sink: KafkaSink, group: str, topic: str) -> int:
    """The last micro-batch writer group ``group`` committed (its marker), ``-1`` when none."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    from panes.connectors.kafka.errors import failure
    from panes.connectors.kafka.properties import client_config, timeout_seconds

    config = client_config(
        sink.properties,
        **{
            "bootstrap.servers": sink.bootstrap_servers,
            "group.id": group,
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        },
    )
    for producer_only in ("transaction.timeout.ms", "delivery.timeout.ms", "acks", "linger.ms", "batch.size"):
        config.pop(producer_only, None)
    client = Consumer(config)
    try:
        found = client.committed([TopicPartition(topic, 0)], timeout=timeout_seconds(sink.properties))
    except KafkaException as error:
        raise failure(
            sink.what(), "could not read its marker of the last committed micro-batch", sink.properties, error
        ) from None
    finally:
        client.close()
    offset = found[0].offset if found else -1
    return offset - 1 if offset >= 0 else -1


def transactional_writer(
    sink: KafkaSink, writers: int, run: str, batch_id: int
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``mapInArrow`` function of writer ``i`` (the task's partition) for ``EXACTLY_ONCE`` (see the module
    docstring): skips a batch its marker says it committed, else writes its records and the marker in one
    transaction."""
    topic = sink.record_serializer.topic
    assert topic is not None and sink.transactional_id_prefix is not None
    prefix = sink.transactional_id_prefix

    @carrying_iterators
    def run_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from confluent_kafka import Consumer, TopicPartition
        from pyspark import TaskContext

        rows = [row for batch in batches for row in batch.to_pylist()]
        if not rows:
            return
        rows.sort(key=lambda row: (row["ph"], row["seq"]))
        context = TaskContext.get()
        index = 0 if context is None else context.partitionId()
        group = f"{prefix}-{run}-{index}"
        writer = KafkaSinkWriter(sink, index)  # opening the transactional id aborts an earlier attempt's
        try:
            if last_committed(sink, group, topic) >= batch_id:
                yield _written(0)
                return
            for row in rows:
                writer.produce(ProducerRecord(row["topic"], row["key"], row["value"], row["ts"]))
            metadata = Consumer({"bootstrap.servers": sink.bootstrap_servers, "group.id": group})
            try:
                writer.send_offsets([TopicPartition(topic, 0, batch_id + 1)], metadata.consumer_group_metadata())
            finally:
                metadata.close()
            crash_hook.reached("kafka", batch_id)
            writer.flush(True)  # commits the transaction
        except BaseException:
            writer.abort()
            raise
        finally:
            writer.close()
        yield _written(len(rows))

    return run_task


def write_kafka(
    batch: Any,
    batch_id: int,
    sink: KafkaSink,
    name: str,
    codes: ChannelCodes,
    wanted: list[int],
    writers: int,
    run: str,
) -> int:
    """Write the rows of channels ``wanted`` of ``batch`` to ``sink`` (see the module docstring); the number of
    records written."""
    rows = batch.filter(F.col("ch").isin(wanted))
    if sink.delivery_guarantee is not DeliveryGuarantee.EXACTLY_ONCE:
        counts = rows.mapInArrow(plain_writer(sink, name, codes, wanted), WRITTEN_DDL).collect()
    else:
        serialized = rows.mapInArrow(serializer(sink, name, codes, wanted), SERIALIZED_DDL)
        spread = serialized.repartition(writers, "topic", "key")
        counts = spread.mapInArrow(transactional_writer(sink, writers, run, batch_id), WRITTEN_DDL).collect()
    return sum(int(row[0]) for row in counts)
