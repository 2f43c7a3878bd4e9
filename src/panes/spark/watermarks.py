"""Watermarks and time on Spark: how a timestamps step rates rows with watermarks, and how panes timestamps and
watermarks map to Spark's watermark and timers.

Spark's watermark is kept non-negative and reads 0 before any data. panes shifts every watermark and timer
by :data:`SHIFT` (the milliseconds from 0001-01-01 to 1970-01-01), so negative event times are exact and a
raw 0 means "no watermark yet" (Flink's ``LONG_MIN``). :data:`END_MS` is the largest millisecond a Spark
timestamp holds; it stands for Flink's final ``LONG_MAX`` watermark. Event times outside
:data:`EVENT_TIMES` (about years 1 to 292,000) have no exact Spark counterpart: the timestamps step refuses
the records that carry them as bad records, and a watermark beyond them (other than the final one) fails
the job (:func:`to_spark_watermark`), so neither is ever read as the end of input. Spark's progress reports
the shifted watermark (years around 3990 for today's times): :func:`progress_watermark` reads it back as
Flink's.

A timestamps step runs its assigner and generator in the fused call before Spark sees the rows
(:func:`rate_watermarks` on records, :func:`stamp_columns` on typed columns), rating every row with the watermark
its generator emits after it; the call carries the batch's largest rating to the query (``fused``), which
defines Spark's watermark on it (``translate``); a keyed step's processor reads Spark's watermark back
(:func:`from_spark_watermark`) and advances its operator to it (``shard.phases``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, TypeGuard

import numpy as np
import pyarrow as pa

from panes.elements import StreamRecord
from panes.operators.base import CountingOutput
from panes.spark.layout import ChannelCodes, Layout, Record, channel_mask
from panes.spark.linear import Step
from panes.time import LONG_MAX, LONG_MIN
from panes.watermarks import (
    AscendingTimestampsWatermarks,
    BoundedOutOfOrdernessWatermarks,
    ColumnTimestampAssigner,
    TimestampsAndWatermarksOperator,
)
from panes.watermarks.time_range import EventTimeRange

SHIFT = 62_135_596_800_000
END_MS = 2**63 // 1000 - 1

EVENT_TIMES = EventTimeRange(1 - SHIFT, END_MS - SHIFT - 1, "the Spark runner")
"""The event times the Spark runner represents: ``[1 - SHIFT, END_MS - SHIFT - 1]`` ms."""


def to_spark_time(flink_time: int) -> int:
    """A Flink timestamp/watermark as shifted Spark milliseconds (``LONG_MAX`` and beyond -> ``END_MS``)."""
    if flink_time >= END_MS - SHIFT:
        return END_MS
    return max(flink_time + SHIFT, 1)


def to_spark_watermark(watermark: int) -> int:
    """A watermark a timestamps step rated, as shifted Spark milliseconds; ``LONG_MAX`` is the end of input.

    Raises ``ValueError`` for a watermark between :data:`EVENT_TIMES` and ``LONG_MAX`` (a generator that
    emits watermarks of its own, beyond the times Spark holds), which would otherwise read as the end.
    """
    if watermark > EVENT_TIMES.highest and watermark != LONG_MAX:
        raise ValueError(
            f"a watermark at {watermark} is beyond {EVENT_TIMES.highest}, the last event time the Spark runner "
            "represents (only the final watermark, Long.MAX_VALUE, may exceed it); keep the watermark "
            "generator's watermarks in the range or run the job on the local runner"
        )
    return to_spark_time(watermark)


def from_spark_watermark(raw: int) -> int:
    """Spark's watermark (ms, shifted) as Flink's: ``LONG_MIN`` before any, ``LONG_MAX`` at the end."""
    if raw <= 0:
        return LONG_MIN
    if raw >= END_MS:
        return LONG_MAX
    return raw - SHIFT


def held_back(watermark: int, lag: int) -> int:
    """``watermark`` less ``lag`` (``LONG_MIN`` at least; the end of input, ``LONG_MAX``, stays)."""
    if lag == 0 or watermark in (LONG_MIN, LONG_MAX):
        return watermark
    return max(LONG_MIN, watermark - lag)


def ahead(time: int, lag: int) -> int:
    """The watermark of Spark at which one held back by ``lag`` reaches ``time`` (``LONG_MAX`` at most)."""
    return time + lag if time < LONG_MAX - lag else LONG_MAX


_ISO = re.compile(r"^([+-]?\d{4,})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?Z$")


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a proleptic Gregorian date (any year, as ``java.time`` counts them)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + day_of_era - 719_468


def spark_instant_ms(text: str) -> int:
    """Spark's ISO-8601 instant text (``2026-01-01T00:00:00.000Z``, also ``+294247-...`` beyond year 9999) as
    epoch milliseconds; raises ``ValueError`` for other text."""
    found = _ISO.match(text)
    if found is None:
        raise ValueError(f"not an ISO-8601 UTC instant: {text!r}")
    year, month, day, hour, minute, second = (int(part) for part in found.groups()[:6])
    fraction = (found.group(7) or "0").ljust(3, "0")[:3]
    seconds = _days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second
    return seconds * 1000 + int(fraction)


def progress_watermark(progress: Any) -> int:
    """The Flink watermark (epoch ms, unshifted) a micro-batch ran with, from Spark's progress entry of it (a
    dict or Spark's progress object; Spark reports the batch's watermark, which the batches before it moved):
    ``LONG_MIN`` when Spark reports none."""
    event_time = progress.get("eventTime") if hasattr(progress, "get") else getattr(progress, "eventTime", None)
    text = (event_time or {}).get("watermark")
    if not text:
        return LONG_MIN
    return from_spark_watermark(spark_instant_ms(text))


def rate_watermarks(
    operator: TimestampsAndWatermarksOperator, rows: Sequence[Record], step: Step
) -> tuple[list[Record], list[int]]:
    """Assign timestamps to ``rows`` and rate each with the watermark its generator emits after it.

    Returns the stamped rows (bad records go to the step's error channel, if any) and the ratings. Only the rows
    of channels a later step reads are returned (``step.needed_outputs``: a stream whose only reader is its error
    output gives no main rows); every row is rated.
    """
    stamped: list[Record] = []
    ratings: list[int] = []
    own = step.transformation.id
    main = (own, None)
    needed = step.needed_outputs
    keep_main = main in needed
    consumed = step.consumed
    operator.error_tag = step.transformation.error_tag
    generator, emitter = operator.watermark_generator, operator.watermark_output
    assert generator is not None and emitter is not None
    capture = _capture_of(operator)
    captured = capture.records
    # the built-in periodic generators emit their running maximum minus the bound: read it directly
    bounded = generator if _bounded(generator) else None
    assigner = operator.timestamp_assigner
    column = assigner.column if bounded is not None and type(assigner) is ColumnTimestampAssigner else None
    fast = 0
    for channel, value, timestamp, seq, phase in rows:
        if channel not in consumed:
            continue
        if column is not None and bounded is not None and type(value) is dict:
            # the common case, a dict row with an int timestamp column, without the operator's generality
            extracted = value.get(column)
            if type(extracted) is int and EVENT_TIMES.lowest <= extracted <= EVENT_TIMES.highest:
                bounded.on_event(value, extracted, emitter)
                ratings.append(bounded.current_watermark())
                if keep_main:
                    stamped.append(Record(main, value, extracted, seq, phase))
                fast += 1
                continue
        operator.process_record(StreamRecord(value, timestamp))
        if bounded is not None:
            ratings.append(bounded.current_watermark())
        else:
            generator.on_periodic_emit(emitter)
            ratings.append(operator.emitted_watermark)
        if keep_main:
            stamped.extend(Record(main, out.value, out.timestamp, seq, phase) for out in captured)
        captured.clear()
        if capture.side:
            stamped.extend(
                Record((own, tag), out.value, out.timestamp, seq, phase)
                for tag, out in capture.side
                if (own, tag) in needed
            )
            capture.side.clear()
    # the rows the direct path stamped, counted as the operator counts the others
    operator.counters.records_in += fast
    operator.counters.records_out += fast
    return stamped, ratings


def timestamps_operator(step: Step) -> TimestampsAndWatermarksOperator:
    """A fresh, open timestamps operator of ``step`` (each Spark partition of each micro-batch gets one); it
    refuses records outside the Spark runner's event times (``watermarks.EVENT_TIMES``)."""
    factory = step.transformation.operator_factory  # type: ignore[attr-defined]
    operator: TimestampsAndWatermarksOperator = factory()
    operator.event_time_range = EVENT_TIMES
    operator.setup(_Capture([]), task_name=step.transformation.name)  # as its error records name it
    operator.open()
    return operator


def _bounded(generator: Any) -> TypeGuard[BoundedOutOfOrdernessWatermarks]:
    """Whether ``generator`` is one of the built-in bounded out-of-orderness generators (not a subclass, which may
    emit otherwise), whose watermark after a row is :meth:`~BoundedOutOfOrdernessWatermarks.current_watermark`."""
    return type(generator) in (BoundedOutOfOrdernessWatermarks, AscendingTimestampsWatermarks)


def _capture_of(operator: TimestampsAndWatermarksOperator) -> _Capture:
    """The capture :func:`timestamps_operator` set ``operator`` up with, emptied."""
    output = operator.output
    capture = output.output if isinstance(output, CountingOutput) else output
    assert isinstance(capture, _Capture), "a timestamps operator of the Spark runner comes from timestamps_operator"
    capture.records.clear()
    capture.side.clear()
    return capture


class _Capture:
    def __init__(self, records: list[StreamRecord[Any]]) -> None:
        self.records = records
        self.side: list[tuple[str, StreamRecord[Any]]] = []

    def collect(self, record: StreamRecord[Any]) -> None:
        self.records.append(record)

    def collect_side(self, tag: Any, record: StreamRecord[Any]) -> None:
        self.side.append((tag.tag_id, record))

    def emit_watermark(self, watermark: Any) -> None:
        return None

    def emit_watermark_status(self, status: Any) -> None:
        return None


def stamp_columns(
    batch: pa.RecordBatch, step: Step, operator: TimestampsAndWatermarksOperator, codes: ChannelCodes
) -> tuple[pa.RecordBatch, int | None] | None:
    """A timestamps step on columns, when it can run there: its input is typed records, its assigner reads an
    integer column and its generator is bounded out-of-orderness (or monotonous). Returns the batch with the
    step's rows stamped (and moved to its output) and the largest watermark it rated; ``None`` when the step
    needs records (another strategy, or a batch with a missing timestamp or one outside the Spark runner's
    event times: its bad records need the operator)."""
    generator, assigner = operator.watermark_generator, operator.timestamp_assigner
    if not _bounded(generator):
        return None
    if type(assigner) is not ColumnTimestampAssigner or len(step.consumed) != 1:
        return None
    (source,) = step.consumed
    target = (step.transformation.id, None)
    record_type = codes.types.get(codes.code[source])
    if record_type is None or record_type.shape == "scalar" or target not in codes.code:
        return None
    index = record_type.arrow_type.get_field_index(assigner.column)
    if index < 0 or not pa.types.is_integer(record_type.arrow_type.field(index).type):
        return None
    channel = batch.column("ch").to_numpy(zero_copy_only=False)
    mine = channel == codes.code[source]
    if not mine.any():
        return batch, None
    rows = batch.filter(pa.array(mine))
    values = rows.column(codes.column(codes.code[source]))
    timestamps = values.field(index)
    if timestamps.null_count:
        return None
    ts = timestamps.to_numpy(zero_copy_only=False).astype(np.int64)
    top = int(ts.max())
    if top > EVENT_TIMES.highest or int(ts.min()) < EVENT_TIMES.lowest:
        return None  # records outside Spark's times: the operator refuses them
    emitter = operator.watermark_output
    assert emitter is not None
    generator.on_event(None, top, emitter)
    best = generator.current_watermark()
    count = rows.num_rows
    operator.counters.records_in += count
    operator.counters.records_out += count
    stamped = pa.RecordBatch.from_arrays(
        [
            pa.array(np.full(count, codes.code[target], dtype=np.int32)),
            pa.array(ts),
            rows.column("seq"),
            rows.column("ph"),
            values,
        ],
        names=["ch", "ts", "seq", "ph", codes.column(codes.code[target])],
    )
    keep = ~mine | (channel_mask(batch, codes.codes(step.passthrough)) if step.passthrough else False)
    parts = [stamped] + ([batch.filter(pa.array(keep))] if keep.any() else [])
    channels = {codes.channel[c] for c in np.unique(channel[keep]).tolist() if c in codes.channel} | {target}
    layout = Layout(codes, channels)
    merged = pa.Table.from_batches([layout.adapt(part) for part in parts]).combine_chunks().to_batches()
    return (merged[0] if merged else layout.adapt(stamped)), best
