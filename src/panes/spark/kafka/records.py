"""Kafka records as panes rows, inside the first Python step of a Kafka source's branch (``fused``).

Both ways panes reads Kafka on Spark (Spark's own connector, panes' Python data source) give DataFrames of
Spark's Kafka columns (:data:`KAFKA_DDL`: ``key``, ``value``, ``topic``, ``partition``, ``offset``,
``timestamp``, ``timestampType``, ``headers``). :class:`KafkaRows` turns a batch of them into rows of the source's
channel as the local runner's reader does (``panes.connectors.kafka.reader``): each record becomes a
:class:`~panes.connectors.kafka.deserialization.ConsumerRecord`, goes through the source's deserializer, and each
element it gives takes the record's Kafka timestamp (none when the record has none). A record the deserializer
raises on is a bad record: a row of the source's error output (an ``ErrorRecord`` without timestamp, as on the
local runner) when the job reads it, else the job fails with the record's topic, partition and offset
(``BadRecordError``). With ``split_source`` it also says which split (Kafka partition,
``panes.spark.split_watermarks.split_code``) each row came from, for the source's watermarks per partition.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from panes.connectors.kafka.deserialization import ConsumerRecord, KafkaBadRecord, KafkaRecordDeserializationSchema
from panes.datastream.plan import Channel
from panes.spark.layout import ChannelCodes, Layout, Record
from panes.spark.split_watermarks import split_code

KAFKA_DDL = (
    "key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP, timestampType INT, "
    "headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
)
"""The columns of Spark's Kafka source (with ``includeHeaders``), which panes' Python source gives too."""

KAFKA_SCHEMA = pa.schema(
    [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
        pa.field("headers", pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))),
    ]
)
""":data:`KAFKA_DDL` as Arrow columns."""

TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}
"""Spark's ``timestampType`` codes (Kafka's ``TimestampType.id``); any other is ``NoTimestampType``."""


def _milliseconds(column: pa.Array) -> list[int | None]:
    """A ``timestamp`` column as epoch milliseconds (``None`` where null or negative: a record without one)."""
    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
        values = column.to_numpy(zero_copy_only=False)
        nulls = column.is_null().to_numpy(zero_copy_only=False)
        return [None if null or v < 0 else int(v // 1000) for v, null in zip(values, nulls, strict=True)]
    return [None if v is None or v < 0 else int(v) for v in column.to_pylist()]


@dataclass(frozen=True)
class KafkaRows:
    """How a Kafka source's records become its rows (see the module docstring); travels to the executors with the
    step (only the deserializer and the partitions: never the source's properties).

    ``partitions``: the ``(topic, partition)`` pairs the source read when the query was built."""

    deserializer: KafkaRecordDeserializationSchema
    partitions: tuple[tuple[str, int], ...] = ()

    def split_codes(self, source: int) -> tuple[int, ...]:
        """The codes of :attr:`partitions` as source step ``source`` reads them (``split_watermarks.split_code``)."""
        return tuple(split_code(source, topic, partition) for topic, partition in self.partitions)

    def records(self, batch: pa.RecordBatch) -> list[ConsumerRecord]:
        """The Kafka records of a batch of :data:`KAFKA_DDL` rows, in order."""
        count = batch.num_rows
        names = batch.schema.names
        stamps = _milliseconds(batch.column("timestamp"))
        kinds = batch.column("timestampType").to_pylist()
        headers = batch.column("headers").to_pylist() if "headers" in names else [None] * count
        return [
            ConsumerRecord(
                topic,
                int(partition),
                int(offset),
                stamp,
                "NoTimestampType" if stamp is None else TIMESTAMP_TYPES.get(kind, "NoTimestampType"),
                key,
                value,
                tuple((h["key"], h["value"]) for h in (header or ())),
            )
            for topic, partition, offset, stamp, kind, key, value, header in zip(
                batch.column("topic").to_pylist(),
                batch.column("partition").to_pylist(),
                batch.column("offset").to_pylist(),
                stamps,
                kinds,
                batch.column("key").to_pylist(),
                batch.column("value").to_pylist(),
                headers,
                strict=True,
            )
        ]

    def rows(
        self,
        batch: pa.RecordBatch,
        codes: ChannelCodes,
        channel: Channel,
        errors: Channel | None,
        name: str,
        base: int,
        start: int,
        split_source: int | None = None,
    ) -> tuple[pa.RecordBatch, np.ndarray | None]:
        """The rows (in ``channel``'s layout, with ``errors`` when given) of one batch of Kafka rows, ordering
        numbers ``base | start + 1, ...`` in record order; ``BadRecordError`` for a bad record without ``errors``.
        With ``split_source`` (a source step's id), also each row's split code (else ``None``)."""
        record_type = codes.types[codes.code[channel]]
        out: list[Record] = []
        splits: list[int] = []
        known: dict[tuple[str, int], int] = {}
        seq = start
        records = self.records(batch)
        for record, read in zip(records, self.deserializer.deserialize_batch(records), strict=True):
            before = len(out)
            if isinstance(read, Exception):
                bad = KafkaBadRecord(record, f"{type(read).__name__}: {read}", type(read).__name__)
                if errors is None:
                    raise bad.error(name) from None
                seq += 1
                out.append(Record(errors, bad.record(name), None, base | seq, 1))
            else:
                for element in read:
                    seq += 1
                    value = element if record_type is None else record_type.conform(element)
                    out.append(Record(channel, value, record.timestamp, base | seq, 1))
            if split_source is not None and len(out) > before:
                place = (record.topic, record.partition)
                code = known.get(place)
                if code is None:
                    code = known[place] = split_code(split_source, *place)
                splits.extend([code] * (len(out) - before))
        layout = Layout(codes, [channel] if errors is None else [channel, errors])
        return layout.encode(out), (None if split_source is None else np.array(splits, dtype=np.int64))
