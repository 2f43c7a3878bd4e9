"""The split tracker of the Spark runner (``panes.spark.split_watermarks``), without Spark: its watermark after each
micro-batch against Flink's rule for a source's partitions written out here from its definition (each partition's
watermark the largest rating so far, their minimum over the partitions that are not idle, a partition without a
rating holding it at ``LONG_MIN``, idleness decided at each micro-batch's periodic emit by Flink's
``IdlenessTimer``), and that a snapshot taken anywhere and restored goes on alike."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from panes.spark.split_watermarks import SplitPlan, SplitTracker, effective_watermark, highest_ratings, split_code
from panes.time import LONG_MAX, LONG_MIN

Batch = tuple[int, dict[int, int]]
"""A micro-batch: the time it ran (ms) and each split's rating in it."""


def flink_watermarks(known: list[int], batches: list[Batch], timeout: int | None) -> list[int]:
    """The combined watermark after each batch, by the definition (see the module docstring)."""
    highest: dict[int, int] = dict.fromkeys(known, LONG_MIN)
    quiet_since: dict[int, int | None] = dict.fromkeys(known, None)
    combined = LONG_MIN
    found = []
    for now, ratings in batches:
        idle: set[int] = set()
        for split, rating in ratings.items():
            highest[split] = max(highest.get(split, LONG_MIN), rating)
        for split in highest:
            if split in ratings or split not in quiet_since:
                quiet_since[split] = None  # activity since the last emit (or a split that just joined)
            elif quiet_since[split] is None:
                quiet_since[split] = now  # the first quiet emit starts the countdown
            elif timeout is not None and now - quiet_since[split] > timeout:  # type: ignore[operator]
                idle.add(split)
        active = [value for split, value in highest.items() if split not in idle]
        if active:
            combined = max(combined, min(active))
        found.append(combined)
    return found


splits = st.lists(st.integers(0, 5), min_size=1, max_size=4, unique=True)


@st.composite
def runs(draw: st.DrawFn) -> tuple[list[int], list[Batch], int | None]:
    known = draw(splits)
    pool = [*known, 6, 7]  # 6 and 7: splits found after the query was built
    count = draw(st.integers(1, 12))
    now = draw(st.integers(0, 1_000))
    batches: list[Batch] = []
    for _ in range(count):
        now += draw(st.integers(0, 400))
        chosen = draw(st.lists(st.sampled_from(pool), max_size=len(pool), unique=True))
        batches.append((now, {split: draw(st.integers(-50, 5_000)) for split in chosen}))
    timeout = draw(st.one_of(st.none(), st.integers(1, 600)))
    return known, batches, timeout


@settings(max_examples=300, deadline=None)
@given(runs(), st.integers(0, 12))
def test_the_tracker_gives_flink_s_watermark_over_the_splits(
    run: tuple[list[int], list[Batch], int | None], cut: int
) -> None:
    known, batches, timeout = run
    plan = SplitPlan(tuple(known), () if timeout is None else (timeout,))
    expected = flink_watermarks(known, batches, timeout)
    tracker = SplitTracker.of(plan, None)
    found = []
    for index, (now, ratings) in enumerate(batches):
        if index == cut:
            tracker = SplitTracker.of(plan, tracker.snapshot())  # a restart: the state the call stored
        tracker.update(ratings, now)
        found.append(tracker.watermark)
    assert found == expected


def test_a_known_split_without_records_holds_the_watermark_until_it_is_idle() -> None:
    plan = SplitPlan((1, 2), (100,))
    tracker = SplitTracker.of(plan, None)
    tracker.update({1: 500}, 0)  # split 2 has had nothing: its countdown starts at this first emit
    assert tracker.watermark == LONG_MIN
    tracker.update({1: 600}, 100)  # 100 ms since: not more than the timeout yet
    assert tracker.watermark == LONG_MIN
    tracker.update({1: 800}, 101)
    assert tracker.watermark == 800
    tracker.update({2: 300}, 152)  # back: the combined watermark never goes back, but it holds from here on
    assert tracker.watermark == 800
    tracker.update({1: 2_000, 2: 900}, 153)
    assert tracker.watermark == 900


def test_the_effective_watermark_follows_the_splits_and_spark_only_where_it_must() -> None:
    alone = SplitPlan((1,))
    joined = SplitPlan((1,), alone=False)
    assert effective_watermark(alone, 9_000, 500) == 500
    assert effective_watermark(joined, 9_000, 500) == 500
    assert effective_watermark(joined, 300, 500) == 300
    assert effective_watermark(alone, LONG_MAX, 500) == LONG_MAX
    assert effective_watermark(alone, 9_000, 500, lag=200) == 300
    assert effective_watermark(alone, 9_000, LONG_MIN, lag=200) == LONG_MIN


def test_split_codes_are_stable_distinct_and_not_negative() -> None:
    codes = {
        split_code(source, topic, partition) for source in (1, 2) for topic in ("a", "b") for partition in range(50)
    }
    assert len(codes) == 200
    assert all(code >= 0 for code in codes)
    assert split_code(3, "clicks", 7) == split_code(3, "clicks", 7)
    assert highest_ratings([(1, 5), (2, 3), (1, 9), (1, 2)]) == {1: 9, 2: 3}
