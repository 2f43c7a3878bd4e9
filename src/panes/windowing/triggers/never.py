"""The triggers of ``GlobalWindows``: one that never fires, one that fires at the end of the input."""

from __future__ import annotations

from typing import Any

from panes.windowing.triggers.base import OnMergeContext, Trigger, TriggerContext, TriggerResult
from panes.windowing.windows import GlobalWindow, Window


class NeverTrigger(Trigger[Any, Window]):
    """The default trigger of ``GlobalWindows``: never fires (set another trigger to get results)."""

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        return None

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        return None


class EndOfStreamTrigger(Trigger[Any, Window]):
    """Fires the global window once, when the final ``LONG_MAX`` watermark of a bounded input arrives (on the
    ``GlobalWindow`` only, as Flink's ``GlobalWindows.EndOfStreamTrigger``)."""

    def required_window_type(self) -> type[Window]:
        return GlobalWindow

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        return None

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        return None
