"""Flink's built-in generators (facts from BoundedOutOfOrdernessWatermarksTest, AscendingTimestampsWatermarksTest)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from panes.time import LONG_MAX, LONG_MIN
from panes.watermarks import (
    AscendingTimestampsWatermarks,
    BoundedOutOfOrdernessWatermarks,
    NoWatermarksGenerator,
    WatermarkGenerator,
)
from tests.watermarks._support import RecordingOutput

# -- bounded out-of-orderness: watermark = max timestamp - bound - 1 ------------------------------------------


def test_bounded_watermark_before_any_event_is_long_min() -> None:
    output = RecordingOutput()
    BoundedOutOfOrdernessWatermarks(10).on_periodic_emit(output)
    assert output.watermarks == [LONG_MIN]


def test_bounded_watermark_after_one_event() -> None:
    output = RecordingOutput()
    generator = BoundedOutOfOrdernessWatermarks(timedelta(milliseconds=10))
    generator.on_event(object(), 1337, output)
    assert output.watermarks == []  # periodic: nothing is emitted on the event itself
    generator.on_periodic_emit(output)
    assert output.watermarks == [1326]


def test_bounded_watermark_follows_the_maximum_of_non_monotonous_events() -> None:
    output = RecordingOutput()
    generator = BoundedOutOfOrdernessWatermarks(10)
    for timestamp in (12345, 12300, 12340, 12280):
        generator.on_event(object(), timestamp, output)
    generator.on_periodic_emit(output)
    assert output.watermarks == [12334]
    assert generator.max_timestamp == 12345


def test_bounded_repeated_probe_gives_the_same_watermark() -> None:
    generator = BoundedOutOfOrdernessWatermarks(10)
    generator.on_event(object(), 723456, RecordingOutput())
    generator.on_periodic_emit(RecordingOutput())
    output = RecordingOutput()
    generator.on_periodic_emit(output)
    assert output.watermarks == [723445]


def test_bounded_extreme_bounds_never_overflow() -> None:
    output = RecordingOutput()
    generator = BoundedOutOfOrdernessWatermarks(LONG_MAX)
    generator.on_periodic_emit(output)
    generator.on_event(None, LONG_MAX, output)
    generator.on_periodic_emit(output)
    assert output.watermarks == [LONG_MIN, -1]
    zero = BoundedOutOfOrdernessWatermarks(0)
    zero.on_event(None, LONG_MAX, output)
    zero.on_periodic_emit(output)
    assert output.last_watermark == LONG_MAX - 1


def test_bounded_rejects_a_negative_bound() -> None:
    with pytest.raises(ValueError, match="cannot be negative"):
        BoundedOutOfOrdernessWatermarks(-1)
    with pytest.raises(ValueError, match="cannot be negative"):
        BoundedOutOfOrdernessWatermarks(timedelta(milliseconds=-5))


def test_bounded_rejects_non_durations() -> None:
    with pytest.raises(TypeError):
        BoundedOutOfOrdernessWatermarks(1.5)  # type: ignore[arg-type]


def test_bounded_sub_millisecond_timedelta_is_floored() -> None:
    assert BoundedOutOfOrdernessWatermarks(timedelta(microseconds=1999)).out_of_orderness == 1


# -- ascending timestamps: watermark = max timestamp - 1 ------------------------------------------------------


def test_ascending_watermark_before_any_event_is_long_min() -> None:
    output = RecordingOutput()
    AscendingTimestampsWatermarks().on_periodic_emit(output)
    assert output.watermarks == [LONG_MIN]


def test_ascending_watermark_is_one_below_the_latest_timestamp() -> None:
    output = RecordingOutput()
    generator = AscendingTimestampsWatermarks()
    generator.on_event(object(), 1337, output)
    generator.on_periodic_emit(output)
    assert output.watermarks == [1336]


def test_ascending_lower_timestamp_does_not_lower_the_watermark() -> None:
    output = RecordingOutput()
    generator = AscendingTimestampsWatermarks()
    generator.on_event(object(), 12345, output)
    generator.on_event(object(), 12340, output)
    generator.on_periodic_emit(output)
    assert output.watermarks == [12344]


# -- no watermarks --------------------------------------------------------------------------------------------


def test_no_watermarks_generator_never_emits() -> None:
    output = RecordingOutput()
    generator = NoWatermarksGenerator()
    generator.on_event(object(), 100, output)
    generator.on_periodic_emit(output)
    assert output.events == []


def test_generator_is_an_abstract_base_class() -> None:
    with pytest.raises(TypeError):
        WatermarkGenerator()  # type: ignore[abstract]
