"""Time on Spark: how panes timestamps and watermarks map to Spark's watermark and timers.

Spark's watermark is kept non-negative and reads 0 before any data. panes shifts every watermark and timer
by :data:`SHIFT` (the milliseconds from 0001-01-01 to 1970-01-01), so negative event times are exact and a
raw 0 means "no watermark yet" (Flink's ``LONG_MIN``). :data:`END_MS` is the largest millisecond a Spark
timestamp holds; it stands for Flink's final ``LONG_MAX`` watermark. Event times outside
:data:`EVENT_TIMES` (about years 1 to 292,000) have no exact Spark counterpart: the timestamps step refuses
the records that carry them as bad records, and a watermark beyond them (other than the final one) fails
the job (:func:`to_spark_watermark`), so neither is ever read as the end of input.
"""

from __future__ import annotations

from panes.time import LONG_MAX, LONG_MIN
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
