"""The event-time rules (``panes.windowing.rules``) and window assignment, each written once with a scalar and a
vectorised form: the two forms agree everywhere, the ends of Java's ``long`` range included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from panes.time import LONG_MAX, LONG_MIN
from panes.windowing import rules
from panes.windowing.assigners.sliding import element_window_starts, window_starts
from panes.windowing.windows import TimeWindow, intersect, merged_runs

EDGE = st.one_of(
    st.integers(LONG_MIN, LONG_MIN + 100),
    st.integers(-1000, 1000),
    st.integers(LONG_MAX - 100, LONG_MAX),
)
"""Times near both ends of the long range and around zero."""


@settings(max_examples=300, deadline=None)
@given(st.lists(EDGE, min_size=1, max_size=20), st.sampled_from([0, 1, 7, 50, 10**18]), EDGE)
def test_the_scalar_and_vectorised_rules_agree(times: list[int], lateness: int, watermark: int) -> None:
    array = np.array(times, dtype=np.int64)
    cleanups = rules.cleanup_times(array, lateness)
    assert cleanups.tolist() == [rules.cleanup_time(t, lateness) for t in times]
    assert rules.have_ended(array, watermark).tolist() == [rules.has_ended(t, watermark) for t in times]
    assert rules.windows_late(cleanups, watermark).tolist() == [
        rules.is_window_late(rules.cleanup_time(t, lateness), watermark) for t in times
    ]
    assert rules.elements_late(array, lateness, watermark).tolist() == [
        rules.is_element_late(t, lateness, watermark) for t in times
    ]


def test_the_cleanup_time_never_wraps_and_a_late_element_is_java_s_sum() -> None:
    assert rules.cleanup_time(LONG_MAX - 5, 10) == LONG_MAX  # the sum would wrap: never cleaned up
    assert rules.cleanup_time(99, 0) == 99
    assert rules.is_element_late(LONG_MAX, 1, 0)  # the sum wraps to LONG_MIN, as in Java


@settings(max_examples=300, deadline=None)
@given(
    st.lists(EDGE, min_size=1, max_size=20),
    st.sampled_from([(10, 10), (10, 5), (10, 3), (7, 7), (100, 30)]),
    st.sampled_from([0, 2, -3]),
)
def test_the_vectorised_window_assignment_is_the_assigners(
    times: list[int], shape: tuple[int, int], offset: int
) -> None:
    size, slide = shape
    array = np.array(times, dtype=np.int64)
    element, start = element_window_starts(array, size, slide, offset)
    expected = [(i, s) for i, t in enumerate(times) for s in window_starts(t, size, slide, offset)]
    assert list(zip(element.tolist(), start.tolist(), strict=True)) == expected
    if size == slide:
        element, start = element_window_starts(array, size, slide, offset, tumbling=True)
        assert element.tolist() == list(range(len(times)))
        assert start.tolist() == [TimeWindow.get_window_start_with_offset(t, offset, size) for t in times]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), EDGE, st.integers(0, 200)), min_size=1, max_size=30))
def test_the_vectorised_merging_sweep_is_the_scalar_one(windows: list[tuple[int, int, int]]) -> None:
    """``merged_runs`` against the sweep of ``intersect`` over windows sorted by group and start (lengths up to
    200, ends clamped so that none wraps around the long range)."""
    rows = sorted((group, start, min(start + length, LONG_MAX)) for group, start, length in windows)
    groups, starts, ends = (np.array(column, dtype=np.int64) for column in zip(*rows, strict=True))
    expected, cover = [], (0, 0)
    for index, (group, start, end) in enumerate(rows):
        if index and group == rows[index - 1][0] and intersect(cover[0], cover[1], start, end):
            cover = (cover[0], max(cover[1], end))
        else:
            expected.append(index)
            cover = (start, end)
    assert merged_runs(groups, starts, ends).tolist() == expected
