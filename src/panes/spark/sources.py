"""Where Spark rows come from: every panes source becomes a DataFrame (see ``layout`` for the rows).

- ``DataFrameSource``: any Spark DataFrame, bounded or streaming; its columns are the source channel's typed
  values (each row becomes a ``dict`` by default, or a ``tuple`` or a ``Row``), turned into panes rows by
  the branch's first fused step (:class:`ColumnarInput`).
- ``FileSource``: Spark's file reader, read once or as a stream, then as a DataFrame source.
- ``KafkaSource``: Spark's Kafka columns (Spark's connector or panes' Python data source, ``panes.spark.kafka``),
  read as a stream unless the source is bounded; the first fused step deserializes the records.
- ``MicroBatchSource``: exactly one list per micro-batch, in order, then (``end_of_input``) an end-of-input
  sentinel in a batch of its own, which drives the watermark to Flink's final ``LONG_MAX``; with processing
  times, each batch also carries a clock row (``layout.CLOCK``) with its time (:func:`micro_batch_parts`). A query
  panes starts writes each batch as a Parquet file into its checkpoint and reads them with Spark's file source,
  one file per micro-batch, starting no driver-side Python process (``micro_batch_files``, which also says where
  it cannot: Spark Connect, a checkpoint on another filesystem, ``trigger="once"``, a crash hook at the source's
  points, a checkpoint the data source wrote, ``to_dataframe``). There, panes' Python streaming data source
  (:class:`PanesMicroBatches`) delivers them, the batches travelling inside its options.
- collections, splits and bounded generators: a bounded DataFrame made from Arrow on the driver.

Values with a declared type (``type_info``) travel as typed columns; others are pickled.
"""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from panes.datastream.plan import Channel
from panes.datastream.sources import (
    CollectionSource,
    DataFrameSource,
    FileSource,
    GeneratorSource,
    IterableSource,
    MicroBatchSource,
    SplitsSource,
    source_elements,
)
from panes.datastream.text_files import TextFormat
from panes.elements import StreamRecord
from panes.spark import crash_hook
from panes.spark.layout import CLOCK, END, ChannelCodes, Layout, Record, pack, unpack
from panes.spark.micro_batch_files import NOT_STARTED, MicroBatchFiles, Reading, file_rows
from panes.spark.session import register_data_source
from panes.types import RecordType


def dataframe_type(dataframe: Any, as_: str = "dict") -> RecordType:
    """The record type of a DataFrame's rows as values of shape ``as_`` (``"dict"``, ``"tuple"``, ``"row"``)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        schema = to_arrow_schema(dataframe.schema, timezone="UTC", prefers_large_types=False)
    except Exception as error:
        raise TypeError(
            f"panes cannot read the columns of this DataFrame ({error}); select or cast them to plain Spark types"
        ) from error
    return RecordType(pa.struct(list(schema)), "dict" if as_ == "dict" else as_)  # type: ignore[arg-type]


@dataclass(frozen=True)
class ColumnarInput:
    """A source DataFrame whose columns become the source channel's values inside the first fused step of
    its branch (``fused``), saving a Spark and a Python pass. With ``text`` (a JSON or CSV file source) the
    DataFrame is Spark's ``binaryFile`` rows (``path``, ``content``), each file parsed there by ``text``; with
    ``kafka`` (a Kafka source, whose ``record_type`` is ``None`` when its deserializer declares none) it is Spark's
    Kafka columns, each record deserialized there by ``kafka`` (``panes.spark.kafka.records.KafkaRows``)."""

    dataframe: Any
    record_type: RecordType | None
    text: TextFormat | None = None
    kafka: Any = None


# -- explicit micro-batches ---------------------------------------------------------------------------------


class _BatchPartition(InputPartition):
    """List ``index`` of the source with its payload, so that a read task receives its own list only."""

    def __init__(self, index: int, payload: bytes) -> None:
        self.index = index
        self.payload = payload


class PanesMicroBatches(DataSource):
    """Spark data source ``panes_micro_batches``: option ``batches`` holds the lists' rows (base64 of
    compressed pickled Arrow IPC payloads, one per list), option ``schema`` their DDL."""

    @classmethod
    def name(cls) -> str:
        return "panes_micro_batches"

    def schema(self) -> str:
        return self.options["schema"]

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        # The reader takes the lists out of the options: Spark pickles the read function with this source and
        # the reader in it into every read task, which needs only its own list (carried by its partition).
        batches = self.options["batches"]
        del self.options["batches"]
        return _MicroBatchReader(batches)


def _encode_batches(payloads: list[bytes]) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(payloads, protocol=pickle.HIGHEST_PROTOCOL))).decode()


def _decode_batches(text: str) -> list[bytes]:
    payloads: list[bytes] = pickle.loads(zlib.decompress(base64.b64decode(text)))
    return payloads


def control_rows(payload: bytes) -> int:
    """The rows of a micro-batch payload that are not the source's records (sentinels, clock rows)."""
    return sum(_control_rows_of(batch) for batch in unpack(payload))


def _control_rows_of(batch: pa.RecordBatch) -> int:
    return int(pc.sum(pc.less(batch.column("ch"), 0)).as_py() or 0)


def offset_control_rows(offset: Any) -> int:
    """The control rows before an offset of ``panes_micro_batches`` (its ``c``; a JSON text or a dict as in
    Spark's progress), 0 for ``None`` or another source's offset."""
    if isinstance(offset, str):
        try:
            offset = json.loads(offset)
        except ValueError:
            return 0
    return int(offset.get("c", 0)) if isinstance(offset, dict) else 0


class _MicroBatchReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets count lists (``b``) of all ``n``; each ``latestOffset`` releases one more, so each list is one
    micro-batch. An offset also says how many control rows (``layout.END`` sentinels, ``layout.CLOCK`` rows) the lists
    before it hold (``c``), so the records a micro-batch read are Spark's ``numInputRows`` less the difference
    (see ``offset_control_rows``). The payloads stay in the process that plans the micro-batches: a pickled
    reader (the one in Spark's read function) leaves them out, and each partition carries its own."""

    def __init__(self, batches: str) -> None:
        self.payloads = _decode_batches(batches)
        self.control_before = [0]
        for payload in self.payloads:
            self.control_before.append(self.control_before[-1] + control_rows(payload))
        self.count = len(self.payloads)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "payloads": []}

    def _offset(self, index: int) -> dict[str, int]:
        return {"b": index, "c": self.control_before[index], "n": self.count}

    def initialOffset(self) -> dict[str, int]:
        return self._offset(0)

    def prepareForTriggerAvailableNow(self) -> None:
        return None

    def latestOffset(self, start: dict[str, int], limit: Any) -> dict[str, int]:
        crash_hook.reached("between", start["b"] - 1)  # micro-batch b - 1 committed; offsets of b not written
        if start["b"] >= self.count:
            return start  # every list read (a restart's run may have fewer: ``end_again``)
        return self._offset(start["b"] + 1)

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        return [_BatchPartition(i, self.payloads[i]) for i in range(start["b"], end["b"])]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _BatchPartition)
        crash_hook.reached("batch", partition.index)
        yield from unpack(partition.payload)

    def commit(self, end: dict[str, int]) -> None:
        return None


def _records(elements: Any, channel: Channel, record_type: RecordType | None, first_seq: int) -> list[Record]:
    records = []
    for offset, element in enumerate(elements):
        record = element if isinstance(element, StreamRecord) else StreamRecord(element)
        value = record.value if record_type is None else record_type.conform(record.value)
        records.append(Record(channel, value, record.timestamp, first_seq + offset, 1))
    return records


def micro_batch_parts(
    source: MicroBatchSource, channel: Channel, codes: ChannelCodes, ends: int = 1
) -> list[list[pa.RecordBatch]]:
    """The record batches (panes' layout of ``channel``) of each micro-batch of ``source``: one per list (its
    records, then its clock row with processing times), then with ``end_of_input`` the end-of-input sentinel's,
    ``ends`` times (a restart may deliver it again: ``end_again``)."""
    layout = Layout(codes, [channel])
    record_type = codes.types[codes.code[channel]]
    times = source.processing_times
    batches = []
    seq = 1
    for index, batch in enumerate(source.batches):
        records = _records(batch, channel, record_type, seq)
        seq += len(records)
        parts = [layout.encode(records)]
        if times is not None:
            parts.append(layout.row(ch=CLOCK, ts=times[index], seq=0, ph=1))
        batches.append(parts)
    if source.end_of_input:
        # a batch of its own: the last list's watermark must reach the keyed steps (in this batch) before the end
        # of input's (in the next), as Flink forwards the watermark after the last elements before Long.MAX_VALUE;
        # timers and pane info show the difference (tried with the sentinel in the last list: timers fired at
        # LONG_MAX that Flink fires at the last list's watermark, and panes took the last flag early)
        parts = [layout.row(ch=END, seq=channel[0], ph=1)]
        if times:
            parts.append(layout.row(ch=CLOCK, ts=times[-1], seq=0, ph=1))
        batches.extend([parts] * ends)
    return batches


def micro_batch_rows(
    spark: Any, source: MicroBatchSource, channel: Channel, codes: ChannelCodes, reading: Reading = NOT_STARTED
) -> tuple[Any, MicroBatchFiles | None]:
    """A streaming DataFrame delivering ``source``'s lists one per micro-batch (plus the sentinel batch), read as
    ``reading`` says (``micro_batch_files``); with files, also the files to write before the query starts."""
    layout = Layout(codes, [channel])
    batches = micro_batch_parts(source, channel, codes, reading.ends)
    if reading.folder is not None:
        control_before = [0]
        for parts in batches:
            control_before.append(control_before[-1] + sum(_control_rows_of(part) for part in parts))
        files = MicroBatchFiles(reading.folder, batches, layout.schema, tuple(control_before))
        return file_rows(spark, reading.folder, layout.ddl()), files
    payloads = [pack(parts, layout.schema) for parts in batches]
    register_data_source(spark, PanesMicroBatches)
    frame = (
        spark.readStream.format("panes_micro_batches")
        .option("batches", _encode_batches(payloads))
        .option("schema", layout.ddl())
        .load()
    )
    return frame, None


def reads_as_stream(source: Any) -> bool:
    """Whether Spark reads ``source`` as a stream (streaming DataFrames, micro-batches, streaming files)."""
    from panes.connectors.kafka.source import KafkaSource

    if isinstance(source, (DataFrameSource, KafkaSource)):
        return not source.is_bounded()
    return isinstance(source, MicroBatchSource) or (isinstance(source, FileSource) and source.streaming)


BINARY_FILE_DDL = "path STRING, modificationTime TIMESTAMP, length BIGINT, content BINARY"
"""The columns of Spark's ``binaryFile`` reader (how JSON and CSV files reach panes' parser)."""


def file_dataframe(spark: Any, source: FileSource) -> Any:
    """Spark's reader of a file source (streaming or bounded): Parquet with Spark's reader, JSON and CSV as
    whole files (``path``, ``content``) for ``text_files``. A path that does not exist raises the source's
    ``missing_path`` error (Spark's ``PATH_NOT_FOUND`` as its cause), as on the local runner."""
    reader = spark.readStream if source.streaming else spark.read
    if source.text_format() is not None:
        reader = reader.format("binaryFile").schema(BINARY_FILE_DDL)
    else:
        reader = reader.format(source.format).options(**source.options)
        if source.schema is not None:
            reader = reader.schema(source.schema)
    if source.streaming and source.max_files_per_trigger is not None:
        reader = reader.option("maxFilesPerTrigger", str(source.max_files_per_trigger))
    try:
        frame = reader.load(source.path)
        return frame.select("path", "content") if source.text_format() is not None else frame
    except Exception as error:
        condition = getattr(error, "getCondition", None)
        if callable(condition) and condition() == "PATH_NOT_FOUND":
            raise source.missing_path() from error
        raise


def columnar_input(spark: Any, source: Any) -> ColumnarInput | None:
    """DataFrame, file and Kafka sources as a :class:`ColumnarInput` (their type read from the DataFrame's schema,
    or the Kafka deserializer's); ``None`` for other sources."""
    from panes.connectors.kafka.source import KafkaSource

    if isinstance(source, KafkaSource):
        from panes.spark.kafka import kafka_input

        found: ColumnarInput = kafka_input(spark, source)
        return found
    if isinstance(source, DataFrameSource):
        return ColumnarInput(source.dataframe, dataframe_type(source.dataframe, source.as_))
    if isinstance(source, FileSource):
        frame = file_dataframe(spark, source)
        text = source.text_format()
        if text is not None:
            record_type = source.record_type()
            assert record_type is not None
            return ColumnarInput(frame, record_type, text)
        return ColumnarInput(frame, dataframe_type(frame))
    return None


def source_rows(
    spark: Any,
    source: Any,
    channel: Channel,
    codes: ChannelCodes,
    streaming: bool = True,
    reading: Reading = NOT_STARTED,
) -> tuple[Any, MicroBatchFiles | None]:
    """The panes rows of a source that is not columnar (micro-batches, collections, ...) as a DataFrame, and the
    files to write before the query starts when micro-batches are read from files as ``reading`` says
    (``micro_batch_files``); a bounded query (``streaming`` false: BATCH execution) reads micro-batches as one
    collection."""
    if isinstance(source, MicroBatchSource) and streaming:
        return micro_batch_rows(spark, source, channel, codes, reading)
    if isinstance(source, (CollectionSource, SplitsSource, GeneratorSource, IterableSource, MicroBatchSource)):
        if not source.is_bounded():
            raise ValueError(f"{source!r} is unbounded; on Spark use a streaming DataFrame or micro-batches")
        layout = Layout(codes, [channel])
        record_type = codes.types[codes.code[channel]]
        elements = source_elements(source)
        table = pa.Table.from_batches([layout.encode(_records(elements, channel, record_type, 1))], layout.schema)
        return spark.createDataFrame(table), None
    raise TypeError(f"the Spark runner cannot read {source!r}")
