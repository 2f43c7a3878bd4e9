"""Continuous triggers: fire periodically (every ``interval``) while a window is open.

``ContinuousEventTimeTrigger`` fires on event time and at the window's end; ``ContinuousProcessingTimeTrigger``
fires on processing time. Both keep the next fire time in a min-reducing state ``"fire-time"`` (so merged
windows take the earliest), aligned to multiples of the interval and capped at ``window.max_timestamp()``. As
in Flink, ``time + interval`` is a Java ``long`` sum: near ``LONG_MAX`` it wraps around to a time long past.
"""

from __future__ import annotations

from typing import Any

from panes.state.descriptors import ReducingStateDescriptor
from panes.time import DurationLike, duration_ms, java_add, java_rem
from panes.windowing.rules import has_ended
from panes.windowing.triggers.base import OnMergeContext, Trigger, TriggerContext, TriggerResult
from panes.windowing.windows import Window


def _interval(value: DurationLike, owner: str) -> int:
    interval = duration_ms(value, name=f"{owner} interval")
    if interval <= 0:
        raise ValueError(f"{owner} parameters must satisfy interval > 0 (got {interval} ms)")
    return interval


class ContinuousEventTimeTrigger(Trigger[Any, Window]):
    """Fires every ``interval`` of event time, and when the watermark passes the end of the window."""

    def __init__(self, interval: DurationLike) -> None:
        self.interval = _interval(interval, "ContinuousEventTimeTrigger")
        self._state = ReducingStateDescriptor("fire-time", min)

    @staticmethod
    def of(interval: DurationLike) -> ContinuousEventTimeTrigger:
        return ContinuousEventTimeTrigger(interval)

    def _register_next(self, time: int, window: Window, ctx: TriggerContext, fire_time: Any) -> None:
        next_fire = min(java_add(time, self.interval), window.max_timestamp())
        fire_time.add(next_fire)
        ctx.register_event_time_timer(next_fire)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if has_ended(window.max_timestamp(), ctx.get_current_watermark()):
            # the watermark is already past the window: fire at once
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        fire_time = ctx.get_partitioned_state(self._state)
        if fire_time.get() is None:
            self._register_next(timestamp - java_rem(timestamp, self.interval), window, ctx, fire_time)
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        fire_time = ctx.get_partitioned_state(self._state)
        if fire_time.get() == time:
            fire_time.clear()
            self._register_next(time, window, ctx, fire_time)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        fire_time = ctx.get_partitioned_state(self._state)
        timestamp = fire_time.get()
        if timestamp is not None:
            ctx.delete_event_time_timer(timestamp)
            fire_time.clear()

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        ctx.merge_partitioned_state(self._state)
        next_fire = ctx.get_partitioned_state(self._state).get()
        if next_fire is not None:
            ctx.register_event_time_timer(next_fire)

    def __repr__(self) -> str:
        return f"ContinuousEventTimeTrigger({self.interval})"


class ContinuousProcessingTimeTrigger(Trigger[Any, Window]):
    """Fires every ``interval`` of processing time while the window receives elements.

    The fire times are capped at ``window.max_timestamp()``. A processing-time timer at that time fires and
    changes nothing else, as in Flink 2.3.0 (the early return of FLINK-20443): the fire time stays stored, so the
    firing registers no next one (in an event-time window, whose cleanup is on event time, it would otherwise be
    due at once, again and again) and a later element of the still open window starts none either: the window
    fires no more on processing time.
    """

    def __init__(self, interval: DurationLike) -> None:
        self.interval = _interval(interval, "ContinuousProcessingTimeTrigger")
        self._state = ReducingStateDescriptor("fire-time", min)

    @staticmethod
    def of(interval: DurationLike) -> ContinuousProcessingTimeTrigger:
        return ContinuousProcessingTimeTrigger(interval)

    def _register_next(self, time: int, window: Window, ctx: TriggerContext, fire_time: Any) -> None:
        next_fire = min(java_add(time, self.interval), window.max_timestamp())
        fire_time.add(next_fire)
        ctx.register_processing_time_timer(next_fire)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        fire_time = ctx.get_partitioned_state(self._state)
        now = ctx.get_current_processing_time()
        if fire_time.get() is None:
            self._register_next(now - java_rem(now, self.interval), window, ctx, fire_time)
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if time == window.max_timestamp():
            return TriggerResult.FIRE  # the stored fire time stays: nothing fires after the window's end
        fire_time = ctx.get_partitioned_state(self._state)
        if fire_time.get() == time:
            fire_time.clear()
            self._register_next(time, window, ctx, fire_time)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        fire_time = ctx.get_partitioned_state(self._state)
        timestamp = fire_time.get()
        if timestamp is not None:
            ctx.delete_processing_time_timer(timestamp)
            fire_time.clear()

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        ctx.merge_partitioned_state(self._state)
        next_fire = ctx.get_partitioned_state(self._state).get()
        if next_fire is not None:
            ctx.register_processing_time_timer(next_fire)

    def __repr__(self) -> str:
        return f"ContinuousProcessingTimeTrigger({self.interval})"
