"""The internal timer service of a keyed operator (Flink's ``InternalTimerServiceImpl``).

Timers are scoped to a key and a namespace and de-duplicated per ``(timestamp, key, namespace)``.
Event-time timers fire when a watermark ``W`` arrives, for every timer with ``timestamp <= W``; timers
registered while firing with ``timestamp <= W`` fire in the same pass. Processing-time timers fire when
processing time reaches them. Before a timer fires the key context is set to its key. A pass whose
callbacks keep registering timers that are already due stops with ``TimerLoopError`` (``panes.timers.loops``
states the rule).

In BATCH execution (``panes.datastream.runtime_mode``) a keyed operator sees one key at a time and
:meth:`InternalTimerService.end_key` fires every timer of the key that ended, as Flink's
``BatchExecutionInternalTimeService`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from panes.time import LONG_MAX, LONG_MIN
from panes.timers.clock import ProcessingTimeService
from panes.timers.heap import InternalTimer, TimerHeap
from panes.timers.loops import EVENT_TIME, PROCESSING_TIME, TimerLoopError, TimerPassGuard


class Triggerable(Protocol):
    def on_event_time(self, timer: InternalTimer) -> None: ...

    def on_processing_time(self, timer: InternalTimer) -> None: ...


class InternalTimerService:
    """Event-time and processing-time timers of one operator, for whatever key is current.

    ``pass_before`` is the current key's watermark before the timer pass in progress when a service keeps time
    per key (``panes.timers.key_time``), else ``None``.

    ``current_watermark`` starts at ``LONG_MIN`` (Flink's "no watermark yet"). ``owner`` names what registers
    the timers in error messages (default: the triggerable's class name). When a timer's callback raises,
    ``on_failure(timer, error, event_time)`` is told and the other due timers still fire (without it, the
    error propagates; a :class:`TimerLoopError` always does).
    """

    pass_before: int | None = None
    quiet_pass: bool = False
    """Whether the timer pass in progress moves a quiet key's time (``panes.timers.key_time``)."""

    def __init__(
        self,
        get_current_key: Callable[[], Any],
        set_current_key: Callable[[Any], None],
        triggerable: Triggerable,
        processing_time_service: ProcessingTimeService,
        owner: str | None = None,
        on_failure: Callable[[InternalTimer, Exception, bool], None] | None = None,
    ) -> None:
        self._get_key = get_current_key
        self._on_failure = on_failure
        self._set_key = set_current_key
        self._triggerable = triggerable
        self._clock = processing_time_service
        self.event_time_timers = TimerHeap()
        self.processing_time_timers = TimerHeap()
        self.current_watermark: int = LONG_MIN
        self._quiesced = False
        self.guard = TimerPassGuard(owner if owner is not None else type(triggerable).__name__)

    def current_processing_time(self) -> int:
        return self._clock.get_current_processing_time()

    def register_event_time_timer(self, namespace: Any, time: int) -> None:
        if self._quiesced:
            return
        if self.event_time_timers.add(time, self._get_key(), namespace):
            self.guard.registered(EVENT_TIME, time)

    def delete_event_time_timer(self, namespace: Any, time: int) -> None:
        self.event_time_timers.remove(time, self._get_key(), namespace)

    def register_processing_time_timer(self, namespace: Any, time: int) -> None:
        if self._quiesced:
            return
        if self.processing_time_timers.add(time, self._get_key(), namespace):
            self.guard.registered(PROCESSING_TIME, time)

    def delete_processing_time_timer(self, namespace: Any, time: int) -> None:
        self.processing_time_timers.remove(time, self._get_key(), namespace)

    event_time_pass: Callable[[int], None] | None = None
    """A pass its owner installed that fires the due event-time timers exactly as :meth:`advance_watermark` does
    (the same timers in the same order, the same effects), only faster (``panes.windowing.runs``); ``None``:
    the service's own."""

    def advance_watermark(self, time: int) -> None:
        """Set the watermark to ``time`` and fire every event-time timer at or before it, in queue order."""
        self.current_watermark = time
        if self.event_time_pass is not None:
            self.event_time_pass(time)
            return
        self._fire_due(self.event_time_timers, time, EVENT_TIME, self._triggerable.on_event_time)

    def advance_processing_time(self, time: int) -> None:
        """Fire every processing-time timer at or before ``time``, in queue order."""
        self._fire_due(self.processing_time_timers, time, PROCESSING_TIME, self._triggerable.on_processing_time)

    def end_key(self) -> None:
        """BATCH execution: the current key's input ended. Fire all its timers at watermark ``LONG_MAX``: the
        event-time ones, then the processing-time ones (whatever the processing time), each in time order;
        timers registered meanwhile are ignored (the service is quiesced, so a callback cannot loop). Then the
        watermark is ``LONG_MIN`` again, for the next key."""
        self.current_watermark = LONG_MAX
        self._quiesced = True
        try:
            self._fire_due(self.event_time_timers, LONG_MAX, EVENT_TIME, self._triggerable.on_event_time)
            self._fire_due(self.processing_time_timers, LONG_MAX, PROCESSING_TIME, self._triggerable.on_processing_time)
        finally:
            self._quiesced = False
            self.current_watermark = LONG_MIN

    def _fire_due(self, queue: TimerHeap, time: int, domain: str, fire: Callable[[InternalTimer], None]) -> None:
        """One timer pass: fire the due timers, those registered meanwhile included, under the loop guard; a
        callback that raises is reported to ``on_failure`` when there is one."""
        guard = self.guard
        try:
            poll_due = queue.poll_due
            while True:
                head = poll_due(time)
                if head is None:
                    return
                self._set_key(head.key)
                guard.enter(domain, head)
                try:
                    fire(head)
                except TimerLoopError:
                    raise
                except Exception as error:
                    if self._on_failure is None:
                        raise
                    self._on_failure(head, error, domain == EVENT_TIME)
                guard.leave()
        finally:
            guard.end_pass()

    def next_event_time_timer(self) -> int | None:
        head = self.event_time_timers.peek()
        return None if head is None else head.timestamp

    def next_processing_time_timer(self) -> int | None:
        head = self.processing_time_timers.peek()
        return None if head is None else head.timestamp

    def snapshot(self) -> dict[str, Any]:
        return {
            "event": self.event_time_timers.snapshot(),
            "processing": self.processing_time_timers.snapshot(),
            "watermark": self.current_watermark,
        }

    def restore(self, data: dict[str, Any], changes: list[dict[str, Any]] | None = None) -> None:
        """Restore a :meth:`snapshot`, then the :meth:`take_changes` made after it, in order."""
        changes = changes or []
        self.event_time_timers.restore(data["event"], (op for change in changes for op in change["event"]))
        self.processing_time_timers.restore(
            data["processing"], (op for change in changes for op in change["processing"])
        )
        self.current_watermark = changes[-1]["watermark"] if changes else data["watermark"]

    def track_changes(self) -> None:
        """Record the timers' operations from now on (see :meth:`take_changes`)."""
        self.event_time_timers.track_operations()
        self.processing_time_timers.track_operations()

    def take_changes(self) -> dict[str, Any]:
        """What changed since the last call: the operations of both timer queues, and the watermark."""
        return {
            "event": self.event_time_timers.take_operations(),
            "processing": self.processing_time_timers.take_operations(),
            "watermark": self.current_watermark,
        }

    def forget_changes(self) -> None:
        """Start recording afresh (after a full snapshot)."""
        for queue in (self.event_time_timers, self.processing_time_timers):
            if queue.operations is not None:
                queue.operations = []
