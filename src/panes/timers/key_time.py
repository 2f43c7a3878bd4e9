"""A timer service whose event time is kept per key (``panes.watermarks.per_key`` states the rule).

Each key has its own watermark, moved by its own elements (:meth:`KeyTimeTimerService.element_seen`), and the
stream's watermark moves a floor under every key (:meth:`KeyTimeTimerService.advance_watermark`). A key's
event-time timers fire when its *effective* watermark, ``max(own, floor)``, passes them, and
``current_watermark`` is the effective watermark of the current key, so whatever asks the service for "the
watermark" (lateness, triggers, the window function, pane info) sees the key's time.

Layout, chosen so that each key's timers leave in the order Flink's heap gives for that key's timers alone:

- every event-time timer is in two of Flink's heaps (``panes.timers.heap``): the key's own heap, which decides
  the order the key's timers fire in, and the heap of all timers (``event_time_timers``, as in the base
  service), which finds the keys the floor has passed;
- each key's own watermark is kept while it is ahead of the floor; a third heap, one entry per key at a watermark
  it had (derived from them and never stored), forgets a key's watermark once the floor passes it (an entry the
  floor reaches before the key's watermark moves on to where it is), so the watermarks held are those of keys that
  moved within ``max_lag`` of the stream;
- with a quiet timeout, each key's deadline (its last element's processing time plus the timeout) until it
  passes, in a heap derived from them like the third; with a stream quiet timeout, when the stream's watermark
  last moved and whether that spell closed the windows (a rescaling gives every instance the latest);
- a snapshot holds, per key, its watermark, its heap in array order and its deadline (``"keys"``), beside the
  base service's data; changes are the heaps' operations plus the keys' operations in order; a rescaling moves a
  key's entry with the key (``panes.operators.rescaling``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from panes.time import LONG_MAX, LONG_MIN
from panes.timers.clock import ProcessingTimeService
from panes.timers.heap import InternalTimer, TimerHeap
from panes.timers.loops import EVENT_TIME, TimerLoopError
from panes.timers.service import InternalTimerService, Triggerable

if TYPE_CHECKING:
    from panes.watermarks.per_key import PerKeyWatermarks


class _KeyClock:
    """The namespace of the heap that forgets keys' watermarks (never a window)."""

    def __reduce__(self) -> str:
        return "KEY_CLOCK"

    def __repr__(self) -> str:
        return "KEY_CLOCK"


KEY_CLOCK = _KeyClock()

_WATERMARK, _FORGET, _ADD, _REMOVE, _POLL, _CLEAR, _DEADLINE, _QUIET = range(8)


class KeyTimeTimerService(InternalTimerService):
    """:class:`InternalTimerService` with event time per key (see the module docstring); processing-time timers
    are the base service's. ``key_time`` gives each key's watermark and the floor under it."""

    def __init__(
        self,
        get_current_key: Callable[[], Any],
        set_current_key: Callable[[Any], None],
        triggerable: Triggerable,
        processing_time_service: ProcessingTimeService,
        key_time: PerKeyWatermarks,
        owner: str | None = None,
        on_failure: Callable[[InternalTimer, Exception, bool], None] | None = None,
    ) -> None:
        self.key_time = key_time
        self.stream_watermark = LONG_MIN
        self.floor = LONG_MIN
        """The effective watermark of every key whose own is behind it (``PerKeyWatermarks.floor``)."""
        self.key_watermarks: dict[Any, int] = {}
        """Each key's own watermark, while it is ahead of :attr:`floor`."""
        self.key_timers: dict[Any, TimerHeap] = {}
        self._clocks = TimerHeap()
        self.quiet_deadlines: dict[Any, int] = {}
        """With a quiet timeout: per key, the processing time at which it is quiet (its last element's + the
        timeout), until then."""
        self._quiet = TimerHeap()
        self.stream_moved_at: int | None = None
        """With a stream quiet timeout: the processing time of the stream watermark's last advance (of the first
        element before any), and whether this quiet spell closed the keys' windows already."""
        self.stream_closed = False
        self._key_operations: list[tuple[Any, ...]] | None = None
        self.pass_before: int | None = None
        super().__init__(get_current_key, set_current_key, triggerable, processing_time_service, owner, on_failure)

    # -- time ------------------------------------------------------------------------------------------------

    @property
    def current_watermark(self) -> int:
        """The current key's effective watermark: ``max(its own, floor)``."""
        own = self.key_watermarks.get(self._get_key(), LONG_MIN)
        return own if own > self.floor else self.floor

    @current_watermark.setter
    def current_watermark(self, time: int) -> None:
        self.stream_watermark = time
        self.floor = self.key_time.floor(time)

    def watermark_of(self, key: Any) -> int:
        """``key``'s effective watermark."""
        own = self.key_watermarks.get(key, LONG_MIN)
        return own if own > self.floor else self.floor

    def element_seen(self, timestamp: int | None) -> None:
        """The current key's element at ``timestamp`` was processed: move the key's own watermark on and fire
        the key's timers it passes (nothing when it does not advance, or the element has no timestamp)."""
        if timestamp is None:
            return
        key = self._get_key()
        if self.key_time.quiet_timeout is not None:
            self._set_deadline(key, self.current_processing_time() + self.key_time.quiet_timeout)
        if self.stream_moved_at is None and self.key_time.stream_quiet_timeout is not None:
            self.stream_moved_at = self.current_processing_time()
        before = self.watermark_of(key)
        reached = self.key_time.key_watermark(timestamp)
        if reached <= before:
            return
        self._set_own(key, reached)
        self.pass_before = before
        try:
            self._fire_key(key, reached)
        finally:
            self.pass_before = None
            self.guard.end_pass()

    def advance_watermark(self, time: int) -> None:
        """The stream's watermark is ``time``: raise the floor to ``PerKeyWatermarks.floor(time)`` and fire every
        key's timers at or before it (each key's in its own heap's order, the keys in the order of their
        earliest due timer), then forget the keys' watermarks the floor passed."""
        previous = self.floor
        if time > self.stream_watermark and self.key_time.stream_quiet_timeout is not None:
            self.stream_moved_at, self.stream_closed = self.current_processing_time(), False
        self.current_watermark = time
        floor = self.floor
        timers = self.event_time_timers
        try:
            while True:
                head = timers.peek()
                if head is None or head.timestamp > floor:
                    break
                key = head.key
                own = self.key_watermarks.get(key, LONG_MIN)
                self.pass_before = own if own > previous else previous
                if key not in self.key_timers:
                    raise RuntimeError(f"the timers of key {key!r} are not in its own heap: the timer state is corrupt")
                self._fire_key(key, floor)
        finally:
            self.pass_before = None
            self.guard.end_pass()
        clocks = self._clocks
        while (clock := clocks.peek()) is not None and clock.timestamp <= floor:
            clocks.poll()
            own = self.key_watermarks[clock.key]
            if own > floor:  # the key moved on since its entry: it is forgotten when the floor passes it there
                clocks.add(own, clock.key, KEY_CLOCK)
                continue
            del self.key_watermarks[clock.key]
            self._record(_FORGET, clock.key)

    def advance_processing_time(self, time: int) -> None:
        """Fire the processing-time timers at or before ``time``; then close the windows of the keys quiet by then
        (each key's latest open window's end becomes its own watermark, firing what it passes), in the order of
        their deadlines."""
        super().advance_processing_time(time)
        quiet = self._quiet
        while (head := quiet.peek()) is not None and head.timestamp <= time:
            quiet.poll()
            del self.quiet_deadlines[head.key]
            self._record(_QUIET, head.key)
            self._close(head.key)
        timeout = self.key_time.stream_quiet_timeout
        moved = self.stream_moved_at
        if timeout is not None and moved is not None and not self.stream_closed and time >= moved + timeout:
            self.stream_closed = True
            for key in list(self.key_timers):
                self._close(key)

    def _close(self, key: Any) -> None:
        """``key`` is quiet: its own watermark moves to the end of its latest open window, firing what it passes."""
        end = self._open_end(key)
        before = self.watermark_of(key)
        if end is None or end <= before:
            return
        self._set_own(key, end)
        self.pass_before, self.quiet_pass = before, True
        try:
            self._fire_key(key, end)
        finally:
            self.pass_before, self.quiet_pass = None, False
            self.guard.end_pass()

    def _open_end(self, key: Any) -> int | None:
        """The end (``max_timestamp()``) of ``key``'s latest window with an event-time timer, or ``None``
        (windows that end at ``LONG_MAX``, global ones, are left to the end of input)."""
        heap = self.key_timers.get(key)
        ends = [
            end
            for timer in (heap or ())
            if (end := getattr(timer.namespace, "max_timestamp", lambda: LONG_MAX)()) < LONG_MAX
        ]
        return max(ends) if ends else None

    def _set_deadline(self, key: Any, deadline: int) -> None:
        old = self.quiet_deadlines.get(key)
        if old is not None:
            self._quiet.remove(old, key, KEY_CLOCK)
        self.quiet_deadlines[key] = deadline
        self._quiet.add(deadline, key, KEY_CLOCK)
        self._record(_DEADLINE, key, deadline)

    def end_key(self) -> None:
        """The current key's input ended (a window that emits only at the end of its input runs on sorted
        input): the base service fires all its timers; then no key keeps a time or timers of its own."""
        super().end_key()
        self.key_timers.clear()
        self.key_watermarks.clear()
        self._clocks = TimerHeap()
        self.quiet_deadlines.clear()
        self._quiet = TimerHeap()
        self._record(_CLEAR, None)

    def _set_own(self, key: Any, watermark: int) -> None:
        """``key``'s own watermark is now ``watermark``. Its entry in the heap that forgets watermarks is made once
        and left behind as the key moves on (the floor reaching it looks again), so moving costs no heap work."""
        if key not in self.key_watermarks:
            self._clocks.add(watermark, key, KEY_CLOCK)
        self.key_watermarks[key] = watermark
        self._record(_WATERMARK, key, watermark)

    def _fire_key(self, key: Any, time: int) -> None:
        """Fire ``key``'s timers at or before ``time`` in its heap's order, those registered meanwhile included."""
        heap = self.key_timers.get(key)
        fire = self._triggerable.on_event_time
        guard = self.guard
        while heap is not None:
            head = heap.peek()
            if head is None or head.timestamp > time:
                return
            heap.poll()
            self._record(_POLL, key)
            if not len(heap):
                del self.key_timers[key]
            self.event_time_timers.remove(head.timestamp, key, head.namespace)
            self._set_key(key)
            guard.enter(EVENT_TIME, head)
            try:
                fire(head)
            except TimerLoopError:
                raise
            except Exception as error:
                if self._on_failure is None:
                    raise
                self._on_failure(head, error, True)
            guard.leave()
            heap = self.key_timers.get(key)

    def next_event_time_timer(self) -> int | None:
        """The stream watermark at which the floor reaches the earliest timer (its time plus ``max_lag``): what a
        runner that wakes up on the stream's watermark waits for (a key's own time fires its timers on its
        elements); with keys waiting to go quiet, the next advance of the stream's watermark at the latest."""
        head = self.event_time_timers.peek()
        lag = self.key_time.max_lag or 0
        due = None if head is None else (head.timestamp + lag if head.timestamp < LONG_MAX - lag else LONG_MAX)
        if self.quiet_deadlines and self.stream_watermark < LONG_MAX:
            # a quiet key is closed when the runner next calls: at the next advance of the stream's watermark
            due = self.stream_watermark + 1 if due is None else min(due, self.stream_watermark + 1)
        return due

    # -- timers ----------------------------------------------------------------------------------------------

    def register_event_time_timer(self, namespace: Any, time: int) -> None:
        if self._quiesced:
            return
        key = self._get_key()
        if self.event_time_timers.add(time, key, namespace):
            self._key_heap(key).add(time, key, namespace)
            self._record(_ADD, key, time, namespace)
            self.guard.registered(EVENT_TIME, time)

    def delete_event_time_timer(self, namespace: Any, time: int) -> None:
        key = self._get_key()
        if self.event_time_timers.remove(time, key, namespace):
            heap = self.key_timers[key]
            heap.remove(time, key, namespace)
            self._record(_REMOVE, key, time, namespace)
            if not len(heap):
                del self.key_timers[key]

    def _key_heap(self, key: Any) -> TimerHeap:
        heap = self.key_timers.get(key)
        if heap is None:
            heap = self.key_timers[key] = TimerHeap()
        return heap

    # -- snapshots -------------------------------------------------------------------------------------------

    def _record(self, *operation: Any) -> None:
        if self._key_operations is not None:
            self._key_operations.append(operation)

    def snapshot(self) -> dict[str, Any]:
        """The base service's snapshot at the stream's watermark, plus ``"keys"``: per key, its own watermark
        (``LONG_MIN`` when the floor passed it) and its heap in array order."""
        data = super().snapshot()
        data["watermark"] = self.stream_watermark
        keys = set(self.key_watermarks) | set(self.key_timers) | set(self.quiet_deadlines)
        data["stream_quiet"] = (self.stream_moved_at, self.stream_closed)
        data["keys"] = {
            key: (
                self.key_watermarks.get(key, LONG_MIN),
                self.key_timers[key].snapshot() if key in self.key_timers else [],
                self.quiet_deadlines.get(key),
            )
            for key in keys
        }
        return data

    def restore(self, data: dict[str, Any], changes: list[dict[str, Any]] | None = None) -> None:
        super().restore(data, changes)
        self.key_watermarks = {}
        self.key_timers = {}
        self.quiet_deadlines = {}
        for key, (watermark, timers, deadline) in data.get("keys", {}).items():
            if watermark != LONG_MIN:
                self.key_watermarks[key] = watermark
            if timers:
                self._key_heap(key).restore(timers)
            if deadline is not None:
                self.quiet_deadlines[key] = deadline
        for change in changes or ():
            for operation in change.get("keys", ()):
                self._replay(operation)
        self._clocks = TimerHeap()
        for key, watermark in self.key_watermarks.items():
            self._clocks.add(watermark, key, KEY_CLOCK)
        self._quiet = TimerHeap()
        for key, deadline in self.quiet_deadlines.items():
            self._quiet.add(deadline, key, KEY_CLOCK)
        stream_quiet = changes[-1]["stream_quiet"] if changes else data.get("stream_quiet")
        self.stream_moved_at, self.stream_closed = stream_quiet or (None, False)

    def _replay(self, operation: tuple[Any, ...]) -> None:
        kind, key = operation[0], operation[1]
        if kind == _CLEAR:
            self.key_watermarks.clear()
            self.key_timers.clear()
            self.quiet_deadlines.clear()
        elif kind == _DEADLINE:
            self.quiet_deadlines[key] = operation[2]
        elif kind == _QUIET:
            self.quiet_deadlines.pop(key, None)
        elif kind == _WATERMARK:
            self.key_watermarks[key] = operation[2]
        elif kind == _FORGET:
            self.key_watermarks.pop(key, None)
        elif kind == _ADD:
            self._key_heap(key).add(operation[2], key, operation[3])
        else:
            heap = self.key_timers[key]
            if kind == _REMOVE:
                heap.remove(operation[2], key, operation[3])
            else:
                heap.poll()
            if not len(heap):
                del self.key_timers[key]

    def track_changes(self) -> None:
        super().track_changes()
        if self._key_operations is None:
            self._key_operations = []

    def take_changes(self) -> dict[str, Any]:
        changes = super().take_changes()
        changes["watermark"] = self.stream_watermark
        operations, self._key_operations = self._key_operations or [], []
        changes["keys"] = operations
        changes["stream_quiet"] = (self.stream_moved_at, self.stream_closed)
        return changes

    def forget_changes(self) -> None:
        super().forget_changes()
        if self._key_operations is not None:
            self._key_operations = []
