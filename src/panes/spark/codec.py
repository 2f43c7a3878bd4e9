"""Time on Spark: how panes timestamps and watermarks map to Spark's watermark and timers.

Spark's watermark is kept non-negative and reads 0 before any data. panes shifts every watermark and timer
by :data:`SHIFT` (the milliseconds from 0001-01-01 to 1970-01-01), so negative event times are exact and a
raw 0 means "no watermark yet" (Flink's ``LONG_MIN``). :data:`END_MS` is the largest millisecond a Spark
timestamp holds; it stands for Flink's final ``LONG_MAX`` watermark.
"""

from __future__ import annotations

from panes.time import LONG_MAX, LONG_MIN

SHIFT = 62_135_596_800_000
END_MS = 2**63 // 1000 - 1


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
