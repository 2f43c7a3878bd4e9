"""Sliding windows: windows of ``size`` starting every ``slide``; an element belongs to ``ceil(size/slide)``."""

from __future__ import annotations

from typing import Any

import numpy as np

from panes.time import LONG_MIN, DurationLike, duration_ms, java_sub
from panes.windowing.assigners.base import WindowAssigner, WindowAssignerContext, require_timestamp
from panes.windowing.triggers.base import Trigger
from panes.windowing.triggers.event_time import EventTimeTrigger
from panes.windowing.triggers.processing_time import ProcessingTimeTrigger
from panes.windowing.windows import TimeWindow


def window_starts(timestamp: int, size: int, slide: int, offset: int) -> list[int]:
    """The starts of the windows of ``size`` starting every ``slide`` (shifted by ``offset``) that contain
    ``timestamp``, latest first (Flink's order); ``size``, ``slide`` > 0.

    As ``SlidingEventTimeWindows.assignWindows``: from the start of the slide containing ``timestamp``, one
    slide back each time while ``start > timestamp - size``, in Java ``long`` arithmetic. So near ``LONG_MIN``,
    where ``timestamp - size`` wraps around to a large value, there may be no window at all, as in Flink. One
    deliberate difference: when ``start - slide`` would wrap around below ``LONG_MIN`` Flink's loop goes on
    from the top of the range (nearly ``2**64 / slide`` more windows, which never ends in practice); panes
    stops there.
    """
    start = TimeWindow.get_window_start_with_offset(timestamp, offset, slide)
    lower = java_sub(timestamp, size)
    starts = []
    while start > lower:
        starts.append(start)
        if start - slide < LONG_MIN:
            break
        start -= slide
    return starts


def element_window_starts(
    timestamps: np.ndarray, size: int, slide: int, offset: int, tumbling: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The vectorised form of :func:`window_starts` over ``int64`` timestamps: ``(element, start)`` pairs, element
    by element, each element's windows latest first (Flink's order), with the same bounds in the same wrapping
    arithmetic (a start that wrapped around below ``LONG_MIN`` comes out above the element's latest start and is
    dropped, as :func:`window_starts` stops there). With ``tumbling`` (``size == slide``), the tumbling assigner:
    every element has exactly its own window, even where ``timestamp - size`` wraps."""
    last = TimeWindow.window_starts_with_offset(timestamps, offset, slide)
    elements, starts = [], []
    for back in range(-(-size // slide)):
        start = last - back * slide
        contains = start <= last if tumbling else (start > timestamps - size) & (start <= last)
        inside = np.flatnonzero(contains)
        elements.append(inside)
        starts.append(start[inside])
    element, start = np.concatenate(elements), np.concatenate(starts)
    order = np.argsort(element, kind="stable")
    return element[order], start[order]


class _Sliding(WindowAssigner[Any, TimeWindow]):
    _owner = "SlidingWindows"

    def __init__(self, size: DurationLike, slide: DurationLike, offset: DurationLike = 0) -> None:
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

    def window_type(self) -> type[TimeWindow]:
        return TimeWindow

    def windows_containing(self, timestamp: int) -> list[TimeWindow]:
        """Every window containing ``timestamp``, latest start first (Flink's order; see :func:`window_starts`)."""
        size = self.size
        return [TimeWindow.of_size(start, size) for start in window_starts(timestamp, size, self.slide, self.offset)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size}, slide={self.slide}, offset={self.offset})"


class SlidingEventTimeWindows(_Sliding):
    """Sliding windows on the element timestamp. ``size > 0``, ``slide > 0``, ``abs(offset) < slide``;
    default trigger: :class:`EventTimeTrigger`."""

    _owner = "SlidingEventTimeWindows"

    @classmethod
    def of(cls, size: DurationLike, slide: DurationLike, offset: DurationLike = 0) -> SlidingEventTimeWindows:
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
    def of(cls, size: DurationLike, slide: DurationLike, offset: DurationLike = 0) -> SlidingProcessingTimeWindows:
        return cls(size, slide, offset)

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> list[TimeWindow]:
        return self.windows_containing(context.get_current_processing_time())

    def get_default_trigger(self) -> Trigger[Any, Any]:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False
