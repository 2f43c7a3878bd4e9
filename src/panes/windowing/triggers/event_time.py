"""``EventTimeTrigger``: fires once the watermark passes the window's end."""

from __future__ import annotations

from typing import Any

from panes.windowing.rules import has_ended
from panes.windowing.triggers.base import OnMergeContext, Trigger, TriggerContext, TriggerResult
from panes.windowing.windows import TimeWindow, Window


class EventTimeTrigger(Trigger[Any, Window]):
    """Fires when the watermark reaches ``window.max_timestamp()``.

    An element that arrives for a window the watermark has already passed (allowed lateness) fires the
    window at once (a late firing).
    """

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if has_ended(window.max_timestamp(), ctx.get_current_watermark()):
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def required_window_type(self) -> type[Window]:
        return TimeWindow

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        # only register a timer if the watermark is not yet past the end of the merged window
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())

    @staticmethod
    def create() -> EventTimeTrigger:
        return EventTimeTrigger()
