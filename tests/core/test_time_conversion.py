"""``panes.time``: the one integer-only converter from the API edge (``int``, ``timedelta``, aware
``datetime``) to ``int`` epoch milliseconds, and Java ``long`` arithmetic helpers.

Reference values for ``java.time`` were taken from OpenJDK 17: ``Instant.toEpochMilli()`` floors
(an instant 1 µs before the epoch is ``-1`` ms) and ``Duration.toMillis()`` truncates towards zero
(``Duration.ofNanos(-1_500_000).toMillis() == -1``; Java 8 floored to ``-2``).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from panes.time import LONG_MAX, LONG_MIN, duration_ms, java_add, java_rem, timestamp_ms, to_millis

UTC = timezone.utc


def test_ints_are_milliseconds_already() -> None:
    assert to_millis(0) == 0
    assert to_millis(-5) == -5
    assert to_millis(LONG_MAX) == LONG_MAX
    assert to_millis(LONG_MIN) == LONG_MIN
    assert to_millis(np.int64(42)) == 42
    assert type(to_millis(np.int64(42))) is int


@pytest.mark.parametrize("value", [True, False])
def test_bools_are_refused_even_though_they_are_ints(value: bool) -> None:
    with pytest.raises(TypeError, match="not bool"):
        to_millis(value)
    with pytest.raises(TypeError):
        duration_ms(value)


@pytest.mark.parametrize("value", [1.0, 1.5, "10", None, [1]])
def test_other_types_are_refused_with_the_argument_name(value: object) -> None:
    with pytest.raises(TypeError, match="my_arg"):
        to_millis(value, name="my_arg")  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [LONG_MAX + 1, LONG_MIN - 1, 2**70])
def test_values_outside_javas_long_range_are_refused(value: int | timedelta) -> None:
    with pytest.raises(ValueError, match="long range"):
        to_millis(value)


def test_timedeltas_are_durations() -> None:
    assert duration_ms(timedelta(seconds=3)) == 3000
    assert duration_ms(timedelta(hours=-8)) == -8 * 3_600_000
    assert duration_ms(timedelta(days=1, milliseconds=1)) == 86_400_001
    assert duration_ms(timedelta(microseconds=1500)) == 1  # sub-millisecond parts are dropped
    assert duration_ms(timedelta(microseconds=999)) == 0
    assert duration_ms(7) == 7


def test_negative_sub_millisecond_durations_truncate_like_java_duration() -> None:
    assert duration_ms(timedelta(microseconds=-1500)) == -1
    assert duration_ms(timedelta(microseconds=-1)) == 0


def test_aware_datetimes_are_instants_flooring_like_java_instant() -> None:
    assert timestamp_ms(datetime(1970, 1, 1, tzinfo=UTC)) == 0
    assert timestamp_ms(datetime(2016, 8, 11, 7, 54, 8, 450000, tzinfo=UTC)) == 1_470_902_048_450
    # another offset, same instant
    assert timestamp_ms(datetime(2016, 8, 11, 15, 54, 8, 450000, tzinfo=timezone(timedelta(hours=8)))) == (
        1_470_902_048_450
    )
    assert timestamp_ms(datetime(1970, 1, 1, 0, 0, 0, 1500, tzinfo=UTC)) == 1
    # before the epoch, sub-millisecond parts floor (Instant.toEpochMilli): -1 µs and -0.5 ms are -1 ms
    assert timestamp_ms(datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)) == -1
    assert timestamp_ms(datetime(1969, 12, 31, 23, 59, 59, 999500, tzinfo=UTC)) == -1
    assert timestamp_ms(datetime(1969, 12, 31, 23, 59, 59, 998999, tzinfo=UTC)) == -2
    assert timestamp_ms(123) == 123


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(TypeError, match="naive datetime"):
        timestamp_ms(datetime(2020, 1, 1), name="ts")


def test_durations_and_instants_are_not_interchangeable() -> None:
    with pytest.raises(TypeError, match="is a duration"):
        duration_ms(datetime(2020, 1, 1, tzinfo=UTC))
    with pytest.raises(TypeError, match="is an instant"):
        timestamp_ms(timedelta(seconds=1))


def test_java_add_wraps_around_like_a_java_long() -> None:
    assert java_add(1, 2) == 3
    assert java_add(LONG_MAX, 1) == LONG_MIN
    assert java_add(LONG_MIN, -1) == LONG_MAX
    assert java_add(LONG_MAX - 808, 2000) == LONG_MIN + 1191


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [(7, 3, 1), (-7, 3, -1), (7, -3, 1), (-7, -3, -1), (0, 5, 0), (-6, 3, 0)],
)
def test_java_rem_takes_the_sign_of_the_dividend(a: int, b: int, expected: int) -> None:
    assert java_rem(a, b) == expected
