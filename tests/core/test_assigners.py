"""Window assigners (Flink's ``TumblingEventTimeWindowsTest``, ``SlidingEventTimeWindowsTest``,
``EventTimeSessionWindowsTest``, ``DynamicEventTimeSessionWindowsTest``, their processing-time
variants, ``GlobalWindowsTest`` and ``WindowStaggerTest``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest

from panes.testing import WindowOperatorHarness
from panes.time import LONG_MAX, LONG_MIN
from panes.windowing import (
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EndOfStreamTrigger,
    EventTimeSessionWindows,
    EventTimeTrigger,
    GlobalWindow,
    GlobalWindows,
    MissingTimestampError,
    NeverTrigger,
    ProcessingTimeSessionWindows,
    ProcessingTimeTrigger,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TimeWindow,
    TriggerResult,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowStagger,
)
from tests.core.support import first, records


@dataclass
class Clock:
    """A ``WindowAssignerContext`` with a settable processing time."""

    now: int = 0

    def get_current_processing_time(self) -> int:
        return self.now


def W(start: int, end: int) -> TimeWindow:
    return TimeWindow(start, end)


# -- tumbling -------------------------------------------------------------------------------------------------


def test_tumbling_event_time_assignment() -> None:
    assigner = TumblingEventTimeWindows.of(5000)
    ctx = Clock()
    assert assigner.assign_windows("x", 0, ctx) == [W(0, 5000)]
    assert assigner.assign_windows("x", 4999, ctx) == [W(0, 5000)]
    assert assigner.assign_windows("x", 5000, ctx) == [W(5000, 10000)]
    assert assigner.assign_windows("x", -1, ctx) == [W(-5000, 0)]


def test_tumbling_event_time_with_offsets() -> None:
    ctx = Clock()
    positive = TumblingEventTimeWindows.of(5000, 100)
    assert positive.assign_windows("x", 100, ctx) == [W(100, 5100)]
    assert positive.assign_windows("x", 5099, ctx) == [W(100, 5100)]
    assert positive.assign_windows("x", 5100, ctx) == [W(5100, 10100)]
    negative = TumblingEventTimeWindows.of(5000, -100)
    assert negative.assign_windows("x", 0, ctx) == [W(-100, 4900)]
    assert negative.assign_windows("x", 4899, ctx) == [W(-100, 4900)]
    assert negative.assign_windows("x", 4900, ctx) == [W(4900, 9900)]


def test_tumbling_accepts_timedeltas() -> None:
    assigner = TumblingEventTimeWindows.of(timedelta(seconds=5), timedelta(seconds=1))
    ctx = Clock()
    assert assigner.assign_windows("x", 1000, ctx) == [W(1000, 6000)]
    assert assigner.assign_windows("x", 5999, ctx) == [W(1000, 6000)]
    assert assigner.assign_windows("x", 6000, ctx) == [W(6000, 11000)]


def test_tumbling_natural_stagger_starts_windows_at_the_first_elements_processing_time() -> None:
    assigner = TumblingEventTimeWindows.of(5000, 0, WindowStagger.NATURAL)
    ctx = Clock(150)
    assert assigner.assign_windows("x", 150, ctx) == [W(150, 5150)]
    ctx.now = 4000  # the stagger offset is fixed by the first element
    assert assigner.assign_windows("x", 5099, ctx) == [W(150, 5150)]
    assert assigner.assign_windows("x", 5300, ctx) == [W(5150, 10150)]


def test_window_stagger_offsets() -> None:
    assert WindowStagger.ALIGNED.get_stagger_offset(12345, 1000) == 0
    assert WindowStagger.NATURAL.get_stagger_offset(12345, 1000) == 345
    assert WindowStagger.NATURAL.get_stagger_offset(-1, 1000) == 999  # the offset into its window
    for _ in range(50):
        assert 0 <= WindowStagger.RANDOM.get_stagger_offset(0, 1000) < 1000


def test_random_stagger_shifts_every_window_of_an_assigner_by_the_same_offset() -> None:
    assigner = TumblingEventTimeWindows.of(1000, 0, WindowStagger.RANDOM)
    ctx = Clock()
    starts = {assigner.assign_windows("x", ts, ctx)[0].start % 1000 for ts in range(0, 10_000, 37)}
    assert len(starts) == 1
    assert assigner.stagger_offset is not None
    assert starts == {assigner.stagger_offset % 1000}


def test_each_window_operator_has_its_own_stagger_offset() -> None:
    assigner = TumblingProcessingTimeWindows.of(1000, 0, WindowStagger.NATURAL)
    a = WindowOperatorHarness(assigner, lambda k, c, e: [c.window()], key_selector=lambda v: 0, processing_time=120)
    b = WindowOperatorHarness(assigner, lambda k, c, e: [c.window()], key_selector=lambda v: 0, processing_time=450)
    a.process_element("x")
    b.process_element("x")
    a.set_processing_time(2000)
    b.set_processing_time(2000)
    assert records(a) == [(W(120, 1120), 1119)]
    assert records(b) == [(W(450, 1450), 1449)]
    assert assigner.stagger_offset is None  # the operators staggered their own copies


def test_tumbling_processing_time_uses_the_processing_time_not_the_timestamp() -> None:
    assigner = TumblingProcessingTimeWindows.of(5000)
    ctx = Clock(0)
    assert assigner.assign_windows("x", LONG_MIN, ctx) == [W(0, 5000)]
    ctx.now = 4999
    assert assigner.assign_windows("x", 100_000, ctx) == [W(0, 5000)]
    ctx.now = 5000
    assert assigner.assign_windows("x", 0, ctx) == [W(5000, 10000)]
    offset = TumblingProcessingTimeWindows.of(5000, -100)
    ctx.now = 4900
    assert offset.assign_windows("x", 0, ctx) == [W(4900, 9900)]


# -- sliding ------------------------------------------------------------------------------------------------------


def test_sliding_event_time_assignment_latest_start_first() -> None:
    assigner = SlidingEventTimeWindows.of(5000, 1000)
    ctx = Clock()
    assert assigner.assign_windows("x", 0, ctx) == [
        W(0, 5000),
        W(-1000, 4000),
        W(-2000, 3000),
        W(-3000, 2000),
        W(-4000, 1000),
    ]
    assert assigner.assign_windows("x", 4999, ctx) == [W(s, s + 5000) for s in (4000, 3000, 2000, 1000, 0)]
    assert assigner.assign_windows("x", 5000, ctx) == [W(s, s + 5000) for s in (5000, 4000, 3000, 2000, 1000)]


def test_sliding_event_time_with_offsets() -> None:
    ctx = Clock()
    assigner = SlidingEventTimeWindows.of(5000, 1000, 100)
    assert assigner.assign_windows("x", 100, ctx) == [W(s, s + 5000) for s in (100, -900, -1900, -2900, -3900)]
    assert assigner.assign_windows("x", 5099, ctx) == [W(s, s + 5000) for s in (4100, 3100, 2100, 1100, 100)]
    assert assigner.assign_windows("x", 5100, ctx) == [W(s, s + 5000) for s in (5100, 4100, 3100, 2100, 1100)]
    negative = SlidingEventTimeWindows.of(5000, 1000, -100)
    assert negative.assign_windows("x", 0, ctx) == [W(s, s + 5000) for s in (-100, -1100, -2100, -3100, -4100)]
    assert negative.assign_windows("x", 4899, ctx) == [W(s, s + 5000) for s in (3900, 2900, 1900, 900, -100)]
    assert negative.assign_windows("x", 4900, ctx) == [W(s, s + 5000) for s in (4900, 3900, 2900, 1900, 900)]
    units = SlidingEventTimeWindows.of(timedelta(seconds=5), timedelta(seconds=1), timedelta(milliseconds=500))
    assert units.assign_windows("x", 100, ctx) == [W(s, s + 5000) for s in (-500, -1500, -2500, -3500, -4500)]
    assert units.assign_windows("x", 5499, ctx) == [W(s, s + 5000) for s in (4500, 3500, 2500, 1500, 500)]


def test_sliding_windows_whose_size_is_not_a_multiple_of_the_slide() -> None:
    assigner = SlidingEventTimeWindows.of(5000, 2000)
    ctx = Clock()
    assert assigner.assign_windows("x", 0, ctx) == [W(0, 5000), W(-2000, 3000), W(-4000, 1000)]
    assert assigner.assign_windows("x", 1000, ctx) == [W(0, 5000), W(-2000, 3000)]  # -4000 + 5000 <= 1000


def test_sliding_windows_smaller_than_the_slide_leave_gaps() -> None:
    assigner = SlidingEventTimeWindows.of(1000, 3000)
    ctx = Clock()
    assert assigner.assign_windows("x", 500, ctx) == [W(0, 1000)]
    assert assigner.assign_windows("x", 1500, ctx) == []  # between windows: no window at all


def test_sliding_processing_time_uses_the_processing_time() -> None:
    assigner = SlidingProcessingTimeWindows.of(3000, 1000)
    ctx = Clock(3)
    assert assigner.assign_windows("x", LONG_MAX, ctx) == [W(0, 3000), W(-1000, 2000), W(-2000, 1000)]


# -- sessions --------------------------------------------------------------------------------------------------


def test_event_time_session_windows_start_at_the_timestamp() -> None:
    assigner = EventTimeSessionWindows.with_gap(5000)
    ctx = Clock()
    for ts in (0, 4999, 5000, -7):
        assert assigner.assign_windows("x", ts, ctx) == [W(ts, ts + 5000)]
    assert EventTimeSessionWindows.with_gap(timedelta(seconds=5)).assign_windows("x", 1, ctx) == [W(1, 5001)]


def test_processing_time_session_windows_start_at_the_processing_time() -> None:
    assigner = ProcessingTimeSessionWindows.with_gap(5000)
    ctx = Clock(4999)
    assert assigner.assign_windows("x", 0, ctx) == [W(4999, 9999)]
    assert assigner.assign_windows("x", LONG_MIN, ctx) == [W(4999, 9999)]


class GapByValue(SessionWindowTimeGapExtractor[Any]):
    def extract(self, element: Any) -> int:
        return int(element)


def test_dynamic_session_gaps_come_from_each_element() -> None:
    ctx = Clock(100)
    event = DynamicEventTimeSessionWindows.with_dynamic_gap(GapByValue())
    assert event.assign_windows(3000, 10, ctx) == [W(10, 3010)]
    assert event.assign_windows(1000, 10, ctx) == [W(10, 1010)]
    assert EventTimeSessionWindows.with_dynamic_gap(lambda e: timedelta(seconds=e)).assign_windows(2, 0, ctx) == [
        W(0, 2000)
    ]
    processing = DynamicProcessingTimeSessionWindows.with_dynamic_gap(GapByValue())
    assert processing.assign_windows(50, LONG_MIN, ctx) == [W(100, 150)]
    assert ProcessingTimeSessionWindows.with_dynamic_gap(lambda e: 7).assign_windows("x", 0, ctx) == [W(100, 107)]


@pytest.mark.parametrize("gap", [0, -1])
@pytest.mark.parametrize("cls", [DynamicEventTimeSessionWindows, DynamicProcessingTimeSessionWindows])
def test_a_dynamic_gap_must_be_positive_for_every_element(cls: Any, gap: int) -> None:
    assigner = cls.with_dynamic_gap(lambda e: gap)
    with pytest.raises(ValueError, match="0 < gap"):
        assigner.assign_windows("x", 0, Clock())


def test_session_assigners_merge_overlapping_and_touching_windows() -> None:
    merges: list[tuple[set[TimeWindow], TimeWindow]] = []
    for assigner in (
        EventTimeSessionWindows.with_gap(5),
        ProcessingTimeSessionWindows.with_gap(5),
        DynamicEventTimeSessionWindows.with_dynamic_gap(lambda e: 5),
        DynamicProcessingTimeSessionWindows.with_dynamic_gap(lambda e: 5),
    ):
        merges.clear()
        assigner.merge_windows([W(0, 5), W(5, 10), W(11, 16)], lambda m, r: merges.append((set(m), r)))
        assert merges == [({W(0, 5), W(5, 10)}, W(0, 10))]


# -- global windows ---------------------------------------------------------------------------------------------


def test_global_windows_put_everything_into_the_global_window() -> None:
    assigner = GlobalWindows.create()
    ctx = Clock()
    assert assigner.assign_windows("x", LONG_MIN, ctx) == [GlobalWindow()]
    assert assigner.assign_windows("y", 123, ctx) == [GlobalWindow()]
    assert not assigner.is_event_time()
    trigger = assigner.get_default_trigger()
    assert isinstance(trigger, NeverTrigger)
    assert not trigger.can_merge()
    assert trigger.on_element("x", 0, GlobalWindow(), None) is TriggerResult.CONTINUE  # type: ignore[arg-type]
    assert trigger.on_event_time(LONG_MAX, GlobalWindow(), None) is TriggerResult.CONTINUE  # type: ignore[arg-type]
    assert trigger.on_processing_time(0, GlobalWindow(), None) is TriggerResult.CONTINUE  # type: ignore[arg-type]


def test_global_windows_with_the_default_trigger_never_emit() -> None:
    h = WindowOperatorHarness(GlobalWindows.create(), reduce=lambda a, b: a + b, key_selector=lambda v: 0)
    for value in range(5):
        h.process_element(value, value)
    h.process_watermark(LONG_MAX)
    h.set_processing_time(LONG_MAX)
    assert records(h) == []


def test_end_of_stream_trigger_fires_the_global_window_on_the_final_watermark() -> None:
    """Flink's ``testEndOfStreamTrigger``: nothing until ``Watermark.MAX_WATERMARK``, then one result per
    key with timestamp ``Long.MAX_VALUE``."""
    assigner = GlobalWindows.create_with_end_of_stream_trigger()
    assert isinstance(assigner.get_default_trigger(), EndOfStreamTrigger)
    h = WindowOperatorHarness(assigner, reduce=lambda a, b: (a[0], a[1] + b[1]), key_selector=first)
    for key, ts in [("key2", 3000), ("key2", 3999), ("key1", 20), ("key1", 0), ("key1", 999)]:
        h.process_element((key, 1), ts)
    for ts in (1998, 1999, 1000):
        h.process_element(("key2", 1), ts)
    h.process_watermark(LONG_MAX - 1)
    assert records(h) == []
    h.process_watermark(LONG_MAX)
    assert sorted(records(h)) == [(("key1", 3), LONG_MAX), (("key2", 5), LONG_MAX)]


# -- properties of every assigner ------------------------------------------------------------------------------

EVENT_TIME = [
    TumblingEventTimeWindows.of(5000),
    SlidingEventTimeWindows.of(5000, 100),
    EventTimeSessionWindows.with_gap(5000),
    DynamicEventTimeSessionWindows.with_dynamic_gap(lambda e: 5),
]
PROCESSING_TIME = [
    TumblingProcessingTimeWindows.of(5000),
    SlidingProcessingTimeWindows.of(5000, 100),
    ProcessingTimeSessionWindows.with_gap(5000),
    DynamicProcessingTimeSessionWindows.with_dynamic_gap(lambda e: 5),
]


@pytest.mark.parametrize("assigner", EVENT_TIME, ids=lambda a: type(a).__name__)
def test_event_time_assigners(assigner: Any) -> None:
    assert assigner.is_event_time()
    assert isinstance(assigner.get_default_trigger(), EventTimeTrigger)


@pytest.mark.parametrize("assigner", PROCESSING_TIME, ids=lambda a: type(a).__name__)
def test_processing_time_assigners(assigner: Any) -> None:
    assert not assigner.is_event_time()
    assert isinstance(assigner.get_default_trigger(), ProcessingTimeTrigger)


@pytest.mark.parametrize("assigner", EVENT_TIME, ids=lambda a: type(a).__name__)
@pytest.mark.parametrize("timestamp", [None, LONG_MIN])
def test_event_time_assigners_need_a_timestamp(assigner: Any, timestamp: int | None) -> None:
    with pytest.raises(MissingTimestampError, match="no timestamp"):
        assigner.assign_windows("x", timestamp, Clock())


def test_an_element_without_timestamp_fails_the_window_operator() -> None:
    h = WindowOperatorHarness(TumblingEventTimeWindows.of(10), reduce=lambda a, b: a + b, key_selector=lambda v: 0)
    with pytest.raises(MissingTimestampError):
        h.process_element(1)  # a record without a timestamp
    # processing-time windows do not need one
    h = WindowOperatorHarness(TumblingProcessingTimeWindows.of(10), reduce=lambda a, b: a + b, key_selector=lambda v: 0)
    h.process_element(1)
    h.set_processing_time(10)
    assert records(h) == [(1, 9)]
