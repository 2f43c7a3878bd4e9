"""``CountTrigger``: fires every ``count`` elements of a window."""

from __future__ import annotations

from typing import Any

from panes.state.descriptors import ReducingStateDescriptor
from panes.windowing.triggers.base import OnMergeContext, Trigger, TriggerContext, TriggerResult
from panes.windowing.windows import Window


def _sum(a: int, b: int) -> int:
    return a + b


class CountTrigger(Trigger[Any, Window]):
    """Fires once the window has received ``count`` elements since the last firing (``count > 0``).

    The count lives in the trigger's partitioned state (``"count"``), is reset on firing and merges by sum.
    Raises ``ValueError`` at construction unless ``count > 0``.
    """

    def __init__(self, count: int) -> None:
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(f"CountTrigger count must be an int, got {type(count).__name__}")
        if count <= 0:
            raise ValueError(f"CountTrigger parameters must satisfy count > 0 (got {count})")
        self.count = count
        self._state = ReducingStateDescriptor("count", _sum)

    @staticmethod
    def of(count: int) -> CountTrigger:
        return CountTrigger(count)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        count = ctx.get_partitioned_state(self._state)
        count.add(1)
        if count.get() >= self.count:
            count.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.get_partitioned_state(self._state).clear()

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        ctx.merge_partitioned_state(self._state)

    def __repr__(self) -> str:
        return f"CountTrigger({self.count})"
