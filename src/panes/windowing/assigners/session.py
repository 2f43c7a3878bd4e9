"""Session windows: ``[t, t + gap)`` per element (the end wrapping around like a Java ``long``), merged while
they overlap or touch.

Fixed gaps (``EventTimeSessionWindows``, ``ProcessingTimeSessionWindows``) are validated at construction
(``gap > 0``); dynamic gaps come from a ``SessionWindowTimeGapExtractor`` per element and are validated per
element (a gap ``<= 0`` raises ``ValueError``, as in Flink).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from panes.errors import BadRecordError
from panes.time import DurationLike, duration_ms
from panes.windowing.assigners.base import (
    MergeCallback,
    MergingWindowAssigner,
    WindowAssignerContext,
    require_timestamp,
)
from panes.windowing.triggers.base import Trigger
from panes.windowing.triggers.event_time import EventTimeTrigger
from panes.windowing.triggers.processing_time import ProcessingTimeTrigger
from panes.windowing.windows import TimeWindow

T = TypeVar("T")


class SessionWindowTimeGapExtractor(ABC, Generic[T]):
    """The session gap (ms, ``> 0``) for an element (Flink's ``SessionWindowTimeGapExtractor``)."""

    @abstractmethod
    def extract(self, element: T) -> int: ...


class _CallableGap(SessionWindowTimeGapExtractor[T]):
    def __init__(self, fn: Callable[[T], DurationLike]) -> None:
        self._fn = fn

    def extract(self, element: T) -> int:
        return duration_ms(self._fn(element), name="dynamic session gap")


def as_gap_extractor(
    fn: SessionWindowTimeGapExtractor[T] | Callable[[T], DurationLike],
) -> SessionWindowTimeGapExtractor[T]:
    if isinstance(fn, SessionWindowTimeGapExtractor):
        return fn
    if callable(fn):
        return _CallableGap(fn)
    raise TypeError(f"expected a SessionWindowTimeGapExtractor or a callable element -> gap, got {type(fn).__name__}")


def _fixed_gap(owner: str, gap: DurationLike) -> int:
    gap_ms = duration_ms(gap, name=f"{owner} gap")
    if gap_ms <= 0:
        raise ValueError(f"{owner} parameters must satisfy 0 < gap (got gap={gap_ms} ms)")
    return gap_ms


def _dynamic_gap(extractor: SessionWindowTimeGapExtractor[Any], element: Any) -> int:
    gap = extractor.extract(element)
    if gap <= 0:
        raise BadRecordError(f"Dynamic session time gap must satisfy 0 < gap (got gap={gap} ms for {element!r})")
    return gap


class _Sessions(MergingWindowAssigner[Any, TimeWindow]):
    def merge_windows(self, windows: Iterable[TimeWindow], callback: MergeCallback) -> None:
        TimeWindow.merge_windows(windows, callback)

    def window_type(self) -> type[TimeWindow]:
        return TimeWindow


class EventTimeSessionWindows(_Sessions):
    """Sessions on the element timestamp with a fixed ``gap > 0``; default trigger: :class:`EventTimeTrigger`."""

    def __init__(self, gap: DurationLike) -> None:
        self.gap = _fixed_gap("EventTimeSessionWindows", gap)

    @classmethod
    def with_gap(cls, gap: DurationLike) -> EventTimeSessionWindows:
        return cls(gap)

    @staticmethod
    def with_dynamic_gap(
        gap_extractor: SessionWindowTimeGapExtractor[Any] | Callable[[Any], DurationLike],
    ) -> DynamicEventTimeSessionWindows:
        return DynamicEventTimeSessionWindows(gap_extractor)

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> list[TimeWindow]:
        start = require_timestamp(timestamp)
        return [TimeWindow.of_size(start, self.gap)]

    def get_default_trigger(self) -> Trigger[Any, Any]:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"EventTimeSessionWindows(gap={self.gap})"


class ProcessingTimeSessionWindows(_Sessions):
    """Sessions on processing time with a fixed ``gap > 0``; default trigger: :class:`ProcessingTimeTrigger`."""

    def __init__(self, gap: DurationLike) -> None:
        self.gap = _fixed_gap("ProcessingTimeSessionWindows", gap)

    @classmethod
    def with_gap(cls, gap: DurationLike) -> ProcessingTimeSessionWindows:
        return cls(gap)

    @staticmethod
    def with_dynamic_gap(
        gap_extractor: SessionWindowTimeGapExtractor[Any] | Callable[[Any], DurationLike],
    ) -> DynamicProcessingTimeSessionWindows:
        return DynamicProcessingTimeSessionWindows(gap_extractor)

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> list[TimeWindow]:
        now = context.get_current_processing_time()
        return [TimeWindow.of_size(now, self.gap)]

    def get_default_trigger(self) -> Trigger[Any, Any]:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"ProcessingTimeSessionWindows(gap={self.gap})"


class DynamicEventTimeSessionWindows(_Sessions):
    """Event-time sessions whose gap ``gap_extractor(element)`` is chosen per element."""

    def __init__(self, gap_extractor: SessionWindowTimeGapExtractor[Any] | Callable[[Any], DurationLike]) -> None:
        self.gap_extractor = as_gap_extractor(gap_extractor)

    @classmethod
    def with_dynamic_gap(
        cls, gap_extractor: SessionWindowTimeGapExtractor[Any] | Callable[[Any], DurationLike]
    ) -> DynamicEventTimeSessionWindows:
        return cls(gap_extractor)

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> list[TimeWindow]:
        start = require_timestamp(timestamp)
        return [TimeWindow.of_size(start, _dynamic_gap(self.gap_extractor, element))]

    def get_default_trigger(self) -> Trigger[Any, Any]:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


class DynamicProcessingTimeSessionWindows(_Sessions):
    """Processing-time sessions whose gap ``gap_extractor(element)`` is chosen per element."""

    def __init__(self, gap_extractor: SessionWindowTimeGapExtractor[Any] | Callable[[Any], DurationLike]) -> None:
        self.gap_extractor = as_gap_extractor(gap_extractor)

    @classmethod
    def with_dynamic_gap(
        cls, gap_extractor: SessionWindowTimeGapExtractor[Any] | Callable[[Any], DurationLike]
    ) -> DynamicProcessingTimeSessionWindows:
        return cls(gap_extractor)

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> list[TimeWindow]:
        now = context.get_current_processing_time()
        return [TimeWindow.of_size(now, _dynamic_gap(self.gap_extractor, element))]

    def get_default_trigger(self) -> Trigger[Any, Any]:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False
