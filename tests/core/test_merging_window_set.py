"""``MergingWindowSet``: which in-flight window keeps its contents in which state window (Flink's
``MergingWindowSetTest``).

Where the outcome depends on Java's ``HashMap``/``HashSet`` iteration order (which of several merged
windows' state window becomes the merge target, the order of the merged windows), the expected values are
what Flink 2.3.0's own ``MergingWindowSet`` gives for the same sequence of ``addWindow`` calls:
``tools/flink_oracle/MergingWindowSetOrder.java`` replays them and prints each merge (its header says how to
run it against PyFlink's jars).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

import pytest

from panes.windowing import EventTimeSessionWindows, EventTimeTrigger, MergingWindowAssigner, TimeWindow
from panes.windowing.assigners.base import MergeCallback
from panes.windowing.merging_window_set import MergingWindowSet


@dataclass
class Merge:
    result: TimeWindow
    merged: list[TimeWindow]
    state_window: TimeWindow
    merged_state_windows: list[TimeWindow]


class RecordingMerge:
    """The merge function; like Flink's ``TestingMergeFunction`` it allows one merge per ``add_window``."""

    def __init__(self) -> None:
        self.merges: list[Merge] = []

    def reset(self) -> None:
        self.merges = []

    def __call__(self, result: Any, merged: Collection[Any], state_window: Any, merged_state: list[Any]) -> None:
        assert not self.merges, "more than one merge for adding one window"
        self.merges.append(Merge(result, list(merged), state_window, list(merged_state)))

    @property
    def merged(self) -> bool:
        return bool(self.merges)

    @property
    def last(self) -> Merge:
        return self.merges[-1]


def W(start: int, end: int) -> TimeWindow:
    return TimeWindow(start, end)


@pytest.fixture
def sessions() -> MergingWindowSet:
    return MergingWindowSet(EventTimeSessionWindows.with_gap(3), [])


def add(window_set: MergingWindowSet, merge: RecordingMerge, window: TimeWindow) -> TimeWindow:
    merge.reset()
    return window_set.add_window(window, merge)  # type: ignore[no-any-return]


def test_incremental_merging(sessions: MergingWindowSet) -> None:
    m = RecordingMerge()
    assert add(sessions, m, W(0, 4)) == W(0, 4)
    assert not m.merged
    assert sessions.get_state_window(W(0, 4)) == W(0, 4)

    assert add(sessions, m, W(0, 4)) == W(0, 4)  # an identical window: no merge
    assert not m.merged

    assert add(sessions, m, W(3, 5)) == W(0, 5)
    assert m.last == Merge(W(0, 5), [W(0, 4)], W(0, 4), [])  # the new window is not among the merged

    assert add(sessions, m, W(4, 6)) == W(0, 6)
    assert m.last == Merge(W(0, 6), [W(0, 5)], W(0, 4), [])
    assert sessions.get_state_window(W(0, 6)) == W(0, 4)

    # windows inside the merged one change nothing
    for window in (W(1, 4), W(0, 4), W(3, 5), W(4, 6)):
        assert add(sessions, m, window) == W(0, 6)
        assert not m.merged
    assert sessions.get_state_window(W(0, 6)) == W(0, 4)

    # a second, separate session
    assert add(sessions, m, W(11, 14)) == W(11, 14)
    assert not m.merged
    assert sessions.get_state_window(W(0, 6)) == W(0, 4)
    assert sessions.get_state_window(W(11, 14)) == W(11, 14)

    assert add(sessions, m, W(10, 13)) == W(10, 14)
    assert m.last == Merge(W(10, 14), [W(11, 14)], W(11, 14), [])
    assert add(sessions, m, W(12, 15)) == W(10, 15)
    assert m.last == Merge(W(10, 15), [W(10, 14)], W(11, 14), [])
    assert add(sessions, m, W(11, 14)) == W(10, 15)
    assert not m.merged
    assert sessions.get_state_window(W(0, 6)) == W(0, 4)
    assert sessions.get_state_window(W(10, 15)) == W(11, 14)

    sessions.retire_window(W(0, 6))
    assert sessions.get_state_window(W(0, 6)) is None
    assert sessions.get_state_window(W(10, 15)) == W(11, 14)


def test_late_merging_of_existing_sessions(sessions: MergingWindowSet) -> None:
    m = RecordingMerge()
    for window in (W(0, 3), W(5, 8), W(10, 13)):
        assert add(sessions, m, window) == window
        assert not m.merged
        assert sessions.get_state_window(window) == window

    # (8, 10) bridges the two later sessions; Java's HashSet iterates (5, 8) first
    assert add(sessions, m, W(8, 10)) == W(5, 13)
    assert m.last == Merge(W(5, 13), [W(5, 8), W(10, 13)], W(5, 8), [W(10, 13)])
    assert sessions.get_state_window(W(0, 3)) == W(0, 3)

    for window in (W(5, 8), W(8, 10), W(10, 13)):
        assert add(sessions, m, window) == W(5, 13)
        assert not m.merged
    assert sessions.get_state_window(W(5, 13)) == W(5, 8)

    # (3, 5) bridges everything
    assert add(sessions, m, W(3, 5)) == W(0, 13)
    assert m.last == Merge(W(0, 13), [W(0, 3), W(5, 13)], W(0, 3), [W(5, 8)])
    assert m.last.state_window not in m.last.merged_state_windows
    assert sessions.get_state_window(W(0, 13)) == W(0, 3)


def test_a_new_window_covering_one_existing_window(sessions: MergingWindowSet) -> None:
    m = RecordingMerge()
    add(sessions, m, W(1, 2))
    assert add(sessions, m, W(0, 3)) == W(0, 3)
    assert m.merged
    assert sessions.get_state_window(W(0, 3)) == W(1, 2)


def test_a_new_window_covering_several_existing_windows(sessions: MergingWindowSet) -> None:
    m = RecordingMerge()
    for window in (W(1, 3), W(5, 8), W(10, 13)):
        add(sessions, m, window)
    assert add(sessions, m, W(0, 13)) == W(0, 13)
    assert m.last == Merge(W(0, 13), [W(1, 3), W(5, 8), W(10, 13)], W(1, 3), [W(5, 8), W(10, 13)])
    assert sessions.get_state_window(W(0, 13)) == W(1, 3)


def test_adding_an_identical_window_does_not_merge(sessions: MergingWindowSet) -> None:
    m = RecordingMerge()
    for _ in range(2):
        assert add(sessions, m, W(1, 2)) == W(1, 2)
        assert not m.merged
        assert sessions.get_state_window(W(1, 2)) == W(1, 2)


def test_a_new_window_equal_to_a_merge_result_takes_over_as_its_own_state_window() -> None:
    """Flink keeps the new window's own mapping when it equals an in-flight merge result: ``mergeWindows``
    puts both into one ``HashSet`` (one element, no merge), so ``addWindow`` maps the window to itself and
    the earlier state window is no longer referenced. Only assigners whose windows can equal a merge
    result (dynamic session gaps, custom assigners) get here; panes does as Flink does."""
    window_set = MergingWindowSet(EventTimeSessionWindows.with_gap(3), [])
    m = RecordingMerge()
    add(window_set, m, W(0, 4))
    assert add(window_set, m, W(3, 5)) == W(0, 5)
    assert window_set.get_state_window(W(0, 5)) == W(0, 4)

    assert add(window_set, m, W(0, 5)) == W(0, 5)
    assert not m.merged
    assert window_set.get_state_window(W(0, 5)) == W(0, 5)


def test_merging_many_windows_follows_javas_iteration_order_after_a_resize() -> None:
    """Twenty in-flight sessions (the map grows past 12 entries, Java doubles its table) and one window
    that covers eight of them."""
    window_set = MergingWindowSet(EventTimeSessionWindows.with_gap(10), [])
    m = RecordingMerge()
    for i in range(20):
        add(window_set, m, W(i * 100, i * 100 + 10))
    assert add(window_set, m, W(300, 1050)) == W(300, 1050)
    covered = [W(s, s + 10) for s in (500, 800, 700, 300, 1000, 600, 400, 900)]
    assert m.last == Merge(W(300, 1050), covered, W(500, 510), covered[1:])
    assert window_set.get_state_window(W(300, 1050)) == W(500, 510)
    assert [w.start for w in window_set.mapping] == [
        *(1900, 0, 1200, 1300, 100, 1700, 200, 1600, 300),
        *(1400, 1800, 1500, 1100),
    ]


def test_restore_from_state(sessions: MergingWindowSet) -> None:
    restored = MergingWindowSet(EventTimeSessionWindows.with_gap(3), [(W(17, 42), W(42, 17)), (W(1, 2), W(3, 4))])
    assert restored.get_state_window(W(17, 42)) == W(42, 17)
    assert restored.get_state_window(W(1, 2)) == W(3, 4)
    assert restored.persist() is None  # nothing changed: nothing to write back


def test_persist_returns_the_pairs_in_hash_map_order(sessions: MergingWindowSet) -> None:
    m = RecordingMerge()
    add(sessions, m, W(1, 2))
    add(sessions, m, W(17, 42))
    # the order of Java's HashMap (Flink's own test expects this order too)
    assert sessions.persist() == [(W(1, 2), W(1, 2)), (W(17, 42), W(17, 42))]


def test_retiring_a_window_that_is_not_in_flight_is_an_error(sessions: MergingWindowSet) -> None:
    with pytest.raises(RuntimeError, match="not in in-flight window set"):
        sessions.retire_window(W(0, 1))


# -- assigners that merge lazily or hand over lists ---------------------------------------------------------------


class NonEagerlyMergingAssigner(MergingWindowAssigner[Any, TimeWindow]):
    """Flink's test assigner that lets windows grow and merges lazily: it merges the windows starting
    inside the earliest window into that window extended by one, and reports them as a list."""

    def __init__(self, timeout: int) -> None:
        self.timeout = timeout

    def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[TimeWindow]:
        return [W(timestamp, timestamp + self.timeout)]

    def merge_windows(self, windows: Iterable[TimeWindow], callback: MergeCallback) -> None:
        windows = list(windows)
        earliest = min(windows, key=lambda w: w.start)
        associated = [w for w in windows if earliest.start <= w.start < earliest.end]
        if len(associated) > 1:
            callback(associated, W(earliest.start, earliest.end + 1))

    def get_default_trigger(self) -> Any:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


def test_non_eager_merging_keeps_every_added_window_in_flight() -> None:
    window_set = MergingWindowSet(NonEagerlyMergingAssigner(3000), [])
    m = RecordingMerge()
    for window in (W(0, 2), W(2, 5), W(1, 2), W(10, 12)):
        result = add(window_set, m, window)
        assert window_set.get_state_window(result) is not None
    # (10, 12) did not merge; the assigner merged (0, 3) and (2, 5) instead, without the new window
    assert m.last.result == W(0, 4)
    assert W(10, 12) not in m.last.merged


class ListMergingAssigner(MergingWindowAssigner[Any, TimeWindow]):
    """Merges whatever ``plan`` lists, handing the callback that exact list (a Java ``ArrayList``)."""

    def __init__(self, plan: list[TimeWindow], result: TimeWindow) -> None:
        self.plan = plan
        self.result = result

    def assign_windows(self, element: Any, timestamp: int, context: Any) -> list[TimeWindow]:
        return []

    def merge_windows(self, windows: Iterable[TimeWindow], callback: MergeCallback) -> None:
        if all(w in list(windows) for w in self.plan):
            callback(list(self.plan), self.result)

    def get_default_trigger(self) -> Any:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True


def test_a_merge_reported_as_a_list_is_used_in_list_order() -> None:
    """Flink keeps the collection the assigner reports; for a list, the first remaining window's state
    window becomes the target and the merged windows are handed on in list order. (A ``HashSet`` of the
    same windows would iterate (10, 13) before (5, 8).)"""
    assigner = ListMergingAssigner([W(5, 8), W(10, 13), W(8, 10)], W(5, 13))
    window_set = MergingWindowSet(assigner, [(W(10, 13), W(10, 13)), (W(5, 8), W(5, 8))])
    m = RecordingMerge()
    assert add(window_set, m, W(8, 10)) == W(5, 13)
    assert m.last == Merge(W(5, 13), [W(5, 8), W(10, 13)], W(5, 8), [W(10, 13)])
    assert window_set.get_state_window(W(5, 13)) == W(5, 8)


def test_a_merge_group_with_many_hash_collisions_iterates_like_javas_resized_hash_set() -> None:
    """Ten sessions merge at once: nine whose window hashes share bucket 0 of 64, and (150, 151) in bucket 16,
    added first. In a 16-bucket table all ten share bucket 0; Java's ``HashSet`` doubles the table when a bucket
    reaches 9 entries (instead of making it a tree while it has fewer than 64 buckets), which moves (150, 151)
    behind the crowded bucket: the merge target is (310, 311). With the load factor alone (10 elements in 16
    buckets) it would be (150, 151)."""
    window_set = MergingWindowSet(EventTimeSessionWindows.with_gap(1), [])
    m = RecordingMerge()
    starts = [150, 310, 910, 1130, 1930, 2550, 3570, 3740, 4310, 5360]
    for start in starts:
        add(window_set, m, W(start, start + 1))
    assert add(window_set, m, W(0, 8000)) == W(0, 8000)
    expected = [W(s, s + 1) for s in starts[1:] + starts[:1]]
    assert m.last == Merge(W(0, 8000), expected, W(310, 311), expected[1:])
