"""Composite triggers on the window operator harness: each composite's firings on a worked example, the
composite against a hand-written trigger with the same rule (hypothesis, merging windows included), shared
timers, state kept apart, and what is refused."""

from __future__ import annotations

import operator
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from panes.errors import UnsupportedOperationError
from panes.state.descriptors import ReducingStateDescriptor
from panes.testing.harness import WindowOperatorHarness
from panes.windowing import (
    AfterEach,
    AfterWatermark,
    AllOf,
    AnyOf,
    CountTrigger,
    EndOfStreamTrigger,
    EventTimeSessionWindows,
    EventTimeTrigger,
    GlobalWindows,
    NeverTrigger,
    OrFinally,
    PurgingTrigger,
    Repeatedly,
    TumblingEventTimeWindows,
)
from panes.windowing.triggers import Trigger, TriggerContext, TriggerResult
from panes.windowing.windows import Window
from tests.composite_oracles import (
    CountAndEndOfWindow,
    CountOrEndOfWindow,
    CountThenEndOfWindow,
    CountUntilEndOfWindow,
    EarlyAndLate,
)


def sums(trigger: Trigger[Any, Any], assigner: Any = None, lateness: int = 0) -> WindowOperatorHarness:
    """A harness summing ``(key, value)`` elements per window with ``trigger``."""
    return WindowOperatorHarness(
        assigner or GlobalWindows.create(),
        lambda key, ctx, elements: [(key, sum(v for _, v in elements))],
        key_selector=lambda element: element[0],
        trigger=trigger,
        allowed_lateness=lateness,
    )


def feed(harness: WindowOperatorHarness, values: list[int]) -> list[int]:
    for value in values:
        harness.process_element(("k", value), value)
    return [v for _, v in harness.extract_output_values()]


def test_any_of_fires_on_count_or_at_the_end_of_the_window() -> None:
    harness = sums(AnyOf(CountTrigger.of(2), EventTimeTrigger()), TumblingEventTimeWindows.of(10))
    assert feed(harness, [1, 2, 3]) == [3]  # two elements
    harness.process_watermark(9)
    assert [v for _, v in harness.extract_output_values()] == [3, 6]  # the window's end


def test_all_of_fires_once_every_part_fired_since_its_last_firing() -> None:
    # every 2nd element fires the first part, every 3rd the second: both by the 3rd, both again by the 6th
    assert feed(sums(AllOf(CountTrigger.of(2), CountTrigger.of(3))), [1, 2, 3, 4, 5, 6]) == [6, 21]


def test_after_each_runs_its_parts_in_order_once() -> None:
    assert feed(sums(AfterEach(CountTrigger.of(2), CountTrigger.of(3))), list(range(1, 11))) == [3, 15]


def test_or_finally_fires_as_its_main_part_until_the_other_fires_a_last_time() -> None:
    assert feed(sums(OrFinally(CountTrigger.of(2), CountTrigger.of(5))), list(range(1, 11))) == [3, 10, 15]


def test_repeatedly_starts_a_finished_sequence_over() -> None:
    trigger = Repeatedly(AfterEach(CountTrigger.of(1), CountTrigger.of(2)))
    assert feed(sums(trigger), [1, 2, 3, 4, 5, 6]) == [1, 6, 10, 21]
    assert feed(sums(Repeatedly(CountTrigger.of(2))), [1, 2, 3, 4]) == [3, 10]  # never finishes: as it is


def test_after_watermark_fires_early_on_time_and_late() -> None:
    trigger = AfterWatermark(early=CountTrigger.of(2), late=CountTrigger.of(2))
    harness = sums(trigger, TumblingEventTimeWindows.of(10), lateness=100)
    assert feed(harness, [1, 2, 3]) == [3]  # early: two elements
    harness.process_watermark(9)  # on time
    for value in (4, 5, 6):  # late: every second one
        harness.process_element(("k", value), value)
    harness.process_watermark(200)
    assert [v for _, v in harness.extract_output_values()] == [3, 6, 15]
    without_late = sums(AfterWatermark(), TumblingEventTimeWindows.of(10), lateness=100)
    feed(without_late, [1])
    without_late.process_watermark(9)
    assert feed(without_late, [2, 3]) == [1, 3, 6]  # each late element fires, as EventTimeTrigger


def test_purges_of_a_part_empty_the_pane_the_parts_share() -> None:
    trigger = AnyOf(PurgingTrigger.of(CountTrigger.of(3)), CountTrigger.of(2))
    # 2nd element: FIRE (1+2); 3rd: FIRE_AND_PURGE (1+2+3, then empty); 4th: FIRE (4)
    assert feed(sums(trigger), [1, 2, 3, 4]) == [3, 6, 4]


class _Forgetful(Trigger[Any, Window]):
    """Registers the window's end on its first element and deletes it on its second."""

    seen = ReducingStateDescriptor("seen", operator.add)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        seen = ctx.get_partitioned_state(self.seen)
        seen.add(1)
        if seen.get() == 1:
            ctx.register_event_time_timer(window.max_timestamp())
        else:
            ctx.delete_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.get_partitioned_state(self.seen).clear()


def test_a_part_deleting_a_time_another_part_waits_for_keeps_the_timer_and_state_stays_apart() -> None:
    # (allowed lateness: the operator's cleanup timer, re-registered with every element, is another time)
    harness = sums(AnyOf(EventTimeTrigger(), _Forgetful(), _Forgetful()), TumblingEventTimeWindows.of(10), lateness=5)
    feed(harness, [1, 2])
    harness.process_watermark(9)
    assert [v for _, v in harness.extract_output_values()] == [3]  # EventTimeTrigger still fires
    lonely = sums(AnyOf(_Forgetful(), _Forgetful()), TumblingEventTimeWindows.of(10), lateness=5)
    feed(lonely, [1, 2])
    lonely.process_watermark(9)
    assert lonely.extract_output_values() == []  # both deleted it: no firing
    # each _Forgetful counts its own elements (part0.seen, part1.seen): a shared count would delete at once


def test_merging_needs_every_part_to_merge_and_window_types_must_agree() -> None:
    with pytest.raises(UnsupportedOperationError, match="does not support merging"):
        sums(AnyOf(CountTrigger.of(2), NeverTrigger()), EventTimeSessionWindows.with_gap(5))
    with pytest.raises(ValueError, match="need different windows"):
        AnyOf(EventTimeTrigger(), EndOfStreamTrigger())
    with pytest.raises(ValueError, match="at least 1 trigger, got 0"):
        AnyOf()
    with pytest.raises(TypeError, match="takes Triggers"):
        AnyOf(CountTrigger.of(1), "count")  # type: ignore[arg-type]


STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("element"), st.sampled_from("ab"), st.integers(0, 60)),
        st.tuples(st.just("watermark"), st.integers(0, 80)),
    ),
    max_size=40,
)


def run(trigger: Trigger[Any, Any], assigner: Any, steps: list[tuple[Any, ...]]) -> list[Any]:
    harness = WindowOperatorHarness(
        assigner,
        lambda key, ctx, elements: [(key, ctx.window(), sorted(v for _, v in elements))],
        key_selector=lambda element: element[0],
        trigger=trigger,
        allowed_lateness=15,
    )
    watermark = -1
    for step in steps:
        if step[0] == "element":
            harness.process_element((step[1], step[2]), step[2])
        elif step[1] > watermark:
            watermark = step[1]
            harness.process_watermark(watermark)
    harness.process_watermark(10_000)
    return [(r.value, r.timestamp) for r in harness.extract_output_records()]


@settings(max_examples=150, deadline=None)
@given(STEPS, st.integers(1, 4), st.sampled_from(["tumbling", "sessions"]))
def test_any_of_count_and_event_time_is_the_hand_written_count_or_end_of_window(
    steps: list[tuple[Any, ...]], n: int, kind: str
) -> None:
    def assigner() -> Any:
        return TumblingEventTimeWindows.of(10) if kind == "tumbling" else EventTimeSessionWindows.with_gap(7)

    assert run(AnyOf(CountTrigger.of(n), EventTimeTrigger()), assigner(), steps) == run(
        CountOrEndOfWindow(n), assigner(), steps
    )


@settings(max_examples=150, deadline=None)
@given(STEPS, st.integers(1, 3), st.integers(1, 3), st.sampled_from(["tumbling", "sessions"]))
# a session past its end (one late element counted) merging into one that is not: the late count carries over
@example(
    [("watermark", 6), ("element", "b", 0), ("element", "b", 1), ("watermark", 7), ("element", "b", 0)],
    1,
    2,
    "sessions",
)
def test_after_watermark_with_counts_is_the_hand_written_early_and_late(
    steps: list[tuple[Any, ...]], early: int, late: int, kind: str
) -> None:
    def assigner() -> Any:
        return TumblingEventTimeWindows.of(10) if kind == "tumbling" else EventTimeSessionWindows.with_gap(7)

    composite = AfterWatermark(early=CountTrigger.of(early), late=CountTrigger.of(late))
    assert run(composite, assigner(), steps) == run(EarlyAndLate(early, late), assigner(), steps)


@settings(max_examples=150, deadline=None)
@given(STEPS, st.integers(1, 4), st.sampled_from(["tumbling", "sessions"]))
def test_all_of_count_and_event_time_is_the_hand_written_count_and_end_of_window(
    steps: list[tuple[Any, ...]], n: int, kind: str
) -> None:
    def assigner() -> Any:
        return TumblingEventTimeWindows.of(10) if kind == "tumbling" else EventTimeSessionWindows.with_gap(7)

    assert run(AllOf(CountTrigger.of(n), EventTimeTrigger()), assigner(), steps) == run(
        CountAndEndOfWindow(n), assigner(), steps
    )


DENSE_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("element"), st.sampled_from("ab"), st.integers(0, 25)),
        st.tuples(st.just("watermark"), st.integers(0, 40)),
    ),
    max_size=40,
)
"""Steps that revisit few windows, often after their end: what a sequence does once it ran through shows."""


@settings(max_examples=200, deadline=None)
@given(DENSE_STEPS, st.integers(1, 3))
def test_after_each_or_finally_and_repeatedly_are_their_hand_written_triggers(
    steps: list[tuple[Any, ...]], n: int
) -> None:
    def tumbling() -> Any:
        return TumblingEventTimeWindows.of(10)

    after_each = AfterEach(CountTrigger.of(n), EventTimeTrigger())
    assert run(after_each, tumbling(), steps) == run(CountThenEndOfWindow(n), tumbling(), steps)
    repeated = Repeatedly(AfterEach(CountTrigger.of(n), EventTimeTrigger()))
    assert run(repeated, tumbling(), steps) == run(CountThenEndOfWindow(n, repeat=True), tumbling(), steps)
    or_finally = OrFinally(CountTrigger.of(n), EventTimeTrigger())
    assert run(or_finally, tumbling(), steps) == run(CountUntilEndOfWindow(n), tumbling(), steps)
