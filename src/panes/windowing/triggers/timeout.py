"""``ProcessingTimeoutTrigger``: a nested trigger that also fires after a processing-time timeout."""

from __future__ import annotations

from typing import Any

from panes.state.descriptors import ValueStateDescriptor
from panes.time import DurationLike, duration_ms, java_add
from panes.windowing.triggers.base import OnMergeContext, Trigger, TriggerContext, TriggerResult
from panes.windowing.windows import Window


class ProcessingTimeoutTrigger(Trigger[Any, Window]):
    """Fires when ``nested_trigger`` fires, or ``timeout`` of processing time after the first element.

    With ``reset_timer_on_new_record`` each element restarts the timeout; with ``should_clear_on_timeout``
    (the default of :meth:`of`) the trigger's state and the nested trigger are cleared when the timeout
    fires. A timeout fires FIRE, or FIRE_AND_PURGE when the nested trigger answered a purge.
    """

    def __init__(
        self,
        nested_trigger: Trigger[Any, Any],
        timeout: DurationLike,
        reset_timer_on_new_record: bool = False,
        should_clear_on_timeout: bool = True,
    ) -> None:
        if not isinstance(nested_trigger, Trigger):
            raise TypeError(f"ProcessingTimeoutTrigger needs a Trigger, got {type(nested_trigger).__name__}")
        self.nested_trigger = nested_trigger
        self.interval = duration_ms(timeout, name="ProcessingTimeoutTrigger timeout")
        self.reset_timer_on_new_record = reset_timer_on_new_record
        self.should_clear_on_timeout = should_clear_on_timeout
        self._state = ValueStateDescriptor("timeout")

    @staticmethod
    def of(
        nested_trigger: Trigger[Any, Any],
        timeout: DurationLike,
        reset_timer_on_new_record: bool = False,
        should_clear_on_timeout: bool = True,
    ) -> ProcessingTimeoutTrigger:
        return ProcessingTimeoutTrigger(nested_trigger, timeout, reset_timer_on_new_record, should_clear_on_timeout)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        result = self.nested_trigger.on_element(element, timestamp, window, ctx)
        if result.is_fire():
            self.clear(window, ctx)
            return result
        timeout_state = ctx.get_partitioned_state(self._state)
        next_fire = java_add(ctx.get_current_processing_time(), self.interval)
        timeout_at = timeout_state.value()
        if timeout_at is not None and self.reset_timer_on_new_record:
            ctx.delete_processing_time_timer(timeout_at)
            timeout_state.clear()
            timeout_at = None
        if timeout_at is None:
            timeout_state.update(next_fire)
            ctx.register_processing_time_timer(next_fire)
        return result

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        result = self.nested_trigger.on_processing_time(time, window, ctx)
        if self.should_clear_on_timeout:
            self.clear(window, ctx)
        return TriggerResult.FIRE_AND_PURGE if result.is_purge() else TriggerResult.FIRE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        result = self.nested_trigger.on_event_time(time, window, ctx)
        if self.should_clear_on_timeout:
            self.clear(window, ctx)
        return TriggerResult.FIRE_AND_PURGE if result.is_purge() else TriggerResult.FIRE

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        timeout_state = ctx.get_partitioned_state(self._state)
        timeout_at = timeout_state.value()
        if timeout_at is not None:
            ctx.delete_processing_time_timer(timeout_at)
            timeout_state.clear()
        self.nested_trigger.clear(window, ctx)

    def required_window_type(self) -> type[Window] | None:
        return self.nested_trigger.required_window_type()

    def can_merge(self) -> bool:
        return False

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        raise NotImplementedError("ProcessingTimeoutTrigger does not support merging")

    def __repr__(self) -> str:
        return f"ProcessingTimeoutTrigger({self.nested_trigger!r})"
