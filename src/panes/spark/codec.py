"""Time on Spark: how panes timestamps and watermarks map to Spark's watermark and timers.

Spark's watermark is kept non-negative and reads 0 before any data. panes shifts every watermark and timer
by :data:`SHIFT` (the milliseconds from 0001-01-01 to 1970-01-01), so negative event times are exact and a
raw 0 means "no watermark yet" (Flink's ``LONG_MIN``). :data:`END_MS` is the largest millisecond a Spark
timestamp holds; it stands for Flink's final ``LONG_MAX`` watermark. Event times outside
:data:`EVENT_TIMES` (about years 1 to 292,000) have no exact Spark counterpart: the timestamps step refuses
the records that carry them as bad records, and a watermark beyond them (other than the final one) fails
the job (:func:`to_spark_watermark`), so neither is ever read as the end of input. Spark's progress reports
the shifted watermark (years around 3990 for today's times): :func:`progress_watermark` reads it back as
Flink's.
"""

from __future__ import annotations

import re
from typing import Any

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
