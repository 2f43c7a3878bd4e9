"""How rows travel between the Spark steps of a plan: named, typed columns.

Every DataFrame between panes steps has four head columns and one value column per channel its rows may
belong to:

- ``ch INT``: the channel code (:class:`ChannelCodes`); :data:`END` marks an end-of-input sentinel (its
  ``seq`` is the id of the source that ended), :data:`CARRIER` a watermark carrier, :data:`CLOCK` the
  micro-batch's processing time (in ``ts``) when the job's source gives it, and :data:`FORWARDED` the
  watermark a keyed step forwarded, :data:`SPLIT` a split's watermark rating (``panes.spark.split_watermarks``);
- ``ts BIGINT``: the record's timestamp (null for none);
- ``seq BIGINT``: the ordering number of the element the record came from;
- ``ph INT``: the phase (see ``shard.phases``);
- ``c<code>``: the channel's values, typed where the channel has a record type (a struct of the record's
  fields, or a plain type), else ``BINARY`` (the value pickled). A row fills only its own channel's column.

Inside a Python step a row is a :class:`Record`. A keyed step receives and returns its rows as Arrow IPC
payloads (:func:`pack`, :func:`unpack`), so Spark hands its processor a few large rows per shard.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from panes.datastream.plan import Channel
from panes.types import RecordType, to_ddl

END = -1
"""The channel code of end-of-input sentinels (their ``seq`` is the id of the source that ended)."""
CARRIER = -2
"""The channel code of watermark carrier rows (dropped right after the watermark is defined)."""
METRICS = -3
"""The channel code (or shard) of the metrics rows a Python stage adds (``panes.spark.metrics``)."""
CLOCK = -4
"""The channel code of clock rows: ``ts`` is the processing time of the micro-batch (a source that gives its
batches' processing times sends one per batch; every step passes it on, a keying to every shard)."""
FORWARDED = -5
"""The channel code of the watermark a keyed step forwarded (one row before each shard's rows of a batch):
``seq`` is the watermark its operator had before the batch, ``ts`` the one it advanced to, ``ph`` the batch's
phase 1 (``shard.phases``). The steps fused after it read them (:func:`forwarded_of`) and drop them."""

SPLIT = -6
"""The channel code of split rows: ``seq`` is a split's code (``split_watermarks.split_code``), ``ts`` its watermark
rating in the micro-batch (Flink milliseconds). Every Python step passes them on, a keying to every shard."""

HEAD = [
    pa.field("ch", pa.int32()),
    pa.field("ts", pa.int64()),
    pa.field("seq", pa.int64()),
    pa.field("ph", pa.int32()),
]


class Record(NamedTuple):
    """One row inside a Python step."""

    channel: Channel
    value: Any
    timestamp: int | None
    seq: int
    phase: int


def dumps(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def loads(data: bytes) -> Any:
    return pickle.loads(data)


class ChannelCodes:
    """Small integers for the channels of a plan (what rows carry in ``ch``), and each channel's type."""

    def __init__(self, types: dict[Channel, RecordType | None]) -> None:
        ordered = sorted(types, key=lambda c: (c[0], c[1] or ""))
        self.code: dict[Channel, int] = {channel: index for index, channel in enumerate(ordered)}
        self.channel: dict[int, Channel] = {index: channel for channel, index in self.code.items()}
        self.types: dict[int, RecordType | None] = {self.code[c]: types[c] for c in ordered}

    @classmethod
    def of_steps(cls, steps: Iterable[Any]) -> ChannelCodes:
        """The codes of every channel the ``steps`` (``linear.Step``) read or write."""
        types: dict[Channel, RecordType | None] = {}
        for step in steps:
            types.update(step.types)
        return cls(types)

    def codes(self, channels: Iterable[Channel]) -> list[int]:
        return sorted(self.code[c] for c in channels if c in self.code)

    @staticmethod
    def column(code: int) -> str:
        return f"c{code}"

    def arrow_type(self, code: int) -> pa.DataType:
        record_type = self.types[code]
        return pa.binary() if record_type is None else record_type.arrow_type

    def decode(self, code: int, column: pa.Array) -> list[Any]:
        """The values of ``column`` (a channel's value column) as Python values."""
        record_type = self.types[code]
        if record_type is None:
            return [None if blob is None else loads(blob) for blob in column.to_pylist()]
        return record_type.decode(column)

    def encode(self, code: int, values: list[Any]) -> pa.Array:
        """A value column from Python values (``None`` where a row belongs to another channel)."""
        record_type = self.types[code]
        if record_type is None:
            return pa.array([None if v is None else dumps(v) for v in values], pa.binary())
        return record_type.encode(values)


class Layout:
    """The columns of rows that may belong to ``channels``: the head columns and one value column each."""

    def __init__(self, codes: ChannelCodes, channels: Iterable[Channel], extra: Sequence[pa.Field] = ()) -> None:
        self.codes = codes
        self.channels = frozenset(channels)
        self.value_codes = codes.codes(self.channels)
        fields = [*HEAD, *(pa.field(codes.column(c), codes.arrow_type(c)) for c in self.value_codes), *extra]
        self.schema = pa.schema(fields)

    def with_extra(self, *fields: pa.Field) -> Layout:
        """This layout with ``fields`` after the value columns."""
        return Layout(self.codes, self.channels, fields)

    def ddl(self) -> str:
        """The Spark DDL of the columns (what ``mapInArrow`` and friends are told they return)."""
        return to_ddl(self.schema)

    @staticmethod
    def ddl_of(schema: pa.Schema) -> str:
        return to_ddl(schema)

    def encode(self, records: Sequence[Record], **extra: pa.Array) -> pa.RecordBatch:
        """A record batch of ``records`` in this layout (``extra`` fills columns beyond the value columns)."""
        code_of = self.codes.code
        count = len(records)
        codes = [code_of[r.channel] for r in records]
        arrays: list[pa.Array] = [
            pa.array(codes, pa.int32()),
            pa.array([r.timestamp for r in records], pa.int64()),
            pa.array([r.seq for r in records], pa.int64()),
            pa.array([r.phase for r in records], pa.int32()),
        ]
        present = set(codes)
        for code in self.value_codes:
            if code not in present:
                arrays.append(pa.nulls(count, self.codes.arrow_type(code)))
                continue
            values = [r.value if c == code else None for r, c in zip(records, codes, strict=True)]
            arrays.append(self.codes.encode(code, values))
        for f in list(self.schema)[len(arrays) :]:
            arrays.append(extra[f.name] if f.name in extra else pa.nulls(count, f.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def adapt(self, batch: pa.RecordBatch, **extra: pa.Array) -> pa.RecordBatch:
        """The rows of ``batch`` (any layout whose channels are in this one) in this layout."""
        count = batch.num_rows
        names = set(batch.schema.names)
        arrays = []
        for f in self.schema:
            if f.name in extra:
                arrays.append(extra[f.name])
            elif f.name in names:
                arrays.append(batch.column(f.name))
            else:
                arrays.append(pa.nulls(count, f.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def row(self, **values: Any) -> pa.RecordBatch:
        """A one-row batch with ``values`` in the named columns and nulls elsewhere (carriers, sentinels)."""
        return pa.RecordBatch.from_pylist([values], schema=self.schema)


def channel_mask(batch: pa.RecordBatch, codes: Iterable[int]) -> np.ndarray:
    """Which rows of ``batch`` belong to one of ``codes``."""
    wanted = np.fromiter(codes, dtype=np.int32)
    channel = batch.column("ch").to_numpy(zero_copy_only=False)
    result: np.ndarray = np.isin(channel, wanted)
    return result


class Columns(NamedTuple):
    """Rows inside a Python step as columns: their channels' codes, values, timestamps (``None``: none),
    ordering numbers and phases."""

    codes: np.ndarray
    values: list[Any]
    timestamps: list[int | None]
    seqs: np.ndarray
    phases: np.ndarray

    @classmethod
    def concat(cls, parts: Sequence[Columns]) -> Columns:
        """The rows of ``parts``, one after the other."""
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return NO_COLUMNS
        return cls(
            np.concatenate([part.codes for part in parts]),
            [value for part in parts for value in part.values],
            [timestamp for part in parts for timestamp in part.timestamps],
            np.concatenate([part.seqs for part in parts]),
            np.concatenate([part.phases for part in parts]),
        )

    def records(self, codes: ChannelCodes) -> list[Record]:
        """The rows as records, in their order (their channels named by ``codes``)."""
        channel = codes.channel
        return [
            Record(channel[c], v, t, s, p)
            for c, v, t, s, p in zip(
                self.codes.tolist(), self.values, self.timestamps, self.seqs.tolist(), self.phases.tolist(), strict=True
            )
        ]


NO_COLUMNS = Columns(np.empty(0, dtype=np.int32), [], [], np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int32))
"""No rows."""


def read_columns(batch: pa.RecordBatch, codes: ChannelCodes, mask: np.ndarray) -> Columns:
    """The rows of ``batch`` selected by ``mask`` as columns, in their order (values decoded by channel)."""
    positions = np.flatnonzero(mask)
    rows = batch if positions.size == batch.num_rows else batch.take(pa.array(positions))
    channel_codes = rows.column("ch").to_numpy(zero_copy_only=False)
    present = np.unique(channel_codes).tolist()
    values: list[Any] = [None] * rows.num_rows
    for code in present:
        column = rows.column(codes.column(code))
        if len(present) == 1:
            values = codes.decode(code, column)
            break
        own = np.flatnonzero(channel_codes == code)
        for i, value in zip(own.tolist(), codes.decode(code, column.take(pa.array(own))), strict=True):
            values[i] = value
    return Columns(
        channel_codes,
        values,
        rows.column("ts").to_pylist(),
        rows.column("seq").to_numpy(zero_copy_only=False),
        rows.column("ph").to_numpy(zero_copy_only=False),
    )


def read_records(batch: pa.RecordBatch, codes: ChannelCodes, mask: np.ndarray) -> list[Record]:
    """The rows of ``batch`` selected by ``mask`` as records, in their order."""
    if not mask.any():
        return []
    return read_columns(batch, codes, mask).records(codes)


def records_in_stream_order(batches: Iterable[pa.RecordBatch], codes: ChannelCodes, wanted: list[int]) -> list[Record]:
    """The rows of channels ``wanted`` in ``batches`` as records, in the order the stream made them (phase, then
    sequence number): what a sink's task writes, whatever order its rows reached the task in."""
    records = [r for batch in batches for r in read_records(batch, codes, channel_mask(batch, wanted))]
    records.sort(key=lambda r: (r.phase, r.seq))
    return records


def pack(batches: Iterable[pa.RecordBatch], schema: pa.Schema) -> bytes:
    """Record batches as one Arrow IPC stream payload."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        for batch in batches:
            if batch.num_rows:
                writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())


def unpack(payload: bytes) -> Iterator[pa.RecordBatch]:
    """The record batches of a :func:`pack` payload."""
    reader = pa.ipc.open_stream(payload)
    yield from reader


def clock_of(batch: pa.RecordBatch) -> tuple[pa.RecordBatch, int | None]:
    """``batch`` without its clock rows, and the latest processing time they carry (``None`` without any)."""
    channel = batch.column("ch").to_numpy(zero_copy_only=False)
    clocks = channel == CLOCK
    if not clocks.any():
        return batch, None
    now = int(pc.max(batch.column("ts").filter(pa.array(clocks))).as_py())
    return batch.filter(pa.array(~clocks)), now


def splits_of(batch: pa.RecordBatch) -> tuple[pa.RecordBatch, list[tuple[int, int]]]:
    """``batch`` without its :data:`SPLIT` rows, and what they say: ``(split, rating)`` pairs."""
    channel = batch.column("ch").to_numpy(zero_copy_only=False)
    marks = channel == SPLIT
    if not marks.any():
        return batch, []
    rows = batch.filter(pa.array(marks))
    pairs = list(zip(rows.column("seq").to_pylist(), rows.column("ts").to_pylist(), strict=True))
    return batch.filter(pa.array(~marks)), pairs


def split_rows(layout: Layout, ratings: dict[int, int]) -> pa.RecordBatch:
    """The :data:`SPLIT` rows of ``ratings`` (split -> rating) in ``layout``."""
    count = len(ratings)
    return layout.adapt(
        pa.record_batch({"ch": pa.nulls(count, pa.int32())}),
        ch=pa.array([SPLIT] * count, pa.int32()),
        ts=pa.array(list(ratings.values()), pa.int64()),
        seq=pa.array(list(ratings), pa.int64()),
        ph=pa.array([1] * count, pa.int32()),
    )


def forwarded_row(layout: Layout, before: int, after: int, batch: int) -> pa.RecordBatch:
    """The :data:`FORWARDED` row of a keyed step's shard in batch ``batch`` (see there)."""
    return layout.row(ch=FORWARDED, ts=after, seq=before, ph=2 * batch + 1)


def forwarded_of(batch: pa.RecordBatch) -> tuple[pa.RecordBatch, dict[int, tuple[int, int]]]:
    """``batch`` without its :data:`FORWARDED` rows, and what they say by batch (``ph // 2``): the latest watermark
    before it and after it."""
    channel = batch.column("ch").to_numpy(zero_copy_only=False)
    marks = channel == FORWARDED
    if not marks.any():
        return batch, {}
    rows = batch.filter(pa.array(marks))
    found: dict[int, tuple[int, int]] = {}
    for before, after, phase in zip(
        rows.column("seq").to_pylist(), rows.column("ts").to_pylist(), rows.column("ph").to_pylist(), strict=True
    ):
        known = found.get(phase // 2)
        found[phase // 2] = (before, after) if known is None else (max(known[0], before), max(known[1], after))
    return batch.filter(pa.array(~marks)), found
