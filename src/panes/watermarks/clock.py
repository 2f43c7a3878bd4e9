"""Clocks for idleness detection: Flink's ``RelativeClock`` and ``PausableRelativeClock``, in milliseconds.

Idleness is measured on a processing-time clock: any object with ``get_current_processing_time() -> int``
(panes' :class:`~panes.timers.clock.ProcessingTimeService`). :class:`PausableClock` wraps such a clock and
hides the periods during which it was paused, so a source that is blocked (back-pressured, or waiting for
watermark alignment) is not mistaken for an idle one.
"""

from __future__ import annotations

from panes.timers.clock import ProcessingTimeService


class PausableClock:
    """A clock that stops advancing while paused (Flink's ``PausableRelativeClock``).

    ``get_current_processing_time()`` is the base clock's time minus the total time spent paused so far
    (including the current pause). Pauses nest: after ``pause()`` N times, ``unpause()`` must be called N
    times before time advances again. ``unpause()`` without a matching ``pause()`` raises ``RuntimeError``.
    """

    __slots__ = ("_accumulated_paused", "_base", "_paused_count", "_paused_since")

    def __init__(self, base: ProcessingTimeService) -> None:
        self._base = base
        self._accumulated_paused = 0
        self._paused_since = 0
        self._paused_count = 0

    @property
    def is_paused(self) -> bool:
        return self._paused_count > 0

    def get_current_processing_time(self) -> int:
        now = self._base.get_current_processing_time()
        paused = self._accumulated_paused
        if self._paused_count:
            paused += now - self._paused_since
        return now - paused

    def pause(self) -> None:
        """Stop the clock (nests with earlier pauses)."""
        if self._paused_count == 0:
            self._paused_since = self._base.get_current_processing_time()
        self._paused_count += 1

    def unpause(self) -> None:
        """Undo one :meth:`pause`; the clock runs again once every pause has been undone."""
        if self._paused_count < 1:
            raise RuntimeError("PausableClock.unpause() called more often than pause()")
        self._paused_count -= 1
        if self._paused_count == 0:
            self._accumulated_paused += self._base.get_current_processing_time() - self._paused_since
