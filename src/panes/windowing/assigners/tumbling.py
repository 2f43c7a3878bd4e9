"""Tumbling windows: fixed-size, non-overlapping ``[start, start + size)`` windows."""

from __future__ import annotations

from typing import Any

from panes.time import DurationLike, duration_ms, java_add, java_rem
from panes.windowing.assigners.base import WindowAssigner, WindowAssignerContext, require_timestamp
from panes.windowing.assigners.stagger import WindowStagger
from panes.windowing.triggers.base import Trigger
from panes.windowing.triggers.event_time import EventTimeTrigger
from panes.windowing.triggers.processing_time import ProcessingTimeTrigger
from panes.windowing.windows import TimeWindow


def validate_size_offset(owner: str, size: DurationLike, offset: DurationLike) -> tuple[int, int]:
    """``(size_ms, offset_ms)``; raises ``ValueError`` unless ``size > 0`` and ``abs(offset) < size``."""
    size_ms = duration_ms(size, name=f"{owner} size")
    offset_ms = duration_ms(offset, name=f"{owner} offset")
    if size_ms <= 0:
        raise ValueError(f"{owner} parameters must satisfy size > 0 (got size={size_ms} ms)")
    if abs(offset_ms) >= size_ms:
        raise ValueError(
            f"{owner} parameters must satisfy abs(offset) < size (got offset={offset_ms} ms, size={size_ms} ms)"
        )
    return size_ms, offset_ms


class _Tumbling(WindowAssigner[Any, TimeWindow]):
    _owner = "TumblingWindows"

    def __init__(
        self, size: DurationLike, offset: DurationLike = 0, stagger: WindowStagger = WindowStagger.ALIGNED
    ) -> None:
        self.size, self.global_offset = validate_size_offset(self._owner, size, offset)
        if not isinstance(stagger, WindowStagger):
            raise TypeError(f"stagger must be a WindowStagger, got {type(stagger).__name__}")
        self.stagger = stagger
        self.stagger_offset: int | None = None

    def window_type(self) -> type[TimeWindow]:
        return TimeWindow

    def _window_for(self, timestamp: int, context: WindowAssignerContext) -> list[TimeWindow]:
        if self.stagger_offset is None:
            self.stagger_offset = self.stagger.get_stagger_offset(context.get_current_processing_time(), self.size)
        size = self.size
        offset = java_rem(java_add(self.global_offset, self.stagger_offset), size)
        start = TimeWindow.get_window_start_with_offset(timestamp, offset, size)
        return [TimeWindow.of_size(start, size)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size}, offset={self.global_offset})"


class TumblingEventTimeWindows(_Tumbling):
    """Tumbling windows on the element timestamp. ``size > 0``, ``abs(offset) < size``; default trigger:
    :class:`EventTimeTrigger`. An element without a timestamp raises ``MissingTimestampError``."""

    _owner = "TumblingEventTimeWindows"

    @classmethod
    def of(
        cls, size: DurationLike, offset: DurationLike = 0, stagger: WindowStagger = WindowStagger.ALIGNED
    ) -> TumblingEventTimeWindows:
        return cls(size, offset, stagger)

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> list[TimeWindow]:
        return self._window_for(require_timestamp(timestamp), context)

    def get_default_trigger(self) -> Trigger[Any, Any]:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


class TumblingProcessingTimeWindows(_Tumbling):
    """Tumbling windows on the operator's processing time. ``size > 0``, ``abs(offset) < size``; default
    trigger: :class:`ProcessingTimeTrigger`."""

    _owner = "TumblingProcessingTimeWindows"

    @classmethod
    def of(
        cls, size: DurationLike, offset: DurationLike = 0, stagger: WindowStagger = WindowStagger.ALIGNED
    ) -> TumblingProcessingTimeWindows:
        return cls(size, offset, stagger)

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> list[TimeWindow]:
        return self._window_for(context.get_current_processing_time(), context)

    def get_default_trigger(self) -> Trigger[Any, Any]:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False
