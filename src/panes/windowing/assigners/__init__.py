"""Window assigners (Flink's ``org.apache.flink.streaming.api.windowing.assigners``)."""

from panes.windowing.assigners.base import (
    MergingWindowAssigner,
    MissingTimestampError,
    WindowAssigner,
    WindowAssignerContext,
)
from panes.windowing.assigners.global_windows import GlobalWindows
from panes.windowing.assigners.session import (
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    ProcessingTimeSessionWindows,
    SessionWindowTimeGapExtractor,
)
from panes.windowing.assigners.sliding import SlidingEventTimeWindows, SlidingProcessingTimeWindows
from panes.windowing.assigners.stagger import WindowStagger
from panes.windowing.assigners.tumbling import TumblingEventTimeWindows, TumblingProcessingTimeWindows

__all__ = [
    "DynamicEventTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows",
    "EventTimeSessionWindows",
    "GlobalWindows",
    "MergingWindowAssigner",
    "MissingTimestampError",
    "ProcessingTimeSessionWindows",
    "SessionWindowTimeGapExtractor",
    "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows",
    "TumblingEventTimeWindows",
    "TumblingProcessingTimeWindows",
    "WindowAssigner",
    "WindowAssignerContext",
    "WindowStagger",
]
