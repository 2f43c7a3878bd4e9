"""Window bounds, cleanup times and timer times at both ends of Java's ``long`` range.

Flink computes them with ``long`` arithmetic, which wraps around: ``Long.MAX_VALUE + 1 == Long.MIN_VALUE``.
panes does the same through ``panes.time.java_add``/``java_sub``. Each expected value below is worked out from
Flink's code (``TimeWindow``, the assigners, ``WindowOperator.cleanupTime``, the triggers, ``TimeEvictor``);
``tests/scenarios/52_tumbling_at_the_long_edges`` runs a whole case on the harness and the local runner.
"""

from __future__ import annotations

from typing import Any

import pytest

from panes.elements import StreamRecord
from panes.testing import OneInputOperatorHarness, WindowOperatorHarness
from panes.testing.harness import window_function_spec
from panes.time import LONG_MAX, LONG_MIN, java_add, java_sub
from panes.windowing import (
    ContinuousEventTimeTrigger,
    EventTimeSessionWindows,
    GlobalWindow,
    ProcessingTimeoutTrigger,
    ProcessingTimeSessionWindows,
    SlidingEventTimeWindows,
    TimeEvictor,
    TimeWindow,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from panes.windowing.aligned import AlignedWindowOperator
from panes.windowing.assigners.session import DynamicEventTimeSessionWindows
from panes.windowing.columnar.plan import plan_columnar
from panes.windowing.evictors import TimestampedValue
from panes.windowing.operator import WindowOperator
from panes.windowing.rules import cleanup_time
from panes.windowing.triggers.count import CountTrigger
from tests.core.support import first, records
from tests.core.test_columnar_windows import INPUT, columnar, generic, spec
from tests.core.trigger_harness import TriggerTestHarness


class Clock:
    def __init__(self, now: int = 0) -> None:
        self.now = now

    def get_current_processing_time(self) -> int:
        return self.now


def test_java_sub_wraps_around_like_java_add() -> None:
    assert java_sub(LONG_MIN, 1) == LONG_MAX
    assert java_sub(LONG_MAX, -1) == LONG_MIN
    assert java_sub(5, 7) == -2
    assert java_add(LONG_MAX, LONG_MAX) == -2


def test_a_window_ending_at_long_min_has_max_timestamp_long_max() -> None:
    assert TimeWindow(LONG_MAX - 5, LONG_MIN).max_timestamp() == LONG_MAX
    assert TimeWindow(9223372036854775000, -9223372036854775616).max_timestamp() == -9223372036854775617


@pytest.mark.parametrize(
    ("timestamp", "offset", "size", "start"),
    [
        # (ts - 0) % 1000 = 217: start = ts - 217
        (9223372036854775217, 0, 1000, 9223372036854775000),
        # Java's remainder is -800: start = ts - 200, below LONG_MIN, wraps around to the top
        (LONG_MIN + 8, 0, 1000, 9223372036854775616),
        # ts - offset = LONG_MAX + 1 wraps to LONG_MIN, whose remainder is -8: start = ts - (-8 + 10)
        (LONG_MAX - 2, -3, 10, LONG_MAX - 4),
        # nothing wraps: the usual alignment
        (-5, 0, 10, -10),
        (17, 3, 10, 13),
    ],
)
def test_window_start_with_offset_uses_long_arithmetic(timestamp: int, offset: int, size: int, start: int) -> None:
    assert TimeWindow.get_window_start_with_offset(timestamp, offset, size) == start


def test_tumbling_windows_wrap_around_at_both_ends() -> None:
    tumbling = TumblingEventTimeWindows.of(1000)
    assert tumbling.assign_windows(None, 9223372036854775217, Clock()) == [
        TimeWindow(9223372036854775000, -9223372036854775616)
    ]
    assert tumbling.assign_windows(None, LONG_MIN + 8, Clock()) == [
        TimeWindow(9223372036854775616, -9223372036854775000)
    ]
    # the offset is Java's (global offset + stagger offset) % size = -3, not 7: the two differ where
    # ts - offset wraps around
    shifted = TumblingEventTimeWindows.of(10, -3)
    assert shifted.assign_windows(None, LONG_MAX - 2, Clock()) == [TimeWindow(LONG_MAX - 4, LONG_MIN + 5)]
    processing = TumblingProcessingTimeWindows.of(10)
    assert processing.assign_windows(None, 0, Clock(LONG_MAX)) == [TimeWindow(LONG_MAX - 7, LONG_MIN + 2)]


def test_sliding_windows_at_the_ends_of_the_range() -> None:
    sliding = SlidingEventTimeWindows.of(10, 5)
    # LONG_MAX - 2 ≡ 0 (mod 5): windows from LONG_MAX - 2 back while start > ts - 10
    assert sliding.assign_windows(None, LONG_MAX - 2, Clock()) == [
        TimeWindow(LONG_MAX - 2, LONG_MIN + 7),
        TimeWindow(LONG_MAX - 7, LONG_MIN + 2),
    ]
    # ts - size wraps around to LONG_MAX - 4: no start is above it, no window at all (as in Flink)
    assert sliding.assign_windows(None, LONG_MIN + 5, Clock()) == []


def test_sliding_windows_stop_where_flink_would_wrap_around_for_ever() -> None:
    # ts - size = LONG_MIN does not wrap; the starts LONG_MIN + 13, + 8, + 3 are above it, and the next one,
    # LONG_MIN - 2, wraps around to LONG_MAX - 1 in Java, still above it: Flink's loop would go on through the
    # whole range. panes stops at the wrap (a deliberate difference)
    sliding = SlidingEventTimeWindows.of(15, 5)
    assert [w.start for w in sliding.assign_windows(None, LONG_MIN + 15, Clock())] == [
        LONG_MIN + 13,
        LONG_MIN + 8,
        LONG_MIN + 3,
    ]


def test_session_windows_end_wraps_around() -> None:
    assert EventTimeSessionWindows.with_gap(10).assign_windows(None, LONG_MAX - 3, Clock()) == [
        TimeWindow(LONG_MAX - 3, LONG_MIN + 6)
    ]
    assert ProcessingTimeSessionWindows.with_gap(10).assign_windows(None, 0, Clock(LONG_MAX)) == [
        TimeWindow(LONG_MAX, LONG_MIN + 9)
    ]
    dynamic = DynamicEventTimeSessionWindows.with_dynamic_gap(lambda element: element)
    assert dynamic.assign_windows(20, LONG_MAX - 9, Clock()) == [TimeWindow(LONG_MAX - 9, LONG_MIN + 10)]


@pytest.mark.parametrize(
    ("max_timestamp", "lateness", "cleanup"),
    [
        (100, 50, 150),
        (LONG_MAX - 5, 10, LONG_MAX),  # the sum wraps around: never cleaned up (no timer)
        (LONG_MAX, 0, LONG_MAX),
        (-9223372036854775617, 0, -9223372036854775617),  # a window whose end wrapped: cleaned up early
        (-9223372036854775617, 100, -9223372036854775517),
    ],
)
def test_cleanup_time_follows_flink_and_its_overflow_guard(max_timestamp: int, lateness: int, cleanup: int) -> None:
    assert cleanup_time(max_timestamp, lateness) == cleanup


def test_a_wrapped_window_with_lateness_fires_once_and_late_elements_fire_it_again() -> None:
    # max timestamp -9223372036854775617, cleanup at -9223372036854775517: the watermark -9223372036854775600
    # fires it; an element of the same window then fires it again (allowed lateness), the next watermark past
    # the cleanup time drops it, and a later element is late (its own timestamp + 100 is not past the
    # watermark, so it is not a late element: it vanishes, as in Flink)
    h = WindowOperatorHarness(
        TumblingEventTimeWindows.of(1000),
        reduce=lambda a, b: (a[0], a[1] + b[1]),
        key_selector=first,
        allowed_lateness=100,
    )
    h.process_element(("a", 1), 9223372036854775217)
    h.process_watermark(-9223372036854775600)
    h.process_element(("a", 2), 9223372036854775218)
    h.process_watermark(-9223372036854775500)
    h.process_element(("a", 4), 9223372036854775219)
    assert records(h) == [(("a", 1), -9223372036854775617), (("a", 3), -9223372036854775617)]
    assert h.num_late_records_dropped == 0


def test_continuous_event_time_trigger_next_fire_time_wraps_around() -> None:
    # start = ts - ts % 10 = LONG_MAX - 7, next = min(LONG_MAX - 7 + 10, max) and the sum wraps to LONG_MIN + 2
    h = TriggerTestHarness(ContinuousEventTimeTrigger.of(10))
    h.process_element(1, GlobalWindow(), timestamp=LONG_MAX - 5)
    assert sorted(t.timestamp for t in h.timers.event_time_timers) == [LONG_MIN + 2, LONG_MAX]


def test_processing_timeout_wraps_around() -> None:
    h = TriggerTestHarness(ProcessingTimeoutTrigger.of(CountTrigger.of(5), 5))
    h.advance_processing_time(LONG_MAX - 1)
    h.process_element(1, GlobalWindow())
    assert [t.timestamp for t in h.timers.processing_time_timers] == [LONG_MIN + 3]


def test_time_evictor_cutoff_wraps_around() -> None:
    # cutoff = max timestamp - size = LONG_MIN + 3 - 5, which wraps to LONG_MAX - 1: every element is at or
    # before it and is evicted, as in Flink
    elements = [TimestampedValue("x", LONG_MIN + 1), TimestampedValue("y", LONG_MIN + 3)]
    TimeEvictor.of(5).evict_before(elements, len(elements), None, None)  # type: ignore[arg-type]
    assert elements == []


EDGE_SCRIPT: list[Any] = [
    ("e", "a", LONG_MAX - 3, 1),
    ("e", "b", LONG_MIN + 8, 2),
    ("e", "a", LONG_MAX - 700, 3),
    ("w", LONG_MIN + 500),
    ("e", "b", LONG_MIN + 900, 4),
    ("w", 0),
    ("e", "a", LONG_MAX - 1, 5),
    ("w", LONG_MAX - 2),
    ("e", "b", LONG_MIN + 2, 6),
]


def _run(operator: WindowOperator) -> list[Any]:
    harness = OneInputOperatorHarness(operator)
    for step in EDGE_SCRIPT:
        if step[0] == "e":
            harness.process_element(StreamRecord((step[1], step[2], step[3]), step[2]))
        else:
            harness.process_watermark(step[1])
    harness.process_watermark(LONG_MAX)
    return sorted((r.value, r.timestamp) for r in harness.extract_output_records())


@pytest.mark.parametrize(
    "assigner",
    [TumblingEventTimeWindows.of(1000), TumblingEventTimeWindows.of(1000, -300), SlidingEventTimeWindows.of(1000, 400)],
    ids=repr,
)
def test_the_lean_aligned_operator_agrees_at_the_edges(assigner: Any) -> None:
    def make(cls: Any) -> WindowOperator:
        function = window_function_spec(lambda k, c, e: [(k, c.window().start, c.window().end, list(e))])
        return cls(assigner, function, first, None, 100, None)

    exact = _run(make(WindowOperator))
    assert any(value[1] > 0 > value[2] for value, _ in exact)  # windows whose end wrapped around fired
    assert _run(make(AlignedWindowOperator)) == exact


@pytest.mark.parametrize("assigner", ["tumbling", "tumbling offset", "sliding", "session"])
def test_the_columnar_operators_agree_at_the_edges(assigner: str) -> None:
    data = [
        [("a", LONG_MAX - 3, 1), ("b", LONG_MIN + 8, 2), ("a", LONG_MAX - 700, 3)],
        [("b", LONG_MIN + 60, 4), ("c", LONG_MAX - 40, None)],
        [("a", LONG_MAX - 1, 5), ("c", LONG_MIN + 1, 6)],
    ]
    window = spec(assigner, "row", 30, True)
    plan = plan_columnar(window, INPUT)
    assert plan is not None
    assert columnar(window, data) == generic(window, data, plan.output_type)


def test_sessions_whose_ends_wrap_around_stay_apart_on_the_columnar_operator() -> None:
    # [MAX - 10, MIN + 39) and [MAX - 5, MIN + 44): Flink's rule (start <= other end) keeps them apart, although the
    # timestamps are closer than the gap; the window operator and the columnar one both apply that one rule
    data = [[("a", LONG_MAX - 10, 1), ("a", LONG_MAX - 5, 2), ("b", LONG_MAX - 200, 3), ("b", LONG_MAX - 160, 4)]]
    window = spec("session", "row", 0, False)
    plan = plan_columnar(window, INPUT)
    assert plan is not None
    expected = generic(window, data, plan.output_type)
    assert sum(len(main) for main, _ in expected) == 3  # a's two sessions, and b's one (no wrap: merged)
    assert columnar(window, data) == expected
