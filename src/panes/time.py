"""Time at the API edge, converted once into ``int`` epoch milliseconds.

Inside panes every instant and every duration is an ``int`` of milliseconds, as Flink's ``long`` and
Spark's ``...InMs``. Users may pass ``datetime.timedelta`` for durations and timezone-aware
``datetime.datetime`` for instants; both go through :func:`to_millis`, which uses integer arithmetic only
(no floats, so no rounding surprises) and rounds sub-millisecond parts like ``java.time``: durations
towards zero (``Duration.toMillis``), instants towards negative infinity (``Instant.toEpochMilli``).
"""

from __future__ import annotations

import numbers
from datetime import datetime, timedelta, timezone

LONG_MIN: int = -(2**63)
"""Flink's ``Long.MIN_VALUE``: the watermark before any watermark, and the "no timestamp" marker."""

LONG_MAX: int = 2**63 - 1
"""Flink's ``Long.MAX_VALUE``: the final watermark of a bounded input and ``GlobalWindow.max_timestamp()``."""

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class Time:
    """PyFlink's ``Time`` (``pyflink.common.Time``): a duration spelled ``Time.seconds(5)``, accepted wherever
    panes takes a duration (window sizes, gaps, lateness, intervals).

    ``Time.milliseconds/seconds/minutes/hours/days(n)`` take an ``int`` (``TypeError`` otherwise, as a duration
    is whole milliseconds); ``to_milliseconds()`` is the duration in ``int`` milliseconds. Negative values are
    allowed here (an offset may be negative); each use checks its own bounds.
    """

    __slots__ = ("_ms",)
    _ms: int

    def __init__(self, milliseconds: int) -> None:
        if isinstance(milliseconds, bool) or not isinstance(milliseconds, numbers.Integral):
            raise TypeError(f"Time takes an int, got {type(milliseconds).__name__} ({milliseconds!r})")
        self._ms = int(milliseconds)

    @staticmethod
    def milliseconds(milliseconds: int) -> Time:
        return Time(milliseconds)

    @staticmethod
    def seconds(seconds: int) -> Time:
        return Time(_whole(seconds, "seconds") * 1_000)

    @staticmethod
    def minutes(minutes: int) -> Time:
        return Time(_whole(minutes, "minutes") * 60_000)

    @staticmethod
    def hours(hours: int) -> Time:
        return Time(_whole(hours, "hours") * 3_600_000)

    @staticmethod
    def days(days: int) -> Time:
        return Time(_whole(days, "days") * 86_400_000)

    def to_milliseconds(self) -> int:
        return self._ms

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Time) and other._ms == self._ms

    def __hash__(self) -> int:
        return hash(("Time", self._ms))

    def __repr__(self) -> str:
        return f"Time.milliseconds({self._ms})"

    def __reduce__(self) -> tuple[type[Time], tuple[int]]:
        return (Time, (self._ms,))


def _whole(value: int, unit: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"Time.{unit} takes an int, got {type(value).__name__} ({value!r})")
    return int(value)


class Duration(Time):
    """PyFlink's ``Duration`` (``pyflink.common.Duration``, Java's ``java.time.Duration``), spelled
    ``Duration.of_seconds(5)``: a :class:`Time`, so accepted wherever panes takes a duration (watermark bounds,
    idleness, window sizes, timers' offsets).

    ``of_days/of_hours/of_minutes/of_seconds/of_millis(n)`` take an ``int`` (``TypeError`` otherwise);
    ``of_nanos(n)`` truncates towards zero to whole milliseconds, as ``Duration.toMillis`` does.
    """

    __slots__ = ()

    @staticmethod
    def of_millis(millis: int) -> Duration:
        return Duration(Time.milliseconds(millis).to_milliseconds())

    @staticmethod
    def of_seconds(seconds: int) -> Duration:
        return Duration(Time.seconds(seconds).to_milliseconds())

    @staticmethod
    def of_minutes(minutes: int) -> Duration:
        return Duration(Time.minutes(minutes).to_milliseconds())

    @staticmethod
    def of_hours(hours: int) -> Duration:
        return Duration(Time.hours(hours).to_milliseconds())

    @staticmethod
    def of_days(days: int) -> Duration:
        return Duration(Time.days(days).to_milliseconds())

    @staticmethod
    def of_nanos(nanos: int) -> Duration:
        whole = _whole(nanos, "nanos")
        return Duration(-((-whole) // 1_000_000) if whole < 0 else whole // 1_000_000)

    def __repr__(self) -> str:
        return f"Duration.of_millis({self.to_milliseconds()})"

    def __reduce__(self) -> tuple[type[Time], tuple[int]]:
        return (Duration, (self.to_milliseconds(),))


DurationLike = timedelta | int | Time
"""A duration: ``timedelta``, ``int`` milliseconds, PyFlink's ``Time`` or ``Duration``."""

Instant = datetime | int
"""An instant: timezone-aware ``datetime`` or ``int`` epoch milliseconds."""


def _micros(value: timedelta) -> int:
    return (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds


def _duration_ms(value: timedelta) -> int:
    """Like ``java.time.Duration.toMillis()``: sub-millisecond parts truncate towards zero."""
    micros = _micros(value)
    return -((-micros) // 1_000) if micros < 0 else micros // 1_000


def _instant_ms(value: datetime) -> int:
    """Like ``java.time.Instant.toEpochMilli()``: sub-millisecond parts floor."""
    return _micros(value - _EPOCH) // 1_000


def to_millis(value: timedelta | datetime | int, *, name: str = "value") -> int:
    """Convert a duration or an instant to ``int`` milliseconds.

    Accepts ``int`` (any integral type except ``bool``, already milliseconds), ``timedelta`` (a duration)
    and timezone-aware ``datetime`` (an instant, as epoch milliseconds). Sub-millisecond parts are
    truncated towards zero for durations and floored for instants, as ``java.time`` does. The result
    must fit Java's ``long`` ``[LONG_MIN, LONG_MAX]``.

    Raises ``TypeError`` for ``bool``, floats, naive datetimes and any other type, naming ``name`` so the
    caller knows which argument to change, and ``ValueError`` when the value is outside the long range.
    """
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int of milliseconds, a timedelta or a datetime, not bool")
    if isinstance(value, numbers.Integral):
        millis = int(value)
    elif isinstance(value, timedelta):
        millis = _duration_ms(value)
    elif isinstance(value, datetime):
        if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
            raise TypeError(
                f"{name} is a naive datetime; pass a timezone-aware datetime "
                "(for example datetime(..., tzinfo=timezone.utc)) or int epoch milliseconds"
            )
        millis = _instant_ms(value)
    else:
        raise TypeError(
            f"{name} must be an int of milliseconds, a timedelta or a datetime, not {type(value).__name__} ({value!r})"
        )
    if not LONG_MIN <= millis <= LONG_MAX:
        raise ValueError(f"{name} = {millis} ms is outside Java's long range [{LONG_MIN}, {LONG_MAX}]")
    return millis


def duration_ms(value: DurationLike, *, name: str = "duration") -> int:
    """A duration (``timedelta``, ``int`` ms or ``Time``) as ``int`` milliseconds; a ``datetime`` is refused."""
    if isinstance(value, datetime):
        raise TypeError(f"{name} is a duration: pass a timedelta or int milliseconds, not a datetime")
    if isinstance(value, Time):
        return to_millis(value.to_milliseconds(), name=name)
    return to_millis(value, name=name)


def timestamp_ms(value: Instant, *, name: str = "timestamp") -> int:
    """An instant (aware ``datetime`` or ``int`` epoch ms) as ``int`` milliseconds; a ``timedelta`` is refused."""
    if isinstance(value, timedelta):
        raise TypeError(f"{name} is an instant: pass a datetime or int epoch milliseconds, not a timedelta")
    return to_millis(value, name=name)


def java_add(a: int, b: int) -> int:
    """``a + b`` as Java adds two ``long``s: a result outside ``[LONG_MIN, LONG_MAX]`` wraps around (two's
    complement), so ``LONG_MAX + 1 == LONG_MIN``. panes computes every window bound, cleanup time and timer
    time that Flink computes with ``long`` arithmetic through this function (or :func:`java_sub`)."""
    total = a + b
    if LONG_MIN <= total <= LONG_MAX:
        return total
    return ((total - LONG_MIN) % 2**64) + LONG_MIN


def java_sub(a: int, b: int) -> int:
    """``a - b`` as Java subtracts two ``long``s (wrapping around like :func:`java_add`)."""
    difference = a - b
    if LONG_MIN <= difference <= LONG_MAX:
        return difference
    return ((difference - LONG_MIN) % 2**64) + LONG_MIN


def java_rem(a: int, b: int) -> int:
    """Java's ``a % b`` for longs: the remainder takes the sign of the dividend (Python's takes the divisor's)."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def format_instant(ms: int) -> str:
    """An epoch-millisecond instant as ISO-8601 UTC text for people (``2026-01-01T00:01:00Z``, with ``.mmm``
    when the milliseconds are not zero). Flink's markers read as words: ``LONG_MIN`` (no watermark or timestamp
    yet) is ``"-inf"``, ``LONG_MAX`` (the end of input) is ``"+inf"``; an instant outside the years 1..9999 is
    shown as its epoch milliseconds."""
    if ms == LONG_MIN:
        return "-inf"
    if ms == LONG_MAX:
        return "+inf"
    try:
        moment = _EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        return f"{ms} ms since 1970-01-01T00:00:00Z"
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    millis = ms % 1000
    return f"{text}.{millis:03d}Z" if millis else f"{text}Z"
