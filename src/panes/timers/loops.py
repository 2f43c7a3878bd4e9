"""Stopping a timer pass whose callbacks keep asking to be called again for a time already reached.

A *timer pass* fires every timer due at the pass's time: all event-time timers ``<= W`` when watermark ``W``
arrives, all processing-time timers ``<= now`` when processing time moves to ``now``. As in Flink, a timer
registered during the pass that is already due fires in the same pass. Flink keeps looping as long as
timers are due, so a callback that registers a due timer every time it runs never lets the pass end: the job
hangs (FLINK-35069: ``ContinuousProcessingTimeTrigger`` re-registered its fire time at the end of an
event-time window, which it had just fired, over and over).

The rule panes applies. While the callback of a timer at time ``t`` runs, a registration of a new timer in
the same time domain at a time ``<= t`` is a *non-forward* registration: it is due, and it does not move the
pass on in time (it is that same timer again, or one the pass already went past). Each timer's
``(domain, key, namespace)`` may make :data:`NON_FORWARD_LIMIT` non-forward registrations within one pass;
the next one raises :class:`TimerLoopError`, naming the timer's owner (the window operator's trigger, the
keyed process function) and the timer, once the callback has returned.

The rule never trips on a chain that moves forward, however long (a continuous trigger catching up over a
large watermark jump registers each next fire time *after* the one firing), nor on a timer registered at the
same time as an already queued one (timers are de-duplicated, so that adds nothing). Flink's own triggers
make no non-forward registration from a timer callback (but for a next fire time whose Java ``long`` sum
wraps around at the very end of the range, once); a user trigger that does a few times still runs as in Flink.
"""

from __future__ import annotations

from typing import Any

from panes.errors import UnsupportedOperationError
from panes.timers.heap import InternalTimer

NON_FORWARD_LIMIT = 100
"""Non-forward registrations one timer's ``(domain, key, namespace)`` may make within one timer pass."""

EVENT_TIME = "event-time"
PROCESSING_TIME = "processing-time"


class TimerLoopError(UnsupportedOperationError):
    """A timer pass would never end: a timer callback keeps registering timers that are already due. It always
    fails the job (never goes to an error output): the job itself, not a record, is at fault."""


class TimerPassGuard:
    """Counts non-forward registrations during a timer pass (see the module docstring) for one timer service.

    ``owner`` names what registers the timers (for example ``"trigger EventTimeTrigger() of Window(...)"``);
    it is part of the error message.
    """

    __slots__ = ("_counts", "_domain", "_firing", "_violation", "owner")

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self._firing: InternalTimer | None = None
        self._domain = ""
        self._counts: dict[tuple[str, Any, Any], int] = {}
        self._violation: str | None = None

    def enter(self, domain: str, timer: InternalTimer) -> None:
        """``timer`` of ``domain`` is about to fire."""
        self._firing = timer
        self._domain = domain

    def registered(self, domain: str, time: int) -> None:
        """A new timer of ``domain`` at ``time`` was queued (call only when it was not queued already)."""
        firing = self._firing
        if firing is None or domain != self._domain or time > firing.timestamp:
            return
        slot = (domain, firing.key, firing.namespace)
        count = self._counts.get(slot, 0) + 1
        self._counts[slot] = count
        if count > NON_FORWARD_LIMIT and self._violation is None:
            self._violation = (
                f"{self.owner} keeps registering {domain} timers that are already due while its timer at "
                f"{firing.timestamp} (key {firing.key!r}, namespace {firing.namespace!r}) fires: "
                f"{count} registrations at or before {firing.timestamp} in one pass (the last at {time}), so "
                "the pass would never end (Flink hangs here, see FLINK-35069). A trigger or timer callback must "
                "not register a timer at or before the time of the timer being fired, over and over; register "
                "the next timer later than the current one, or none."
            )

    def leave(self) -> None:
        """The callback of the timer that was firing returned; raises :class:`TimerLoopError` on a violation."""
        self._firing = None
        if self._violation is not None:
            message, self._violation = self._violation, None
            raise TimerLoopError(message)

    def end_pass(self) -> None:
        """The pass is over (or failed): forget its counts."""
        self._firing = None
        self._violation = None
        if self._counts:
            self._counts = {}
