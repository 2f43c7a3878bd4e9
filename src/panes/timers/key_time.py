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
- each key's own watermark is kept while it is ahead of the floor; a third heap of ``(own watermark, key)``,
  derived from them and never stored, forgets a key's watermark once the floor passes it, so the watermarks held
  are those of keys that moved within ``max_lag`` of the stream;
- a snapshot holds, per key, its watermark and its heap in array order (``"keys"``), beside the base service's
  data; changes are the heaps' operations plus the keys' operations in order; a rescaling moves a key's entry
  with the key (``panes.operators.rescaling``).
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

_WATERMARK, _FORGET, _ADD, _REMOVE, _POLL, _CLEAR = range(6)


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
            del self.key_watermarks[clock.key]
            self._record(_FORGET, clock.key)

    def end_key(self) -> None:
        """The current key's input ended (a window that emits only at the end of its input runs on sorted
        input): the base service fires all its timers; then no key keeps a time or timers of its own."""
        super().end_key()
        self.key_timers.clear()
        self.key_watermarks.clear()
        self._clocks = TimerHeap()
        self._record(_CLEAR, None)

    def _set_own(self, key: Any, watermark: int) -> None:
        old = self.key_watermarks.get(key)
        if old is not None:
            self._clocks.remove(old, key, KEY_CLOCK)
        self.key_watermarks[key] = watermark
        self._clocks.add(watermark, key, KEY_CLOCK)
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
        elements)."""
        head = self.event_time_timers.peek()
        if head is None:
            return None
        lag = self.key_time.max_lag or 0
        return head.timestamp + lag if head.timestamp < LONG_MAX - lag else LONG_MAX

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
        keys = set(self.key_watermarks) | set(self.key_timers)
        data["keys"] = {
            key: (
                self.key_watermarks.get(key, LONG_MIN),
                self.key_timers[key].snapshot() if key in self.key_timers else [],
            )
            for key in keys
        }
        return data

    def restore(self, data: dict[str, Any], changes: list[dict[str, Any]] | None = None) -> None:
        super().restore(data, changes)
        self.key_watermarks = {}
        self.key_timers = {}
        for key, (watermark, timers) in data.get("keys", {}).items():
            if watermark != LONG_MIN:
                self.key_watermarks[key] = watermark
            if timers:
                self._key_heap(key).restore(timers)
        for change in changes or ():
            for operation in change.get("keys", ()):
                self._replay(operation)
        self._clocks = TimerHeap()
        for key, watermark in self.key_watermarks.items():
            self._clocks.add(watermark, key, KEY_CLOCK)

    def _replay(self, operation: tuple[Any, ...]) -> None:
        kind, key = operation[0], operation[1]
        if kind == _CLEAR:
            self.key_watermarks.clear()
            self.key_timers.clear()
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
        return changes

    def forget_changes(self) -> None:
        super().forget_changes()
        if self._key_operations is not None:
            self._key_operations = []
