"""Pane info (``panes.windowing.pane_info``): each firing's index, timing and whether it is the last, on the
general, evicting and aligned window operators (harness), and in BATCH execution."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import ListSink, RuntimeExecutionMode, StreamEnvironment
from panes.errors import UnsupportedOperationError
from panes.functions import Count
from panes.testing.harness import WindowOperatorHarness
from panes.watermarks import WatermarkStrategy
from panes.windowing import (
    ContinuousEventTimeTrigger,
    CountEvictor,
    CountTrigger,
    EventTimeSessionWindows,
    TumblingEventTimeWindows,
    WindowRow,
)
from panes.windowing.aligned import AlignedWindowOperator
from panes.windowing.functions import ProcessWindowFunction, WindowContext
from panes.windowing.internal_functions import process_spec
from tests.core.support import num_pane_info_entries


class Panes(ProcessWindowFunction[Any, Any, Any, Any]):
    def process(self, key: Any, context: WindowContext[Any], elements: Any) -> Any:
        pane = context.pane()
        yield (context.window().start, pane.index, pane.timing.value, pane.is_last, pane.is_first)

    def clear(self, context: WindowContext[Any]) -> None:
        with pytest.raises(UnsupportedOperationError, match="while a pane fires"):
            context.pane()


def harness(trigger: Any = None, lateness: int = 0, assigner: Any = None, evictor: Any = None) -> Any:
    return WindowOperatorHarness(
        assigner or TumblingEventTimeWindows.of(10),
        Panes(),
        key_selector=lambda element: "k",
        trigger=trigger,
        evictor=evictor,
        allowed_lateness=lateness,
    )


def outputs(h: Any) -> list[tuple[Any, ...]]:
    return h.extract_output_values()  # type: ignore[no-any-return]


@pytest.mark.parametrize("evictor", [None, CountEvictor.of(10)], ids=["general", "evicting"])
def test_on_time_then_late_firings_and_the_cleanup_of_the_count(evictor: Any) -> None:
    h = harness(lateness=20, evictor=evictor)
    h.process_element("a", 1)
    h.process_element("b", 2)
    h.process_watermark(9)
    h.process_element("c", 3)  # late, within the allowed lateness: fires at once
    assert outputs(h) == [(0, 0, "on time", False, True), (0, 1, "late", False, False)]
    assert num_pane_info_entries(h) == 1
    h.process_watermark(29)  # the cleanup time: no firing, the count goes with the window
    assert num_pane_info_entries(h) == 0


def test_without_lateness_the_on_time_firing_is_the_last() -> None:
    h = harness()
    h.process_element("a", 1)
    h.process_watermark(100)
    assert outputs(h) == [(0, 0, "on time", True, True)]


def test_early_firings_of_one_watermark_jump_are_early_in_order() -> None:
    h = harness(trigger=ContinuousEventTimeTrigger.of(3))
    h.process_element("a", 1)
    h.process_watermark(9)  # the timers at 3, 6 and 9 fire in this one advance
    assert outputs(h) == [(0, 0, "early", False, True), (0, 1, "early", False, False), (0, 2, "on time", True, False)]


def test_merged_sessions_count_the_firings_of_the_window_that_fired_most() -> None:
    h = harness(trigger=CountTrigger.of(1), assigner=EventTimeSessionWindows.with_gap(5))
    for timestamp in (1, 10, 5):  # the third element joins both sessions into one
        h.process_element("x", timestamp)
    assert [(start, index, timing) for start, index, timing, _, _ in outputs(h)] == [
        (1, 0, "early"),
        (10, 0, "early"),
        (1, 1, "early"),
    ]


def test_the_aligned_operator_counts_alike() -> None:
    operator = AlignedWindowOperator(TumblingEventTimeWindows.of(10), process_spec(Panes()), lambda e: "k", None, 20)
    from panes.testing.harness import OneInputOperatorHarness

    h = OneInputOperatorHarness(operator)
    h.process_element("a", 1)
    h.process_watermark(9)
    h.process_element("c", 3)
    h.process_watermark(29)
    assert h.extract_output_values() == [(0, 0, "on time", False, True), (0, 1, "late", False, False)]


def test_batch_execution_fires_each_window_once_on_time_and_last() -> None:
    env = StreamEnvironment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    out = ListSink()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    stream = env.from_collection([{"k": "a", "ts": 1}, {"k": "a", "ts": 15}], type_info="k STRING, ts BIGINT")
    stream.assign_timestamps_and_watermarks(strategy).key_by("k").window(TumblingEventTimeWindows.of(10)).aggregate(
        Count(), WindowRow(pane="pane")
    ).sink_to(out)
    env.execute()
    assert [(r["window_start"], r["pane_index"], r["pane_timing"], r["pane_last"]) for r in out.values] == [
        (0, 0, "on time", True),
        (10, 0, "on time", True),
    ]


def test_window_row_pane_columns() -> None:
    import pyarrow as pa

    assert WindowRow(pane="pane").row_type(pa.string(), pa.int64()).arrow_type.names == [
        "key", "window_start", "window_end", "value", "pane_index", "pane_timing", "pane_last"
    ]  # fmt: skip
    with pytest.raises(ValueError, match="must differ"):
        WindowRow(value="pane_index", pane="pane")


def test_a_processing_time_window_fires_on_time_when_the_clock_passes_its_end() -> None:
    from panes.windowing import TumblingProcessingTimeWindows

    h = harness(assigner=TumblingProcessingTimeWindows.of(10))
    h.set_processing_time(1)
    h.process_element("a", None)
    h.set_processing_time(12)  # the clock passes 9, the window's end, in one advance
    assert outputs(h) == [(0, 0, "on time", True, True)]


def aligned_harness(lateness: int) -> Any:
    from panes.testing.harness import OneInputOperatorHarness

    spec = process_spec(Panes())
    return OneInputOperatorHarness(
        AlignedWindowOperator(TumblingEventTimeWindows.of(10), spec, lambda e: "k", None, lateness)
    )


IMPLEMENTATIONS = {
    "general": lambda lateness: harness(lateness=lateness),
    "evicting": lambda lateness: harness(lateness=lateness, evictor=CountEvictor.of(10)),
    "aligned": aligned_harness,
}


@pytest.mark.parametrize("implementation", sorted(IMPLEMENTATIONS))
def test_a_firing_in_the_advance_that_reaches_the_cleanup_time_is_the_last(implementation: str) -> None:
    # lateness 20: [0, 10) is cleaned up at 29; the watermark jumps from nothing to 40, so the on-time firing at 9
    # is followed by the cleanup in the same advance, before any element could come
    h = IMPLEMENTATIONS[implementation](20)
    h.process_element("a", 1)
    h.process_watermark(40)
    assert outputs(h) == [(0, 0, "on time", True, True)]


@pytest.mark.parametrize("implementation", sorted(IMPLEMENTATIONS))
def test_an_advance_short_of_the_cleanup_time_leaves_room_for_late_firings(implementation: str) -> None:
    h = IMPLEMENTATIONS[implementation](20)
    h.process_element("a", 1)
    h.process_watermark(28)  # one before the cleanup time: an element at 1 would still be taken
    h.process_element("b", 2)
    h.process_watermark(10_000)
    assert outputs(h) == [(0, 0, "on time", False, True), (0, 1, "late", False, False)]


@pytest.mark.parametrize("implementation", sorted(IMPLEMENTATIONS))
def test_the_end_of_the_input_makes_a_window_that_fires_then_last(implementation: str) -> None:
    h = IMPLEMENTATIONS[implementation](20)
    h.process_element("a", 1)
    h.process_watermark(2**63 - 1)
    assert outputs(h) == [(0, 0, "on time", True, True)]


def test_of_several_firings_in_the_final_advance_only_the_last_is_last_and_each_is_counted() -> None:
    h = harness(trigger=ContinuousEventTimeTrigger.of(4), lateness=20)
    h.process_element("a", 1)
    h.process_watermark(2**63 - 1)  # timers at 4, 8 and 9 fire in this one advance, then the cleanup
    assert outputs(h) == [(0, 0, "early", False, True), (0, 1, "early", False, False), (0, 2, "on time", True, False)]


def test_a_trigger_timer_before_the_cleanup_keeps_a_firing_from_being_the_last() -> None:
    # AfterWatermark with early count firings: the early firing at element time is not last, and in a jump past
    # the cleanup the on-time firing at 9 is (no other timer of the window is left before the cleanup)
    from panes.windowing import AfterWatermark

    h = harness(trigger=AfterWatermark(early=CountTrigger.of(1)), lateness=5)
    h.process_element("a", 1)
    h.process_watermark(100)
    assert outputs(h) == [(0, 0, "early", False, True), (0, 1, "on time", True, False)]


def test_a_count_trigger_never_knows_its_firing_is_the_last() -> None:
    h = harness(trigger=CountTrigger.of(1), lateness=5)
    h.process_element("a", 1)
    h.process_watermark(100)  # the cleanup emits nothing
    assert outputs(h) == [(0, 0, "early", False, True)]


def test_batch_execution_fires_early_panes_too_and_the_end_of_the_key_is_last() -> None:
    from panes.windowing import AfterWatermark

    env = StreamEnvironment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    out = ListSink()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    rows = [{"k": "a", "ts": t} for t in (1, 2, 3, 4)]
    stream = env.from_collection(rows, type_info="k STRING, ts BIGINT").assign_timestamps_and_watermarks(strategy)
    windowed = stream.key_by("k").window(TumblingEventTimeWindows.of(10)).allowed_lateness(30_000)
    windowed.trigger(AfterWatermark(early=CountTrigger.of(3))).aggregate(Count(), WindowRow(pane="pane")).sink_to(out)
    env.execute()
    assert [(r["value"], r["pane_index"], r["pane_timing"], r["pane_last"]) for r in out.values] == [
        (3, 0, "early", False),
        (4, 1, "on time", True),
    ]
