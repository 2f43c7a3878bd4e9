"""Sliding windows: windows of ``size`` starting every ``slide``; an element belongs to ``ceil(size/slide)``."""

from __future__ import annotations

from typing import Any

from panes.time import Duration, duration_ms
from panes.windowing.assigners.base import WindowAssigner, WindowAssignerContext, require_timestamp
from panes.windowing.triggers.base import Trigger
from panes.windowing.triggers.event_time import EventTimeTrigger
from panes.windowing.triggers.processing_time import ProcessingTimeTrigger
from panes.windowing.windows import TimeWindow


class _Sliding(WindowAssigner[Any, TimeWindow]):
    _owner = "SlidingWindows"

    def __init__(self, size: Duration, slide: Duration, offset: Duration = 0) -> None:
        owner = self._owner
        self.size = duration_ms(size, name=f"{owner} size")
        self.slide = duration_ms(slide, name=f"{owner} slide")
        self.offset = duration_ms(offset, name=f"{owner} offset")
        if self.size <= 0:
            raise ValueError(f"{owner} parameters must satisfy size > 0 (got size={self.size} ms)")
        if self.slide <= 0:
            raise ValueError(f"{owner} parameters must satisfy slide > 0 (got slide={self.slide} ms)")
        if abs(self.offset) >= self.slide:
            raise ValueError(
                f"{owner} parameters must satisfy abs(offset) < slide "
                f"(got offset={self.offset} ms, slide={self.slide} ms)"
            )

    def windows_containing(self, timestamp: int) -> list[TimeWindow]:
        """Every window containing ``timestamp``, latest start first (Flink's order)."""
        size, slide = self.size, self.slide
        last_start = TimeWindow.get_window_start_with_offset(timestamp, self.offset, slide)
        return [TimeWindow(start, start + size) for start in range(last_start, timestamp - size, -slide)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size}, slide={self.slide}, offset={self.offset})"


class SlidingEventTimeWindows(_Sliding):
    """Sliding windows on the element timestamp. ``size > 0``, ``slide > 0``, ``abs(offset) < slide``;
    default trigger: :class:`EventTimeTrigger`."""

    _owner = "SlidingEventTimeWindows"

    @classmethod
    def of(cls, size: Duration, slide: Duration, offset: Duration = 0) -> SlidingEventTimeWindows:
        return cls(size, slide, offset)

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> list[TimeWindow]:
        return self.windows_containing(require_timestamp(timestamp))

    def get_default_trigger(self) -> Trigger[Any, Any]:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


class SlidingProcessingTimeWindows(_Sliding):
    """Sliding windows on processing time. ``size > 0``, ``slide > 0``, ``abs(offset) < slide``;
    default trigger: :class:`ProcessingTimeTrigger`."""

    _owner = "SlidingProcessingTimeWindows"

    @classmethod
    def of(cls, size: Duration, slide: Duration, offset: Duration = 0) -> SlidingProcessingTimeWindows:
        return cls(size, slide, offset)

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> list[TimeWindow]:
        return self.windows_containing(context.get_current_processing_time())

    def get_default_trigger(self) -> Trigger[Any, Any]:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False
