"""Idleness detection: Flink's ``WatermarksWithIdleness`` and its ``IdlenessTimer``.

Idleness is only evaluated at periodic emits, on a processing-time clock:

- a periodic emit that saw events since the previous one resets the countdown and is not idle;
- the first periodic emit that saw no event since the previous one *starts* the countdown (at that emit's
  time, not at the last event's) and is not idle;
- a later quiet periodic emit is idle when strictly more than ``idle_timeout`` has passed since the countdown
  started.

So an input is marked idle no earlier than ``idle_timeout`` after its last event and at worst about
``idle_timeout`` plus three auto-watermark intervals after it.
"""

from __future__ import annotations

from typing import Any

from panes.time import DurationLike, duration_ms
from panes.timers.clock import ProcessingTimeService
from panes.watermarks.generators import WatermarkGenerator
from panes.watermarks.output import WatermarkOutput


def validate_idle_timeout(idle_timeout: DurationLike) -> int:
    """``idle_timeout`` as ``int`` ms; raises ``ValueError`` unless it is greater than zero."""
    millis = duration_ms(idle_timeout, name="idle_timeout")
    if millis <= 0:
        raise ValueError(f"idle_timeout must be greater than zero (got {millis} ms)")
    return millis


class IdlenessTimer:
    """Decides, at each periodic check, whether the input has been idle for longer than ``idle_timeout``.

    ``activity()`` records an event; ``check_if_idle()`` is called once per periodic emit and applies the
    rules in this module's docstring against ``clock`` (``get_current_processing_time()`` in ms).
    ``idle_timeout`` must be greater than zero (``ValueError`` otherwise).
    """

    __slots__ = ("_clock", "_counter", "_last_counter", "_start_of_inactivity", "idle_timeout")

    def __init__(self, clock: ProcessingTimeService, idle_timeout: DurationLike) -> None:
        self._clock = clock
        self.idle_timeout = validate_idle_timeout(idle_timeout)
        self._counter = 0
        self._last_counter = 0
        self._start_of_inactivity: int | None = None

    def activity(self) -> None:
        """Record that an event arrived."""
        self._counter += 1

    def check_if_idle(self) -> bool:
        """True when no event arrived and the countdown has run for more than ``idle_timeout``."""
        if self._counter != self._last_counter:
            self._last_counter = self._counter
            self._start_of_inactivity = None
            return False
        now = self._clock.get_current_processing_time()
        if self._start_of_inactivity is None:
            self._start_of_inactivity = now
            return False
        return now - self._start_of_inactivity > self.idle_timeout


class WatermarksWithIdleness(WatermarkGenerator):
    """Adds idleness detection to ``generator`` (Flink's ``WatermarksWithIdleness``).

    Every event goes to ``generator`` and counts as activity. At each periodic emit, when the
    :class:`IdlenessTimer` finds the input idle the output is marked idle (once, until the next event) and
    ``generator`` is *not* asked for a watermark; otherwise ``generator.on_periodic_emit`` runs. The output
    becomes active again with the next watermark it emits. ``idle_timeout`` must be greater than zero.
    """

    __slots__ = ("_idle_now", "_timer", "generator")

    def __init__(self, generator: WatermarkGenerator, idle_timeout: DurationLike, clock: ProcessingTimeService) -> None:
        if not isinstance(generator, WatermarkGenerator):
            raise TypeError(f"expected a WatermarkGenerator, got {type(generator).__name__}")
        self._timer = IdlenessTimer(clock, idle_timeout)
        self.generator = generator
        self._idle_now = False

    @property
    def idle_timeout(self) -> int:
        return self._timer.idle_timeout

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        self.generator.on_event(event, event_timestamp, output)
        self._timer.activity()
        self._idle_now = False

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        if self._timer.check_if_idle():
            if not self._idle_now:
                output.mark_idle()
                self._idle_now = True
        else:
            self.generator.on_periodic_emit(output)

    def snapshot_state(self) -> Any:
        timer = self._timer
        return (
            self.generator.snapshot_state(),
            timer._counter,
            timer._last_counter,
            timer._start_of_inactivity,
            self._idle_now,
        )

    def restore_state(self, state: Any) -> None:
        if state is None:
            return
        inner, counter, last_counter, start, idle_now = state
        self.generator.restore_state(inner)
        self._timer._counter, self._timer._last_counter, self._timer._start_of_inactivity = counter, last_counter, start
        self._idle_now = idle_now

    def __repr__(self) -> str:
        return f"WatermarksWithIdleness({self.generator!r}, {self.idle_timeout} ms)"
