"""``PurgingTrigger``: turns every FIRE of a nested trigger into FIRE_AND_PURGE."""

from __future__ import annotations

from typing import Any

from panes.windowing.triggers.base import OnMergeContext, Trigger, TriggerContext, TriggerResult
from panes.windowing.windows import Window


def _purging(result: TriggerResult) -> TriggerResult:
    return TriggerResult.FIRE_AND_PURGE if result.is_fire() else result


class PurgingTrigger(Trigger[Any, Window]):
    """Wraps ``nested_trigger`` so that the pane is purged whenever it fires."""

    def __init__(self, nested_trigger: Trigger[Any, Any]) -> None:
        if not isinstance(nested_trigger, Trigger):
            raise TypeError(f"PurgingTrigger needs a Trigger, got {type(nested_trigger).__name__}")
        self.nested_trigger = nested_trigger

    @staticmethod
    def of(nested_trigger: Trigger[Any, Any]) -> PurgingTrigger:
        return PurgingTrigger(nested_trigger)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return _purging(self.nested_trigger.on_element(element, timestamp, window, ctx))

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return _purging(self.nested_trigger.on_event_time(time, window, ctx))

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return _purging(self.nested_trigger.on_processing_time(time, window, ctx))

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        self.nested_trigger.clear(window, ctx)

    def required_window_type(self) -> type[Window] | None:
        return self.nested_trigger.required_window_type()

    def can_merge(self) -> bool:
        return self.nested_trigger.can_merge()

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        self.nested_trigger.on_merge(window, ctx)

    def __repr__(self) -> str:
        return f"PurgingTrigger({self.nested_trigger!r})"
