"""A harness that drives one trigger directly, like Flink's ``TriggerTestHarness``.

One key; the trigger's partitioned state lives in a heap keyed-state backend (namespace = window) and its
timers in an internal timer service, so tests can count state entries and timers per window, advance the
watermark or processing time and see which windows fired with which result.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from panes.state.backend import HeapKeyedStateBackend
from panes.state.descriptors import StateDescriptor
from panes.time import LONG_MIN
from panes.timers.clock import ManualProcessingTimeService
from panes.timers.heap import InternalTimer
from panes.timers.service import InternalTimerService
from panes.windowing import Trigger, TriggerResult
from panes.windowing.triggers.base import OnMergeContext

KEY = 1


class _Context(OnMergeContext):
    def __init__(self, harness: TriggerTestHarness, window: Any, merged: Collection[Any] | None = None) -> None:
        self._h = harness
        self._window = window
        self._merged = merged

    def get_current_processing_time(self) -> int:
        return self._h.timers.current_processing_time()

    def get_current_watermark(self) -> int:
        return self._h.timers.current_watermark

    def register_processing_time_timer(self, time: int) -> None:
        self._h.timers.register_processing_time_timer(self._window, time)

    def register_event_time_timer(self, time: int) -> None:
        self._h.timers.register_event_time_timer(self._window, time)

    def delete_processing_time_timer(self, time: int) -> None:
        self._h.timers.delete_processing_time_timer(self._window, time)

    def delete_event_time_timer(self, time: int) -> None:
        self._h.timers.delete_event_time_timer(self._window, time)

    def get_partitioned_state(self, state_descriptor: StateDescriptor) -> Any:
        return self._h.backend.get_partitioned_state(self._window, state_descriptor)

    def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
        if self._merged:
            self._h.backend.merge_namespaces(state_descriptor, self._window, self._merged)


class TriggerTestHarness:
    """Feeds elements and time to ``trigger``; processing time starts at ``LONG_MIN`` as in Flink's harness."""

    def __init__(self, trigger: Trigger[Any, Any]) -> None:
        self.trigger = trigger
        self.backend = HeapKeyedStateBackend()
        self.backend.set_current_key(KEY)
        self.clock = ManualProcessingTimeService(LONG_MIN)
        self._fired: list[tuple[Any, TriggerResult]] = []
        self.timers = InternalTimerService(lambda: KEY, lambda key: None, self, self.clock)

    # -- Triggerable: the timer service calls these for each timer it fires
    def on_event_time(self, timer: InternalTimer) -> None:
        ctx = _Context(self, timer.namespace)
        self._fired.append((timer.namespace, self.trigger.on_event_time(timer.timestamp, timer.namespace, ctx)))

    def on_processing_time(self, timer: InternalTimer) -> None:
        ctx = _Context(self, timer.namespace)
        result = self.trigger.on_processing_time(timer.timestamp, timer.namespace, ctx)
        self._fired.append((timer.namespace, result))

    # -- counting
    def num_state_entries(self, window: Any = None) -> int:
        return sum(
            1
            for name in self.backend.state_names()
            for _, namespace, _ in self.backend.entries(name)
            if window is None or namespace == window
        )

    def num_event_time_timers(self, window: Any = None) -> int:
        return sum(1 for t in self.timers.event_time_timers if window is None or t.namespace == window)

    def num_processing_time_timers(self, window: Any = None) -> int:
        return sum(1 for t in self.timers.processing_time_timers if window is None or t.namespace == window)

    # -- driving
    def process_element(self, value: Any, window: Any, timestamp: int = LONG_MIN) -> TriggerResult:
        return self.trigger.on_element(value, timestamp, window, _Context(self, window))

    def advance_watermark(self, time: int) -> list[tuple[Any, TriggerResult]]:
        self._fired = []
        self.timers.advance_watermark(time)
        return self._fired

    def advance_processing_time(self, time: int) -> list[tuple[Any, TriggerResult]]:
        self._fired = []
        self.clock.set_current_time(time)
        self.timers.advance_processing_time(time)
        return self._fired

    def invoke_on_event_time(self, time: int, window: Any) -> TriggerResult:
        return self.trigger.on_event_time(time, window, _Context(self, window))

    def invoke_on_processing_time(self, time: int, window: Any) -> TriggerResult:
        return self.trigger.on_processing_time(time, window, _Context(self, window))

    def merge_windows(self, target: Any, merged: Collection[Any]) -> None:
        """``on_merge`` on ``target``, then ``clear`` of every merged window, as the window operator does."""
        self.trigger.on_merge(target, _Context(self, target, merged))
        for window in merged:
            self.clear_trigger_state(window)

    def clear_trigger_state(self, window: Any) -> None:
        self.trigger.clear(window, _Context(self, window))
