"""``IntervalJoinOperator`` in the two-input harness: the cases of Flink's ``IntervalJoinOperatorTest``
(flink-streaming-java, ``org.apache.flink.streaming.api.operators.co``), with their inputs and expected outputs.

Flink's elements are ``TestElem(ts, "lhs"|"rhs")`` of one key; a result is the pair ``(left, right)`` with the
larger timestamp. Like Flink's ``assertOutput``, outputs are compared as multisets (the order of pairs within
one element's probe is the other buffer's order, which Flink leaves to the state backend).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import pytest

from panes.elements import StreamRecord, Watermark
from panes.errors import BadRecordError
from panes.functions.join import ProcessJoinFunction
from panes.operators.interval_join import IntervalJoinOperator
from panes.tags import OutputTag
from panes.testing import TwoInputOperatorHarness
from panes.time import LONG_MAX, LONG_MIN

KEY = "key"


def elem(ts: int, source: str) -> tuple[str, int, str]:
    return (KEY, ts, source)


def pair(lhs: int, rhs: int) -> tuple[tuple[Any, Any], int]:
    """Flink's ``streamRecordOf(lhsTs, rhsTs)``: the joined pair and its timestamp ``max(lhs, rhs)``."""
    return ((elem(lhs, "lhs"), elem(rhs, "rhs")), max(lhs, rhs))


class Passthrough(ProcessJoinFunction[Any, Any, Any]):
    def process_element(self, left: Any, right: Any, ctx: Any) -> Iterable[Any]:
        yield (left, right)


def harness(
    lower: int,
    lower_inclusive: bool,
    upper: int,
    upper_inclusive: bool,
    left_late: OutputTag[Any] | None = None,
    right_late: OutputTag[Any] | None = None,
    function: ProcessJoinFunction[Any, Any, Any] | None = None,
) -> TwoInputOperatorHarness:
    operator = IntervalJoinOperator(
        lower,
        upper,
        function if function is not None else Passthrough(),
        lambda e: e[0],
        lambda e: e[0],
        lower_inclusive=lower_inclusive,
        upper_inclusive=upper_inclusive,
        left_late_tag=left_late,
        right_late_tag=right_late,
    )
    return TwoInputOperatorHarness(operator)


def feed1(h: TwoInputOperatorHarness, ts: int) -> None:
    h.process_element1(elem(ts, "lhs"), ts)


def feed2(h: TwoInputOperatorHarness, ts: int) -> None:
    h.process_element2(elem(ts, "rhs"), ts)


def elements_and_watermarks(h: TwoInputOperatorHarness, first: int, last: int, lhs_faster: bool) -> None:
    """Flink's ``processElementsAndWatermarks``: one side's elements each followed by its watermark, then the
    other side's."""
    sides = [(feed1, h.process_watermark1), (feed2, h.process_watermark2)]
    for feed, watermark in sides if lhs_faster else reversed(sides):
        for ts in range(first, last + 1):
            feed(h, ts)
            watermark(ts)


def output(h: TwoInputOperatorHarness) -> Counter[Any]:
    return Counter((record.value, record.timestamp) for record in h.extract_output_records())


def expect(*pairs: tuple[int, int]) -> Counter[Any]:
    return Counter(pair(lhs, rhs) for lhs, rhs in pairs)


def buffers(h: TwoInputOperatorHarness) -> tuple[list[int], list[int]]:
    operator = h.operator
    assert isinstance(operator, IntervalJoinOperator)
    return operator.buffered_timestamps(KEY, left=True), operator.buffered_timestamps(KEY, left=False)


LHS_FASTER = pytest.mark.parametrize("lhs_faster", [True, False], ids=["lhs-faster", "rhs-faster"])


@LHS_FASTER
def test_implementation_mirrors_correctly(lhs_faster: bool) -> None:
    h = harness(1, True, 3, False)
    elements_and_watermarks(h, 1, 4, lhs_faster)
    assert output(h) == expect((1, 2), (1, 3), (2, 3), (2, 4), (3, 4))
    mirrored = harness(-3, False, -1, True)
    elements_and_watermarks(mirrored, 1, 4, lhs_faster)
    assert output(mirrored) == expect((2, 1), (3, 1), (3, 2), (4, 2), (4, 3))


BOUNDS_CASES = [
    # (lower, lower inclusive, upper, upper inclusive, expected pairs): Flink's test of the same name
    ("negative-inclusive-and-negative-inclusive", -2, True, -1, True, [(2, 1), (3, 1), (3, 2), (4, 2), (4, 3)]),
    (
        "negative-inclusive-and-positive-inclusive",
        -1,
        True,
        1,
        True,
        [(1, 1), (1, 2), (2, 1), (2, 2), (2, 3), (3, 2), (3, 3), (3, 4), (4, 3), (4, 4)],
    ),
    ("positive-inclusive-and-positive-inclusive", 1, True, 2, True, [(1, 2), (1, 3), (2, 3), (2, 4), (3, 4)]),
    ("negative-exclusive-and-negative-exclusive", -3, False, -1, False, [(3, 1), (4, 2)]),
    ("negative-exclusive-and-positive-exclusive", -1, False, 1, False, [(1, 1), (2, 2), (3, 3), (4, 4)]),
    ("positive-exclusive-and-positive-exclusive", 1, False, 3, False, [(1, 3), (2, 4)]),
]


@LHS_FASTER
@pytest.mark.parametrize(
    ("lower", "lower_inclusive", "upper", "upper_inclusive", "pairs"),
    [case[1:] for case in BOUNDS_CASES],
    ids=[case[0] for case in BOUNDS_CASES],
)
def test_bounds(
    lhs_faster: bool, lower: int, lower_inclusive: bool, upper: int, upper_inclusive: bool, pairs: list[Any]
) -> None:
    h = harness(lower, lower_inclusive, upper, upper_inclusive)
    elements_and_watermarks(h, 1, 4, lhs_faster)
    assert output(h) == expect(*pairs)


CLEANUP_CASES = [
    # (lower, lower inclusive, upper, upper inclusive, buffers after watermark 1, after watermark 4): Flink's
    # testStateCleanup* cases; after watermark 6 both buffers are empty in all of them
    ("negative-inclusive-negative-inclusive", -1, True, 0, True, ([2, 3, 4, 5], [1, 2, 3, 4, 5]), ([5], [4, 5])),
    ("negative-positive-negative-exclusive", -2, False, 1, False, ([2, 3, 4, 5], [1, 2, 3, 4, 5]), ([5], [4, 5])),
    ("positive-inclusive-positive-inclusive", 0, True, 1, True, ([1, 2, 3, 4, 5], [2, 3, 4, 5]), ([4, 5], [5])),
    ("positive-exclusive-positive-exclusive", -1, False, 2, False, ([1, 2, 3, 4, 5], [2, 3, 4, 5]), ([4, 5], [5])),
]


@LHS_FASTER
@pytest.mark.parametrize(
    ("lower", "lower_inclusive", "upper", "upper_inclusive", "after_1", "after_4"),
    [case[1:] for case in CLEANUP_CASES],
    ids=[case[0] for case in CLEANUP_CASES],
)
def test_state_cleanup(
    lhs_faster: bool,
    lower: int,
    lower_inclusive: bool,
    upper: int,
    upper_inclusive: bool,
    after_1: tuple[list[int], list[int]],
    after_4: tuple[list[int], list[int]],
) -> None:
    h = harness(lower, lower_inclusive, upper, upper_inclusive)
    for ts in range(1, 6):
        feed1(h, ts)
    for ts in range(1, 6):
        feed2(h, ts)
    h.process_watermark1(1)
    h.process_watermark2(1)
    assert buffers(h) == after_1
    h.process_watermark1(4)
    h.process_watermark2(4)
    assert buffers(h) == after_4
    h.process_watermark1(6)
    h.process_watermark2(6)
    assert buffers(h) == ([], [])
    assert h.operator.state_entries() == 0


def test_restore_from_snapshot() -> None:
    first = harness(-1, True, 1, True)
    for ts in (1, 2, 3):
        feed1(first, ts)
        first.process_watermark1(ts)
        feed2(first, ts)
        first.process_watermark2(ts)
    assert output(first) == expect((1, 1), (1, 2), (2, 1), (2, 2), (2, 3), (3, 2), (3, 3))
    snapshot = first.snapshot()
    first.close()

    second = harness(-1, True, 1, True)
    second.restore(snapshot)
    feed1(second, 4)
    second.process_watermark1(4)
    feed2(second, 4)
    second.process_watermark2(4)
    assert output(second) == expect((3, 4), (4, 3), (4, 4))


class Timestamps(ProcessJoinFunction[Any, Any, Any]):
    """Emits what the context says of each pair (Flink's testContextCorrect*Timestamp, testReturnsCorrectTimestamp)."""

    def process_element(self, left: Any, right: Any, ctx: Any) -> Iterable[Any]:
        yield (left[1], right[1], ctx.get_left_timestamp(), ctx.get_right_timestamp(), ctx.get_timestamp())


@LHS_FASTER
def test_context_gives_both_timestamps_and_the_larger_one_as_the_results(lhs_faster: bool) -> None:
    h = harness(-1, True, 1, True, function=Timestamps())
    elements_and_watermarks(h, 1, 4, lhs_faster)
    records = h.extract_output_records()
    assert len(records) == 10
    for record in records:
        left, right, left_ts, right_ts, result_ts = record.value
        assert (left_ts, right_ts, result_ts) == (left, right, max(left, right))
        assert record.timestamp == result_ts


@pytest.mark.parametrize("side", [1, 2])
def test_an_element_without_a_timestamp_is_a_bad_record(side: int) -> None:
    h = harness(0, True, 0, True)
    process = h.process_element1 if side == 1 else h.process_element2
    with pytest.raises(BadRecordError, match="event time"):
        process(elem(0, "lhs"))
    with pytest.raises(BadRecordError, match="no timestamp"):
        process(StreamRecord(elem(0, "lhs"), LONG_MIN))


def test_discards_late_data() -> None:
    h = harness(-1, True, 1, True)
    for ts in (1, 2, 3):
        feed1(h, ts)
        feed2(h, ts)
    h.process_watermark1(3)
    h.process_watermark2(3)
    feed1(h, 1)  # late: not joined again
    for ts in (4, 5):
        feed1(h, ts)
        feed2(h, ts)
    assert output(h) == expect(
        (1, 1), (1, 2), (2, 1), (2, 2), (2, 3), (3, 2), (3, 3), (3, 4), (4, 3), (4, 4), (4, 5), (5, 4), (5, 5)
    )


def test_late_data_goes_to_each_sides_late_output() -> None:
    left_late: OutputTag[Any] = OutputTag("left_late")
    right_late: OutputTag[Any] = OutputTag("right_late")
    h = harness(-1, True, 1, True, left_late, right_late)
    feed1(h, 3)
    feed2(h, 3)
    h.process_watermark1(3)
    h.process_watermark2(3)
    feed1(h, 4)
    feed2(h, 4)
    feed1(h, 1)  # late left element
    feed2(h, 2)  # late right element
    feed1(h, 5)
    feed2(h, 5)
    assert output(h) == expect((3, 3), (3, 4), (4, 3), (4, 4), (4, 5), (5, 4), (5, 5))
    assert [(r.value, r.timestamp) for r in h.get_side_output(left_late)] == [(elem(1, "lhs"), 1)]
    assert [(r.value, r.timestamp) for r in h.get_side_output(right_late)] == [(elem(2, "rhs"), 2)]


def test_the_watermark_of_the_pair_is_the_minimum_and_is_forwarded_after_the_cleanup() -> None:
    h = harness(0, True, 2, True)
    feed1(h, 0)
    h.process_watermark1(5)
    assert [e for e in h.get_output() if isinstance(e, Watermark)] == []
    h.process_watermark2(2)
    # the left element's cleanup timer (0 + 2) fired before watermark 2 left: a right element at 2 is not late,
    # but finds nothing to join (Flink's cleanup rule)
    assert buffers(h) == ([], [])
    feed2(h, 2)
    assert h.extract_output_records() == []
    assert h.get_output() == [Watermark(2)]


def test_bounds_at_the_long_edges_wrap_as_java_longs() -> None:
    h = harness(0, True, LONG_MAX, True)
    feed1(h, 10)
    feed2(h, LONG_MAX)
    assert output(h) == expect((10, LONG_MAX))
    # the left element's cleanup time 10 + LONG_MAX wraps below zero, as in Flink: the first watermark clears it
    h.process_watermark1(0)
    h.process_watermark2(0)
    assert buffers(h)[0] == []


def test_bounds_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="lowerBound <= upperBound"):
        harness(2, True, 1, True)


def test_an_element_meets_the_other_sides_buffer_in_ascending_timestamp_order() -> None:
    # left 17 then 16, right 20, between(-10, 10): Flink (RocksDB, and the heap backend for such timestamps)
    # gives (16, 20) then (17, 20); panes took the buffer's insertion order before
    h = harness(-10, True, 10, True)
    h.open()
    feed1(h, 17)
    feed1(h, 16)
    feed2(h, 20)
    pairs = [record.value for record in h.extract_output_records()]
    assert [(left[1], right[1]) for left, right in pairs] == [(16, 20), (17, 20)]
