"""Hand-written triggers, in Flink's trigger API, that do what a composite trigger of a scenario file does.

The expected output of a composite scenario (``tests/scenarios/6*``) is what its oracle here gives on the operator
harness: ``tests/core/test_conformance_harness.py`` checks the stored file against it, and property tests
(``tests/core/test_composite_triggers.py``) check the composite against the oracle on random streams.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from panes.state.descriptors import ReducingStateDescriptor
from panes.windowing.triggers.base import OnMergeContext, Trigger, TriggerContext, TriggerResult
from panes.windowing.windows import Window


class CountOrEndOfWindow(Trigger[Any, Window]):
    """``AnyOf(CountTrigger.of(n), EventTimeTrigger())``: fire every ``n`` elements (counting again after each
    firing), at the window's end, and for every element after it."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.count = ReducingStateDescriptor("count", operator.add)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        late = window.max_timestamp() <= ctx.get_current_watermark()
        if not late:
            ctx.register_event_time_timer(window.max_timestamp())
        count = ctx.get_partitioned_state(self.count)
        count.add(1)
        counted = count.get() >= self.n
        if counted:
            count.clear()
        return TriggerResult.FIRE if late or counted else TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        ctx.merge_partitioned_state(self.count)
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())
        ctx.get_partitioned_state(self.count).clear()


class EarlyAndLate(Trigger[Any, Window]):
    """``AfterWatermark(early=CountTrigger.of(early), late=CountTrigger.of(late))``: before the window's end, fire
    every ``early`` elements; at its end, fire (and forget the early count); after it, fire every ``late``
    elements."""

    def __init__(self, early: int, late: int) -> None:
        self.early, self.late = early, late
        self.early_count = ReducingStateDescriptor("early", operator.add)
        self.late_count = ReducingStateDescriptor("late", operator.add)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        late = window.max_timestamp() <= ctx.get_current_watermark()
        if not late:
            ctx.register_event_time_timer(window.max_timestamp())
        count = ctx.get_partitioned_state(self.late_count if late else self.early_count)
        count.add(1)
        if count.get() >= (self.late if late else self.early):
            count.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if time != window.max_timestamp():
            return TriggerResult.CONTINUE
        ctx.get_partitioned_state(self.early_count).clear()
        return TriggerResult.FIRE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        ctx.merge_partitioned_state(self.early_count)
        ctx.merge_partitioned_state(self.late_count)
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())
        ctx.get_partitioned_state(self.early_count).clear()
        ctx.get_partitioned_state(self.late_count).clear()


ORACLES: dict[str, Callable[[], Trigger[Any, Any]]] = {
    "61_any_of_count_or_end_of_window": lambda: CountOrEndOfWindow(2),
    "62_after_watermark_early_and_late": lambda: EarlyAndLate(2, 1),
}
"""The scenario files of composite triggers, and the hand-written trigger that produced each one's expected file."""
