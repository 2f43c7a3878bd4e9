"""Event time per key: each key of a keyed window has a watermark of its own (beyond Flink).

Flink keeps one watermark per operator: a key whose clock runs behind the others (a device with a skewed clock,
one uploading hours of buffered readings) has all its data judged late by the others' time. Under
:class:`PerKeyWatermarks` (``WindowedStream.watermark_per_key``) each key's time is what the watermark strategy
gives for that key's elements alone:

- the key's own watermark is ``max(timestamp of the key's elements) - out_of_orderness - 1`` (Flink's
  ``BoundedOutOfOrdernessWatermarks`` run on the key's elements; ``LONG_MIN`` before its first element), moved
  on after each of the key's elements is processed, so an element never makes itself late;
- the stream's watermark still bounds it: a key's *effective* watermark is
  ``max(own watermark, stream watermark - max_lag)`` (``LONG_MAX`` at the end of input), so a key that falls more
  than ``max_lag`` behind the stream has its windows fired and its older elements judged late by the stream's
  time minus the lag, and no key keeps state open for ever;
- the key's windows fire, its elements are judged late and its state is cleaned up by its effective watermark;
- with a quiet timeout (:meth:`PerKeyWatermarks.with_quiet_timeout`), a key without elements for that long (in
  processing time) has its own watermark moved to the end of its latest open window: its windows fire as if its
  time had reached their ends, and its later elements are judged by that time; with a stream quiet timeout
  (:meth:`PerKeyWatermarks.with_stream_quiet_timeout`), every key's windows are closed so when the stream's
  watermark has not moved for that long.

So a key whose own watermark stays ahead of ``stream watermark - max_lag`` gets exactly what Flink gives for
that key's elements run as a stream of their own. The window step forwards ``stream watermark - max_lag``
downstream: no result of a key fired on time afterwards is behind it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from panes.time import LONG_MAX, LONG_MIN, DurationLike, duration_ms


@dataclass(frozen=True)
class PerKeyWatermarks:
    """How each key's watermark is made (see the module docstring). Build it with
    :meth:`for_bounded_out_of_orderness` or :meth:`for_monotonous_timestamps`, then :meth:`with_max_lag`.

    ``out_of_orderness`` and ``max_lag`` are milliseconds, both ``>= 0``; ``max_lag`` is ``None`` until set
    (``WindowedStream.watermark_per_key`` refuses a strategy without it).
    """

    out_of_orderness: int
    max_lag: int | None = None
    quiet_timeout: int | None = None
    stream_quiet_timeout: int | None = None

    def __post_init__(self) -> None:
        for name in ("out_of_orderness", "max_lag", "quiet_timeout", "stream_quiet_timeout"):
            value = getattr(self, name)
            if value is None and name != "out_of_orderness":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an int of milliseconds >= 0, got {value!r}")
        if self.quiet_timeout == 0 or self.stream_quiet_timeout == 0:
            raise ValueError("a quiet timeout must be > 0 ms")

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: DurationLike) -> PerKeyWatermarks:
        """Each key's watermark trails the largest timestamp of its elements by ``max_out_of_orderness`` (plus
        1 ms, as Flink's generator). Raises ``ValueError`` when it is negative."""
        millis = duration_ms(max_out_of_orderness, name="max_out_of_orderness")
        if millis < 0:
            raise ValueError(f"max_out_of_orderness cannot be negative (got {millis} ms)")
        return PerKeyWatermarks(millis)

    @staticmethod
    def for_monotonous_timestamps() -> PerKeyWatermarks:
        """Each key's timestamps ascend: its watermark is its largest timestamp minus 1 ms."""
        return PerKeyWatermarks(0)

    def with_max_lag(self, max_lag: DurationLike) -> PerKeyWatermarks:
        """How far a key's time may fall behind the stream's watermark (``timedelta`` or ``int`` ms, ``>= 0``):
        past it, the key's time is the stream's watermark minus ``max_lag``. Raises ``ValueError`` when
        negative."""
        millis = duration_ms(max_lag, name="max_lag")
        if millis < 0:
            raise ValueError(f"max_lag cannot be negative (got {millis} ms)")
        return replace(self, max_lag=millis)

    def with_quiet_timeout(self, timeout: DurationLike) -> PerKeyWatermarks:
        """Close a key's windows when it goes quiet: once ``timeout`` of processing time (``timedelta`` or ``int``
        ms, ``> 0``) has passed since the key's last element, the key's time moves to the end of its latest open
        window, firing what the watermark reaching the ends of its open windows would fire (the panes say so:
        ``PaneInfo.closed_by_quiet``). Raises ``ValueError`` when not positive."""
        millis = duration_ms(timeout, name="timeout")
        if millis <= 0:
            raise ValueError(f"the quiet timeout must be > 0 ms (got {millis} ms)")
        return replace(self, quiet_timeout=millis)

    def with_stream_quiet_timeout(self, timeout: DurationLike) -> PerKeyWatermarks:
        """Close every key's windows when the stream goes quiet: once its watermark has not moved for ``timeout``
        of processing time (``timedelta`` or ``int`` ms, ``> 0``; counted from the step's first element before
        any watermark), each key's time moves to the end of its latest open window, as with
        :meth:`with_quiet_timeout`, once per quiet spell. Raises ``ValueError`` when not positive."""
        millis = duration_ms(timeout, name="timeout")
        if millis <= 0:
            raise ValueError(f"the stream's quiet timeout must be > 0 ms (got {millis} ms)")
        return replace(self, stream_quiet_timeout=millis)

    def key_watermark(self, timestamp: int) -> int:
        """The watermark an element at ``timestamp`` lets its key reach (never below ``LONG_MIN``)."""
        return max(timestamp, LONG_MIN + self.out_of_orderness + 1) - self.out_of_orderness - 1

    def floor(self, stream_watermark: int) -> int:
        """The least effective watermark of any key when the stream's watermark is ``stream_watermark``:
        ``stream_watermark - max_lag`` (``LONG_MIN`` at least), and ``LONG_MAX`` at the end of input."""
        if stream_watermark == LONG_MAX:
            return LONG_MAX
        lag = self.max_lag if self.max_lag is not None else LONG_MAX
        return max(LONG_MIN, stream_watermark - lag)

    def describe(self) -> str:
        """The option as ``panes explain`` shows it (and a restart fingerprint records it)."""
        lag = "no limit" if self.max_lag is None else f"{self.max_lag} ms"
        quiet = "" if self.quiet_timeout is None else f"; a key quiet for {self.quiet_timeout} ms closes its windows"
        if self.stream_quiet_timeout is not None:
            quiet += f"; a stream quiet for {self.stream_quiet_timeout} ms closes every key's windows"
        return (
            f"watermark per key: the key's largest timestamp - {self.out_of_orderness} ms - 1, at least the "
            f"stream's watermark - {lag}{quiet}"
        )


def check_per_key_watermarks(watermarks: object) -> PerKeyWatermarks:
    """``watermarks`` when a keyed step can keep time per key with it. Raises ``TypeError`` for anything but
    :class:`PerKeyWatermarks` and ``ValueError`` when its ``max_lag`` is not set (how far a key may fall behind
    the stream bounds the state the step keeps)."""
    if not isinstance(watermarks, PerKeyWatermarks):
        raise TypeError(
            "watermark_per_key takes PerKeyWatermarks (PerKeyWatermarks.for_bounded_out_of_orderness(...)"
            f".with_max_lag(...)), got {type(watermarks).__name__}"
        )
    if watermarks.max_lag is None:
        raise ValueError(
            "watermark_per_key needs a max_lag: how far a key's time may fall behind the stream's watermark "
            "before the stream's time (minus the lag) closes its windows; add .with_max_lag(Duration...)"
        )
    return watermarks
