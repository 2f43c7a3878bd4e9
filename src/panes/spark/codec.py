"""How panes rows travel through Spark: the row schema, channel codes, values and watermarks.

A row is ``(ch, v, ts, seq, ph)``: the channel code (``END`` for an end-of-input sentinel), the value
pickled, the timestamp (null for none), an ordering number, and the phase (see ``host``). Values are
pickled with the standard library; classes of user values must be importable on the executors.

Spark's watermark is kept non-negative and reads 0 before any data. panes shifts every watermark and timer
by :data:`SHIFT` (the milliseconds from 0001-01-01 to 1970-01-01), so negative event times are exact and a
raw 0 means "no watermark yet" (Flink's ``LONG_MIN``). :data:`END_MS` is the largest millisecond a Spark
timestamp holds; it stands for Flink's final ``LONG_MAX`` watermark.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from panes.spark.host import Row
from panes.spark.linear import Channel, Step
from panes.time import LONG_MAX, LONG_MIN

SHIFT = 62_135_596_800_000
END_MS = 2**63 // 1000 - 1
END = -1
"""The channel code of end-of-input sentinels (their ``seq`` is the id of the source that ended)."""

ROW_DDL = "ch INT, v BINARY, ts BIGINT, seq BIGINT, ph INT"
ROW_SCHEMA = pa.schema(
    [("ch", pa.int32()), ("v", pa.binary()), ("ts", pa.int64()), ("seq", pa.int64()), ("ph", pa.int32())]
)


def to_spark_time(flink_time: int) -> int:
    """A Flink timestamp/watermark as shifted Spark milliseconds (``LONG_MAX`` and beyond -> ``END_MS``)."""
    if flink_time >= END_MS - SHIFT:
        return END_MS
    return max(flink_time + SHIFT, 1)


def from_spark_watermark(raw: int) -> int:
    """Spark's watermark (ms, shifted) as Flink's: ``LONG_MIN`` before any, ``LONG_MAX`` at the end."""
    if raw <= 0:
        return LONG_MIN
    if raw >= END_MS:
        return LONG_MAX
    return raw - SHIFT


def dumps(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def loads(data: bytes) -> Any:
    return pickle.loads(data)


class ChannelCodes:
    """Small integers for the channels of a plan (what rows carry in ``ch``)."""

    def __init__(self, steps: list[Step]) -> None:
        channels: set[Channel] = set()
        for step in steps:
            channels |= step.consumed
            channels |= step.needed_outputs
        ordered = sorted(channels, key=lambda c: (c[0], c[1] or ""))
        self.code: dict[Channel, int] = {channel: index for index, channel in enumerate(ordered)}
        self.channel: dict[int, Channel] = {index: channel for channel, index in self.code.items()}

    def codes(self, channels: Iterable[Channel]) -> list[int]:
        return sorted(self.code[c] for c in channels if c in self.code)


def encode(
    rows: Iterable[Row], codes: ChannelCodes, raw: Iterable[tuple[int, bytes, Any, int, int]] = ()
) -> pa.RecordBatch:
    """A record batch of ``rows`` (decoded rows) followed by ``raw`` (rows passed through untouched)."""
    ch: list[int] = []
    v: list[bytes] = []
    ts: list[Any] = []
    seq: list[int] = []
    ph: list[int] = []
    for channel, value, timestamp, order, phase in rows:
        ch.append(codes.code[channel])
        v.append(dumps(value))
        ts.append(timestamp)
        seq.append(order)
        ph.append(phase)
    for code, blob, timestamp, order, phase in raw:
        ch.append(code)
        v.append(blob)
        ts.append(timestamp)
        seq.append(order)
        ph.append(phase)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(ch, pa.int32()),
            pa.array(v, pa.binary()),
            pa.array(ts, pa.int64()),
            pa.array(seq, pa.int64()),
            pa.array(ph, pa.int32()),
        ],
        schema=ROW_SCHEMA,
    )


def pack(rows: list[Row], raw: list[tuple[int, bytes, Any, int, int]], codes: ChannelCodes) -> bytes:
    """One shard's rows for a keyed step as one payload: decoded ``rows`` pickled together (one pickle call
    for all values, shared strings stored once) and ``raw`` rows as they are. A keyed step receives one
    payload per shard and input batch, so Spark hands its Python processor a few large rows."""
    code = codes.code
    return dumps(([(code[c], v, ts, seq, ph) for c, v, ts, seq, ph in rows], raw))


def unpack(payload: bytes, codes: ChannelCodes) -> tuple[list[Row], list[tuple[int, bytes, Any, int, int]]]:
    """The decoded rows and raw rows of a :func:`pack` payload."""
    decoded, raw = loads(payload)
    channel = codes.channel
    return [(channel[c], v, ts, seq, ph) for c, v, ts, seq, ph in decoded], raw


def split_payload(
    payload: bytes, step: Step, codes: ChannelCodes, mine: list[Row], passing: list[tuple[int, bytes, Any, int, int]]
) -> None:
    """Add the rows of a :func:`pack` payload that ``step`` reads to ``mine`` and the others (and those a
    later step reads too) to ``passing``, pickled as they travel on."""
    decoded, raw = unpack(payload, codes)
    consumed, keep, code_of, channel = step.consumed, step.passthrough, codes.code, codes.channel
    for row in decoded:
        if row[0] in consumed:
            mine.append(row)
            if row[0] not in keep:
                continue
        passing.append((code_of[row[0]], dumps(row[1]), row[2], row[3], row[4]))
    for item in raw:
        target = channel.get(item[0])
        if target is not None and target in consumed:
            mine.append((target, loads(item[1]), item[2], item[3], item[4]))
            if target not in keep:
                continue
        passing.append(item)
