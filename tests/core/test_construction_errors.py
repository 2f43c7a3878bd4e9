"""Invalid configurations are refused when they are built, naming the condition Flink checks.

Flink: ``TumblingEventTimeWindows`` "parameters must satisfy abs(offset) < size", ``SlidingEventTimeWindows``
"abs(offset) < slide and size > 0", ``EventTimeSessionWindows`` "0 < size" (the gap), a dynamic gap
"0 < gap" per element, ``WindowedStream.allowedLateness`` "The allowed lateness cannot be negative.",
``WindowedStream.trigger`` "A merging window assigner cannot be used with a trigger that does not support
merging." (``UnsupportedOperationException``). Also refused: a trigger that needs a ``TimeWindow`` on other
windows (Flink fails such a job, see below).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from panes.datastream import StreamEnvironment
from panes.errors import UnsupportedOperationError
from panes.local import LocalRunner
from panes.tags import OutputTag
from panes.testing import WindowOperatorHarness
from panes.windowing import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountEvictor,
    CountTrigger,
    DeltaTrigger,
    DynamicEventTimeSessionWindows,
    EndOfStreamTrigger,
    EventTimeSessionWindows,
    EventTimeTrigger,
    GlobalWindows,
    NeverTrigger,
    ProcessingTimeoutTrigger,
    ProcessingTimeSessionWindows,
    ProcessingTimeTrigger,
    PurgingTrigger,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TimeEvictor,
    Trigger,
    TriggerContext,
    TriggerResult,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    count_window_parts,
)
from panes.windowing.internal_functions import process_spec
from panes.windowing.operator import WindowOperator

TUMBLING = [TumblingEventTimeWindows, TumblingProcessingTimeWindows]
SLIDING = [SlidingEventTimeWindows, SlidingProcessingTimeWindows]
SESSIONS = [EventTimeSessionWindows, ProcessingTimeSessionWindows]


@pytest.mark.parametrize("cls", TUMBLING)
@pytest.mark.parametrize("size", [0, -1, timedelta(seconds=-1)])
def test_tumbling_size_must_be_positive(cls: Any, size: Any) -> None:
    with pytest.raises(ValueError, match=r"size > 0"):
        cls.of(size)


@pytest.mark.parametrize("cls", TUMBLING)
@pytest.mark.parametrize(("size", "offset"), [(10, 20), (10, -11), (10, 10), (10, -10)])
def test_tumbling_offset_must_be_smaller_than_the_size(cls: Any, size: int, offset: int) -> None:
    with pytest.raises(ValueError, match=r"abs\(offset\) < size"):
        cls.of(size, offset)


@pytest.mark.parametrize("cls", TUMBLING)
def test_tumbling_offsets_just_inside_the_size_are_fine(cls: Any) -> None:
    assert cls.of(10, 9).global_offset == 9
    assert cls.of(10, -9).global_offset == -9


@pytest.mark.parametrize("cls", SLIDING)
@pytest.mark.parametrize(("size", "slide"), [(-2000, 1000), (0, 1000)])
def test_sliding_size_must_be_positive(cls: Any, size: int, slide: int) -> None:
    with pytest.raises(ValueError, match=r"size > 0"):
        cls.of(size, slide)


@pytest.mark.parametrize("cls", SLIDING)
@pytest.mark.parametrize("slide", [0, -1000])
def test_sliding_slide_must_be_positive(cls: Any, slide: int) -> None:
    with pytest.raises(ValueError, match=r"slide > 0"):
        cls.of(2000, slide)


@pytest.mark.parametrize("cls", SLIDING)
@pytest.mark.parametrize("offset", [-11_000, 11_000, 10_000, -10_000])
def test_sliding_offset_must_be_smaller_than_the_slide(cls: Any, offset: int) -> None:
    with pytest.raises(ValueError, match=r"abs\(offset\) < slide"):
        cls.of(20_000, 10_000, offset)


@pytest.mark.parametrize("cls", SESSIONS)
@pytest.mark.parametrize("gap", [0, -1000, timedelta(0)])
def test_session_gap_must_be_positive(cls: Any, gap: Any) -> None:
    with pytest.raises(ValueError, match=r"0 < gap"):
        cls.with_gap(gap)


@pytest.mark.parametrize("bad", [1.5, "10", None, True])
def test_durations_must_be_ints_or_timedeltas(bad: Any) -> None:
    with pytest.raises(TypeError):
        TumblingEventTimeWindows.of(bad)
    with pytest.raises(TypeError):
        SlidingEventTimeWindows.of(10, bad)
    with pytest.raises(TypeError):
        EventTimeSessionWindows.with_gap(bad)


def test_other_bad_arguments() -> None:
    with pytest.raises(TypeError, match="WindowStagger"):
        TumblingEventTimeWindows.of(10, 0, "NATURAL")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        DynamicEventTimeSessionWindows.with_dynamic_gap(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        DeltaTrigger.of(1.0, "not a function")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ProcessingTimeoutTrigger.of("not a trigger", 10)  # type: ignore[arg-type]


@pytest.mark.parametrize("count", [0, -1])
def test_counts_must_be_positive(count: int) -> None:
    with pytest.raises(ValueError, match="count > 0"):
        CountTrigger.of(count)
    with pytest.raises(ValueError, match="max_count > 0"):
        CountEvictor.of(count)
    with pytest.raises(ValueError, match="size > 0"):
        count_window_parts(count)
    with pytest.raises(ValueError, match="slide > 0"):
        count_window_parts(5, count)


def test_counts_must_be_ints() -> None:
    with pytest.raises(TypeError):
        CountTrigger.of(2.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        CountEvictor.of(True)
    with pytest.raises(TypeError):
        count_window_parts(3, 1.5)  # type: ignore[arg-type]


def test_time_evictor_size_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="window_size >= 0"):
        TimeEvictor.of(-1)
    assert TimeEvictor.of(0).window_size == 0


def _operator(assigner: Any, **kwargs: Any) -> WindowOperator:
    return WindowOperator(assigner, process_spec(lambda k, c, e: []), lambda v: v, **kwargs)


@pytest.mark.parametrize("lateness", [-1, timedelta(milliseconds=-5)])
def test_allowed_lateness_cannot_be_negative(lateness: Any) -> None:
    with pytest.raises(ValueError, match="allowed lateness cannot be negative"):
        _operator(TumblingEventTimeWindows.of(10), allowed_lateness=lateness)
    with pytest.raises(ValueError, match="allowed lateness cannot be negative"):
        WindowOperatorHarness(TumblingEventTimeWindows.of(10), reduce=max, key_selector=id, allowed_lateness=lateness)


def test_allowed_lateness_is_a_duration() -> None:
    assert _operator(TumblingEventTimeWindows.of(10), allowed_lateness=timedelta(seconds=2)).allowed_lateness == 2000
    with pytest.raises(TypeError):
        _operator(TumblingEventTimeWindows.of(10), allowed_lateness=1.5)
    with pytest.raises(TypeError):
        _operator(TumblingEventTimeWindows.of(10), allowed_lateness=True)


@pytest.mark.parametrize(
    "trigger",
    [
        DeltaTrigger.of(1.0, lambda a, b: b - a),
        NeverTrigger(),
        ProcessingTimeoutTrigger.of(EventTimeTrigger.create(), 10),
        PurgingTrigger.of(DeltaTrigger.of(1.0, lambda a, b: b - a)),
    ],
    ids=lambda t: type(t).__name__,
)
@pytest.mark.parametrize("assigner", [EventTimeSessionWindows.with_gap(10), ProcessingTimeSessionWindows.with_gap(10)])
def test_merging_assigners_need_a_trigger_that_can_merge(assigner: Any, trigger: Any) -> None:
    with pytest.raises(UnsupportedOperationError, match="merging window assigner cannot be used with a trigger"):
        _operator(assigner, trigger=trigger)


def test_non_merging_triggers_are_fine_with_non_merging_assigners() -> None:
    _operator(TumblingEventTimeWindows.of(10), trigger=DeltaTrigger.of(1.0, lambda a, b: b - a))
    _operator(GlobalWindows.create(), trigger=NeverTrigger())


def test_operator_arguments_are_type_checked() -> None:
    with pytest.raises(TypeError, match="WindowAssigner"):
        _operator("tumbling", trigger=EventTimeTrigger())
    with pytest.raises(TypeError, match="Trigger"):
        _operator(TumblingEventTimeWindows.of(10), trigger=lambda: None)
    with pytest.raises(TypeError, match="OutputTag"):
        _operator(TumblingEventTimeWindows.of(10), late_data_tag="late")
    with pytest.raises(TypeError, match="Evictor"):
        WindowOperatorHarness(TumblingEventTimeWindows.of(10), reduce=max, key_selector=id, evictor=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-empty"):
        OutputTag("")


# -- triggers that need a TimeWindow ----------------------------------------------------------------------------
# Flink types EventTimeTrigger and ProcessingTimeTrigger as Trigger<Object, TimeWindow> (and EndOfStreamTrigger as
# Trigger<Object, GlobalWindow>): on other windows a Java job does not compile and any other fails with a
# ClassCastException at the first element. panes refuses the combination when it is built.

TIME_WINDOW_TRIGGERS = [
    EventTimeTrigger.create(),
    ProcessingTimeTrigger.create(),
    PurgingTrigger.of(EventTimeTrigger.create()),
    ProcessingTimeoutTrigger.of(ProcessingTimeTrigger.create(), 10),
]


@pytest.mark.parametrize("trigger", TIME_WINDOW_TRIGGERS, ids=repr)
def test_time_window_triggers_are_refused_on_global_windows(trigger: Any) -> None:
    with pytest.raises(TypeError, match=r"needs TimeWindow windows .* makes GlobalWindow windows.*To fix it"):
        _operator(GlobalWindows.create(), trigger=trigger)


def test_count_windows_refuse_an_event_time_trigger_when_it_is_set() -> None:
    env = StreamEnvironment(LocalRunner(clock="manual"))
    stream = env.from_collection([("a", 1)])
    with pytest.raises(TypeError, match=r"EventTimeTrigger\(\) needs TimeWindow windows"):
        stream.key_by(lambda e: e[0]).count_window(3).trigger(EventTimeTrigger.create())
    with pytest.raises(TypeError, match=r"ProcessingTimeTrigger\(\) needs TimeWindow windows"):
        stream.count_window_all(3).trigger(ProcessingTimeTrigger.create())
    with pytest.raises(TypeError, match="time-window assigner"):
        stream.key_by(lambda e: e[0]).window(GlobalWindows.create()).trigger(EventTimeTrigger.create())


def test_the_end_of_stream_trigger_needs_the_global_window() -> None:
    with pytest.raises(TypeError, match=r"needs GlobalWindow windows .* makes TimeWindow windows"):
        _operator(TumblingEventTimeWindows.of(10), trigger=EndOfStreamTrigger())


class MaxTimestampTrigger(Trigger[Any, Any]):
    """A user-written trigger that reads the window's end: panes cannot know which windows it needs."""

    def on_element(self, element: Any, timestamp: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        return None


class OwnGlobalWindows(GlobalWindows):
    """A user-written assigner: panes does not assume which windows it makes."""

    def window_type(self) -> None:
        return None


@pytest.mark.parametrize(
    "trigger",
    [
        ContinuousEventTimeTrigger.of(10),
        ContinuousProcessingTimeTrigger.of(10),
        CountTrigger.of(2),
        DeltaTrigger.of(1.0, lambda a, b: b - a),
        NeverTrigger(),
        EndOfStreamTrigger(),
        PurgingTrigger.of(CountTrigger.of(2)),
        MaxTimestampTrigger(),
    ],
    ids=repr,
)
def test_triggers_for_any_window_and_user_triggers_are_fine_on_global_windows(trigger: Any) -> None:
    _operator(GlobalWindows.create(), trigger=trigger)


def test_an_assigner_that_does_not_say_its_windows_is_not_refused() -> None:
    _operator(OwnGlobalWindows(), trigger=EventTimeTrigger.create())
    _operator(TumblingEventTimeWindows.of(10), trigger=ProcessingTimeTrigger.create())
