"""``TimeWindow`` and ``GlobalWindow`` (Flink's ``TimeWindowTest`` and the merge cases of
``EventTimeSessionWindowsTest``)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from panes.time import LONG_MAX
from panes.windowing import GlobalWindow, TimeWindow

HOUR = 3_600_000
DAY = 24 * HOUR


@pytest.mark.parametrize(
    ("timestamp", "offset", "start"),
    [
        # size 7, no offset: [-21, -14), [-14, -7), [-7, 0), [0, 7), [7, 14), ...
        (-8, 0, -14),
        (-7, 0, -7),
        (-6, 0, -7),
        (-1, 0, -7),
        (1, 0, 0),
        (6, 0, 0),
        (7, 0, 7),
        (8, 0, 7),
        # offset 3: [-11, -4), [-4, 3), [3, 10), [10, 17), ...
        (-10, 3, -11),
        (-9, 3, -11),
        (-3, 3, -4),
        (-2, 3, -4),
        (-1, 3, -4),
        (1, 3, -4),
        (2, 3, -4),
        (3, 3, 3),
        (9, 3, 3),
        (10, 3, 10),
        # offset -2: [-16, -9), [-9, -2), [-2, 5), [5, 12), ...
        (-12, -2, -16),
        (-7, -2, -9),
        (-4, -2, -9),
        (-3, -2, -9),
        (2, -2, -2),
        (-1, -2, -2),
        (1, -2, -2),
        (-2, -2, -2),
        (3, -2, -2),
        (4, -2, -2),
        (7, -2, 5),
        (12, -2, 12),
    ],
)
def test_window_start_with_offset(timestamp: int, offset: int, start: int) -> None:
    assert TimeWindow.get_window_start_with_offset(timestamp, offset, 7) == start


def test_day_windows_in_a_time_zone_are_a_negative_offset() -> None:
    # local midnight in UTC+08:00 is 16:00 UTC the day before: offset -8 hours
    assert TimeWindow.get_window_start_with_offset(1_470_902_048_450, -8 * HOUR, DAY) == 1_470_844_800_000


def _intersects(a: TimeWindow, b: TimeWindow) -> bool:
    assert a.intersects(b) == b.intersects(a)
    return a.intersects(b)


def test_windows_intersect_when_they_overlap_or_touch() -> None:
    window = TimeWindow(10, 20)
    assert window.intersects(window)
    assert _intersects(window, TimeWindow(20, 30))  # adjacent windows merge (ends are exclusive)
    assert not _intersects(window, TimeWindow(21, 30))
    assert _intersects(window, TimeWindow(19, 22))
    assert _intersects(window, TimeWindow(12, 13))  # contained
    assert _intersects(TimeWindow(5, 5), TimeWindow(5, 9))  # an empty "point" window at a border


def test_cover_and_max_timestamp() -> None:
    assert TimeWindow(10, 20).cover(TimeWindow(15, 30)) == TimeWindow(10, 30)
    assert TimeWindow(10, 20).cover(TimeWindow(0, 5)) == TimeWindow(0, 20)
    assert TimeWindow(0, 2).max_timestamp() == 1
    assert TimeWindow(5, 5).max_timestamp() == 4  # a point window ends before it starts


def test_time_windows_are_values() -> None:
    assert TimeWindow(1, 2) == TimeWindow(1, 2)
    assert TimeWindow(1, 2) != TimeWindow(1, 3)
    assert len({TimeWindow(1, 2), TimeWindow(1, 2)}) == 1
    assert pickle.loads(pickle.dumps(TimeWindow(1, 2))) == TimeWindow(1, 2)
    assert repr(TimeWindow(1, 2)) == "TimeWindow(start=1, end=2)"


def _merges(*windows: TimeWindow) -> list[tuple[set[TimeWindow], TimeWindow]]:
    calls: list[tuple[set[TimeWindow], TimeWindow]] = []

    def callback(merged: Any, result: TimeWindow) -> None:
        calls.append((set(merged), result))

    TimeWindow.merge_windows(list(windows), callback)
    return calls


def test_a_single_window_never_merges() -> None:
    assert _merges(TimeWindow(0, 0)) == []
    assert _merges(TimeWindow(0, 1)) == []


def test_consecutive_windows_merge_into_their_cover() -> None:
    merges = _merges(TimeWindow(0, 1), TimeWindow(1, 2), TimeWindow(2, 3), TimeWindow(4, 5), TimeWindow(5, 6))
    assert merges == [
        ({TimeWindow(0, 1), TimeWindow(1, 2), TimeWindow(2, 3)}, TimeWindow(0, 3)),
        ({TimeWindow(4, 5), TimeWindow(5, 6)}, TimeWindow(4, 6)),
    ]


def test_covering_windows_merge_regardless_of_input_order() -> None:
    merges = _merges(TimeWindow(1, 1), TimeWindow(0, 2), TimeWindow(4, 7), TimeWindow(5, 6))
    assert merges == [
        ({TimeWindow(1, 1), TimeWindow(0, 2)}, TimeWindow(0, 2)),
        ({TimeWindow(5, 6), TimeWindow(4, 7)}, TimeWindow(4, 7)),
    ]


def test_equal_windows_collapse_into_one_and_do_not_merge() -> None:
    assert _merges(TimeWindow(0, 3), TimeWindow(0, 3)) == []


def test_merging_is_a_sweep_from_the_earliest_start() -> None:
    # (0, 10) reaches (5, 6) and (9, 12): one merge even though (5, 6) and (9, 12) do not touch
    assert _merges(TimeWindow(9, 12), TimeWindow(5, 6), TimeWindow(0, 10), TimeWindow(13, 14)) == [
        ({TimeWindow(0, 10), TimeWindow(5, 6), TimeWindow(9, 12)}, TimeWindow(0, 12)),
    ]


def test_the_global_window_is_one_value_that_never_ends() -> None:
    assert GlobalWindow() is GlobalWindow.get()
    assert GlobalWindow() == GlobalWindow.get()
    assert GlobalWindow().max_timestamp() == LONG_MAX
    assert pickle.loads(pickle.dumps(GlobalWindow())) is GlobalWindow()
    assert hash(GlobalWindow()) == hash(GlobalWindow.get())
    assert GlobalWindow() != TimeWindow(0, LONG_MAX)
