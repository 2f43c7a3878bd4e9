"""End-to-end window scenarios on the operator harness (the scenarios of Flink's ``WindowOperatorTest``):
tumbling, sliding and session windows in event and processing time, dynamic gaps, custom merging
assigners, the kinds of window function, and snapshots taken in the middle.

Elements are ``(key, value)`` pairs keyed by ``key``; the expected results are worked out in comments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from panes.elements import StreamRecord, Watermark
from panes.functions.base import AggregateFunction, ReduceFunction
from panes.testing import WindowOperatorHarness
from panes.time import LONG_MAX
from panes.windowing import (
    AllWindowFunction,
    CountTrigger,
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    GlobalWindows,
    ProcessAllWindowFunction,
    ProcessingTimeSessionWindows,
    ProcessWindowFunction,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowContext,
    WindowFunction,
    aggregate_spec,
    process_spec,
    reduce_spec,
)
from panes.windowing.internal_functions import (
    as_all_window_function,
    as_process_all_window_function,
    as_process_window_function,
    as_window_function,
)
from tests.core.support import by_watermark, first, records, window_contents

Pair = tuple[str, int]


def sum_pairs(a: Pair, b: Pair) -> Pair:
    return (b[0], a[1] + b[1])


class SumPerKey(WindowFunction[Pair, Pair, str, TimeWindow]):
    """``(key, sum of values)`` of the pane (Flink's ``RichSumReducer``), counting open/close calls."""

    opened = 0
    closed = 0

    def open(self, runtime_context: Any) -> None:
        type(self).opened += 1

    def close(self) -> None:
        type(self).closed += 1

    def apply(self, key: str, window: TimeWindow, inputs: Iterable[Pair]) -> list[Pair]:
        return [(key, sum(v for _, v in inputs))]


def session_summary(key: str, window: TimeWindow, inputs: Iterable[Pair]) -> list[tuple[str, int, int]]:
    """Flink's ``SessionWindowFunction``: ``("key-sum", start, end)``."""
    return [(f"{key}-{sum(v for _, v in inputs)}", window.start, window.end)]


def each_value(key: str, window: TimeWindow, inputs: Iterable[Pair]) -> list[tuple[str, int, int]]:
    """Flink's ``ReducedSessionWindowFunction``: one ``("key-value", start, end)`` per input."""
    return [(f"{key}-{v}", window.start, window.end) for _, v in inputs]


class SessionSummary(ProcessWindowFunction[Pair, tuple[str, int, int], str, TimeWindow]):
    def process(self, key: str, context: WindowContext[TimeWindow], elements: Iterable[Pair]) -> Any:
        return session_summary(key, context.window(), elements)


def feed(harness: WindowOperatorHarness, key: str, *values_at: tuple[int, int]) -> None:
    for value, ts in values_at:
        harness.process_element((key, value), ts)


# -- sliding and tumbling event time ------------------------------------------------------------------------------

SLIDING_SPECS: dict[str, Callable[[], Any]] = {
    "reduce": lambda: reduce_spec(sum_pairs),
    "apply": lambda: process_spec(as_window_function(SumPerKey())),
}


@pytest.mark.parametrize("spec", list(SLIDING_SPECS), ids=list(SLIDING_SPECS))
def test_sliding_event_time_windows(spec: str) -> None:
    SumPerKey.opened = SumPerKey.closed = 0

    def harness() -> WindowOperatorHarness:
        return WindowOperatorHarness(SlidingEventTimeWindows.of(3000, 1000), SLIDING_SPECS[spec](), key_selector=first)

    h = harness()
    feed(h, "key2", (1, 3999), (1, 3000))
    feed(h, "key1", (1, 20), (1, 0), (1, 999))
    feed(h, "key2", (1, 1998), (1, 1999), (1, 1000))
    for wm in (999, 1999, 2999):
        h.process_watermark(wm)
    # [-2000, 1000): key1 x3; [-1000, 2000): key1 x3, key2 1000/1998/1999; [0, 3000): the same
    assert by_watermark(h) == [
        ([(("key1", 3), 999)], 999),
        ([(("key1", 3), 1999), (("key2", 3), 1999)], 1999),
        ([(("key1", 3), 2999), (("key2", 3), 2999)], 2999),
    ]
    snapshot = h.snapshot()
    h.close()

    h = harness()
    h.restore(snapshot)
    for wm in (3999, 4999, 5999, 6999, 7999):
        h.process_watermark(wm)
    # [1000, 4000): all five of key2; [2000, 5000) and [3000, 6000): 3000 and 3999
    assert by_watermark(h) == [
        ([(("key2", 5), 3999)], 3999),
        ([(("key2", 2), 4999)], 4999),
        ([(("key2", 2), 5999)], 5999),
        ([], 6999),
        ([], 7999),
    ]
    h.close()
    if spec == "apply":
        assert (SumPerKey.opened, SumPerKey.closed) == (2, 2)  # both operator instances opened and closed


@pytest.mark.parametrize("spec", list(SLIDING_SPECS), ids=list(SLIDING_SPECS))
def test_tumbling_event_time_windows(spec: str) -> None:
    def harness() -> WindowOperatorHarness:
        return WindowOperatorHarness(TumblingEventTimeWindows.of(3000), SLIDING_SPECS[spec](), key_selector=first)

    h = harness()
    feed(h, "key2", (1, 3999), (1, 3000))
    feed(h, "key1", (1, 20), (1, 0), (1, 999))
    feed(h, "key2", (1, 1998), (1, 1999), (1, 1000))
    h.process_watermark(999)
    h.process_watermark(1999)
    assert h.extract_output_records() == []
    snapshot = h.snapshot()

    h = harness()
    h.restore(snapshot)
    for wm in (2999, 3999, 4999, 5999, 6999, 7999):
        h.process_watermark(wm)
    assert by_watermark(h) == [
        ([(("key1", 3), 2999), (("key2", 3), 2999)], 2999),
        ([], 3999),
        ([], 4999),
        ([(("key2", 2), 5999)], 5999),
        ([], 6999),
        ([], 7999),
    ]


def test_results_come_before_the_watermark_that_fired_them() -> None:
    h = WindowOperatorHarness(TumblingEventTimeWindows.of(10), reduce=sum_pairs, key_selector=first)
    feed(h, "a", (1, 3), (2, 13))
    h.process_watermark(25)
    assert h.get_output() == [StreamRecord(("a", 1), 9), StreamRecord(("a", 2), 19), Watermark(25)]


# -- event-time sessions ------------------------------------------------------------------------------------------

SESSION_SPECS: dict[str, Callable[[], Any]] = {
    "list+window-function": lambda: process_spec(as_window_function(session_summary)),
    "list+process-function": lambda: process_spec(SessionSummary()),
    "reduce+window-function": lambda: reduce_spec(sum_pairs, as_window_function(each_value)),
}


@pytest.mark.parametrize("spec", list(SESSION_SPECS), ids=list(SESSION_SPECS))
def test_event_time_session_windows(spec: str) -> None:
    def harness() -> WindowOperatorHarness:
        return WindowOperatorHarness(EventTimeSessionWindows.with_gap(3000), SESSION_SPECS[spec](), key_selector=first)

    h = harness()
    feed(h, "key2", (1, 0), (2, 1000), (3, 2500))
    feed(h, "key1", (1, 10), (2, 1000))
    snapshot = h.snapshot()
    assert h.extract_output_records() == []

    h = harness()
    h.restore(snapshot)
    feed(h, "key1", (3, 2500))
    feed(h, "key2", (4, 5501), (5, 6000), (5, 6000), (6, 6050))
    h.process_watermark(12000)
    # key1: [10, 3010) + [1000, 4000) + [2500, 5500); key2: [0, 5500) sums 6, and 5501 starts a new
    # session ([0, 5500) ends before 5501): [5501, 9050) sums 20
    feed(h, "key2", (10, 15000), (20, 15000))
    h.process_watermark(17999)
    assert by_watermark(h) == [
        (
            [(("key1-6", 10, 5500), 5499), (("key2-20", 5501, 9050), 9049), (("key2-6", 0, 5500), 5499)],
            12000,
        ),
        ([(("key2-30", 15000, 18000), 17999)], 17999),
    ]


def test_the_order_of_elements_in_a_merged_session_follows_flinks_state_merging() -> None:
    """Five sessions bridged one by one. Each merge keeps the state window Java's hash order picks and
    appends the other state windows' contents to it; the pane lists its elements in that order. (The expected
    order is what Flink 2.3.0 emitted for the same input: ``tests/scenarios/56_sessions_bridged_one_by_one``.)"""
    h = WindowOperatorHarness(EventTimeSessionWindows.with_gap(10), lambda k, c, e: [list(e)], key_selector=lambda v: 0)
    for ts in (0, 20, 40, 60, 80, 70, 10, 50, 30):
        h.process_element(ts, ts)
    h.process_watermark(LONG_MAX)
    assert records(h) == [([20, 0, 10, 40, 60, 80, 70, 50, 30], 89)]


class PointSessions(EventTimeSessionWindows):
    """Flink's ``PointSessionWindows``: elements with value 33 get a point window ``[ts, ts)``."""

    def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[TimeWindow]:
        if element[1] == 33:
            return [TimeWindow(timestamp, timestamp)]
        return super().assign_windows(element, timestamp, context)


def test_point_windows_merge_into_the_sessions_they_touch() -> None:
    def harness() -> WindowOperatorHarness:
        return WindowOperatorHarness(PointSessions(3000), as_window_function(session_summary), key_selector=first)

    h = harness()
    feed(h, "key2", (1, 0), (33, 1000))
    snapshot = h.snapshot()
    h = harness()
    h.restore(snapshot)
    feed(h, "key2", (33, 2500))
    feed(h, "key1", (1, 10), (2, 1000), (33, 2500))
    h.process_watermark(12000)
    assert by_watermark(h) == [
        ([(("key1-36", 10, 4000), 3999), (("key2-67", 0, 3000), 2999)], 12000),
    ]


def _gap(element: Pair) -> int:
    """Flink's test extractor: key1 3000, key2 1000 for value 10 and 2000 otherwise."""
    if element[0] == "key1":
        return 3000
    return 1000 if element[1] == 10 else 2000


def test_dynamic_event_time_session_windows() -> None:
    h = WindowOperatorHarness(
        DynamicEventTimeSessionWindows.with_dynamic_gap(_gap),
        as_window_function(session_summary),
        key_selector=first,
    )
    feed(h, "key1", (3, 10))
    feed(h, "key2", (4, 5000), (5, 6000))
    h.process_watermark(8999)
    # a shorter gap inside a session does not shorten it: the furthest end is kept
    feed(h, "key2", (1, 9000), (2, 10000), (10, 10500))
    h.process_watermark(12999)
    # a later element with a longer gap extends the session
    feed(h, "key2", (10, 13000), (10, 13500), (1, 14000))
    h.process_watermark(16999)
    assert by_watermark(h) == [
        ([(("key1-3", 10, 3010), 3009), (("key2-9", 5000, 8000), 7999)], 8999),
        ([(("key2-13", 9000, 12000), 11999)], 12999),
        ([(("key2-21", 13000, 16000), 15999)], 16999),
    ]


# -- processing time ----------------------------------------------------------------------------------------------


def test_processing_time_tumbling_windows_ignore_timestamps() -> None:
    h = WindowOperatorHarness(TumblingProcessingTimeWindows.of(3000), reduce=sum_pairs, key_selector=first)
    h.set_processing_time(3)
    feed(h, "key2", (1, LONG_MAX), (1, 7000), (1, 7000))
    feed(h, "key1", (1, 7000), (1, 7000))
    h.set_processing_time(5000)
    assert sorted(records(h)) == [(("key1", 2), 2999), (("key2", 3), 2999)]
    feed(h, "key1", (1, 7000), (1, 7000), (1, 7000))
    h.set_processing_time(7000)
    assert records(h)[2:] == [(("key1", 3), 5999)]


def test_processing_time_sliding_windows() -> None:
    h = WindowOperatorHarness(SlidingProcessingTimeWindows.of(3000, 1000), reduce=sum_pairs, key_selector=first)
    h.set_processing_time(3)  # windows [-2000, 1000), [-1000, 2000), [0, 3000)
    feed(h, "key2", (1, LONG_MAX))
    h.set_processing_time(1000)
    assert records(h) == [(("key2", 1), 999)]
    feed(h, "key2", (1, LONG_MAX), (1, LONG_MAX))  # [-1000, 2000), [0, 3000), [1000, 4000)
    h.set_processing_time(2000)
    assert records(h)[1:] == [(("key2", 3), 1999)]
    feed(h, "key1", (1, LONG_MAX), (1, LONG_MAX))  # [0, 3000), [1000, 4000), [2000, 5000)
    h.set_processing_time(3000)
    assert sorted(records(h)[2:]) == [(("key1", 2), 2999), (("key2", 3), 2999)]
    feed(h, "key1", (1, LONG_MAX), (1, LONG_MAX), (1, LONG_MAX))  # [1000, 4000), [2000, 5000), [3000, 6000)
    h.set_processing_time(7000)
    assert sorted(records(h)[4:], key=lambda r: (r[1], r[0])) == [
        (("key1", 5), 3999),
        (("key2", 2), 3999),
        (("key1", 5), 4999),
        (("key1", 3), 5999),
    ]


def test_processing_time_session_windows() -> None:
    h = WindowOperatorHarness(ProcessingTimeSessionWindows.with_gap(3000), reduce=sum_pairs, key_selector=first)
    h.set_processing_time(3)
    feed(h, "key2", (1, 1))  # [3, 3003)
    h.set_processing_time(1000)
    feed(h, "key2", (1, 1002))  # [1000, 4000) merges: [3, 4000)
    h.set_processing_time(5000)
    assert records(h) == [(("key2", 2), 3999)]
    feed(h, "key2", (1, 5000), (1, 5000))
    feed(h, "key1", (1, 5000), (1, 5000), (1, 5000))
    h.set_processing_time(10000)
    assert sorted(records(h)[1:]) == [(("key1", 3), 7999), (("key2", 2), 7999)]


def test_dynamic_processing_time_session_windows() -> None:
    h = WindowOperatorHarness(
        DynamicProcessingTimeSessionWindows.with_dynamic_gap(_gap),
        as_window_function(session_summary),
        key_selector=first,
    )
    for now, key, value in [
        (10, "key1", 3),
        (5000, "key2", 4),
        (6000, "key2", 5),
        (9000, "key2", 1),
        (10000, "key2", 2),
        (10500, "key2", 10),
        (13000, "key2", 10),
        (13500, "key2", 10),
        (14000, "key2", 1),
    ]:
        h.set_processing_time(now)
        h.process_element((key, value), now)
    h.set_processing_time(16999)
    assert records(h) == [
        (("key1-3", 10, 3010), 3009),
        (("key2-9", 5000, 8000), 7999),
        (("key2-13", 9000, 12000), 11999),
        (("key2-21", 13000, 16000), 15999),
    ]


# -- the kinds of window function ---------------------------------------------------------------------------------


class Average(AggregateFunction[Pair, tuple[int, int], float]):
    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: Pair, accumulator: tuple[int, int]) -> tuple[int, int]:
        return (accumulator[0] + value[1], accumulator[1] + 1)

    def get_result(self, accumulator: tuple[int, int]) -> float:
        return accumulator[0] / accumulator[1]

    def merge(self, acc_a: tuple[int, int], acc_b: tuple[int, int]) -> tuple[int, int]:
        return (acc_a[0] + acc_b[0], acc_a[1] + acc_b[1])


class MaxValue(ReduceFunction[Pair]):
    def reduce(self, value1: Pair, value2: Pair) -> Pair:
        return value1 if value1[1] >= value2[1] else value2


class KeyAndWindow(ProcessWindowFunction[Any, Any, str, TimeWindow]):
    def process(self, key: str, context: WindowContext[TimeWindow], elements: Iterable[Any]) -> Any:
        return [(key, context.window().start, list(elements))]


class AllSum(AllWindowFunction[Pair, int, TimeWindow]):
    def apply(self, window: TimeWindow, inputs: Iterable[Pair]) -> list[int]:
        return [sum(v for _, v in inputs)]


class AllWindows(ProcessAllWindowFunction[Pair, Any, TimeWindow]):
    def process(self, context: WindowContext[TimeWindow], elements: Iterable[Pair]) -> list[Any]:
        return [(context.window().start, len(list(elements)))]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (reduce_spec(MaxValue()), [(("a", 7), 9), (("b", 1), 9)]),
        (reduce_spec(MaxValue(), KeyAndWindow()), [(("a", 0, [("a", 7)]), 9), (("b", 0, [("b", 1)]), 9)]),
        (aggregate_spec(Average()), [(4.0, 9), (1.0, 9)]),
        (aggregate_spec(Average(), KeyAndWindow()), [(("a", 0, [4.0]), 9), (("b", 0, [1.0]), 9)]),
        (process_spec(KeyAndWindow()), [(("a", 0, [("a", 1), ("a", 7)]), 9), (("b", 0, [("b", 1)]), 9)]),
        (process_spec(AllSum()), [(8, 9), (1, 9)]),
        (process_spec(AllWindows()), [((0, 2), 9), ((0, 1), 9)]),
        (process_spec(lambda key, ctx, elements: [key * len(list(elements))]), [("aa", 9), ("b", 9)]),
        (process_spec(SumPerKey()), [(("a", 8), 9), (("b", 1), 9)]),
        (process_spec(as_window_function(lambda k, w, e: [(k, w.end)])), [(("a", 10), 9), (("b", 10), 9)]),
        (process_spec(as_all_window_function(lambda w, e: [len(list(e))])), [(2, 9), (1, 9)]),
        (process_spec(as_all_window_function(AllSum())), [(8, 9), (1, 9)]),
        (process_spec(as_process_all_window_function(lambda c, e: [c.window().end])), [(10, 9), (10, 9)]),
        (process_spec(as_process_all_window_function(AllWindows())), [((0, 2), 9), ((0, 1), 9)]),
    ],
    ids=[
        "reduce",
        "reduce+process",
        "aggregate",
        "aggregate+process",
        "process",
        "all-apply",
        "all-process",
        "lambda",
        "window-function",
        "lambda-window-function",
        "lambda-all-apply",
        "all-apply-object",
        "lambda-all-process",
        "all-process-object",
    ],
)
def test_window_function_kinds(spec: Any, expected: list[Any]) -> None:
    h = WindowOperatorHarness(TumblingEventTimeWindows.of(10), spec, key_selector=first)
    feed(h, "a", (1, 1), (7, 2))
    feed(h, "b", (1, 3))
    h.process_watermark(9)
    assert sorted(records(h), key=repr) == sorted(expected, key=repr)


def test_reduce_keeps_the_running_value_first() -> None:
    h = WindowOperatorHarness(TumblingEventTimeWindows.of(10), reduce=lambda a, b: a + b, key_selector=lambda v: 0)
    for i, word in enumerate(["x", "y", "z"]):
        h.process_element(word, i)
    h.process_watermark(9)
    assert records(h) == [("xyz", 9)]


def test_a_dynamic_session_equal_to_an_in_flight_merged_session_replaces_its_contents() -> None:
    """A Flink quirk panes reproduces. ``MergingWindowSet.addWindow`` offers the in-flight windows plus the
    new one to ``TimeWindow.mergeWindows``, which collects them in a ``HashSet``: a new window equal to an
    in-flight merged window collapses into it, nothing merges, and the window is mapped to itself as its
    own state window. The merged session's earlier contents stay behind in their old state window: they
    never fire and are never cleaned up. Fixed gaps cannot produce this (a merged session is longer than
    the gap); dynamic gaps and custom assigners can."""
    h = WindowOperatorHarness(
        DynamicEventTimeSessionWindows.with_dynamic_gap(lambda e: e[1]),
        lambda key, ctx, elements: [list(elements)],
        key_selector=first,
    )
    h.process_element(("k", 4), 0)  # [0, 4)
    h.process_element(("k", 2), 3)  # [3, 5): merges into [0, 5), whose state window is [0, 4)
    h.process_element(("k", 5), 0)  # [0, 5): equal to the merged session
    h.process_watermark(LONG_MAX)
    assert records(h) == [([("k", 5)], 4)]
    contents = {window: values for (_, window), values in window_contents(h).items()}
    assert contents == {TimeWindow(0, 4): [("k", 4), ("k", 2)]}


def test_an_emitted_pane_is_a_snapshot_not_the_live_window_state() -> None:
    """Emitting the iterable the function was handed gives the pane as it was at that firing (Flink copies
    records on emission); later elements of the window do not show up in earlier results."""
    h = WindowOperatorHarness(
        GlobalWindows.create(),
        lambda key, ctx, elements: [elements],
        key_selector=lambda v: 0,
        trigger=CountTrigger.of(1),
    )
    h.process_element(1, 0)
    h.process_element(2, 0)
    assert h.extract_output_values() == [[1], [1, 2]]


def test_results_of_one_watermark_come_in_the_order_of_flinks_timer_heap() -> None:
    """Windows of several keys ending together fire in the order their equal-time timers leave Flink's
    binary heap: the first registered, then the last, then the others (not first-in, first-out)."""
    for keys, order in [("abc", "acb"), ("abcd", "adcb")]:
        h = WindowOperatorHarness(TumblingEventTimeWindows.of(10), reduce=sum_pairs, key_selector=first)
        for key in keys:
            h.process_element((key, 1), 5)
        h.process_watermark(9)
        assert [k for (k, _), _ in records(h)] == list(order)


def test_a_window_function_must_be_a_function() -> None:
    with pytest.raises(TypeError, match="callable"):
        as_process_window_function(42)
