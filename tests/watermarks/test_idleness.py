"""Idleness detection (facts from WatermarksWithIdlenessTest, WatermarksWithIdlenessTimeoutTest,
PausableRelativeClock)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from panes.elements import WatermarkStatus
from panes.timers.clock import ManualProcessingTimeService
from panes.watermarks import (
    AscendingTimestampsWatermarks,
    IdlenessTimer,
    NoWatermarksGenerator,
    PausableClock,
    WatermarksWithIdleness,
)
from tests.watermarks._support import RecordingOutput

START = 1_000_000  # any start works; Flink's tests avoid 0, which its timer uses as "not started"


@pytest.mark.parametrize("timeout", [0, -1, timedelta(0), timedelta(milliseconds=-1)])
def test_timeout_must_be_greater_than_zero(timeout: int | timedelta) -> None:
    clock = ManualProcessingTimeService()
    with pytest.raises(ValueError, match="greater than zero"):
        WatermarksWithIdleness(AscendingTimestampsWatermarks(), timeout, clock)
    with pytest.raises(ValueError, match="greater than zero"):
        IdlenessTimer(clock, timeout)


def test_timer_is_initially_active() -> None:
    timer = IdlenessTimer(ManualProcessingTimeService(START), 10)
    assert timer.check_if_idle() is False


def test_timer_idle_without_events_once_the_timeout_passed_after_the_first_quiet_check() -> None:
    clock = ManualProcessingTimeService(START)
    timer = IdlenessTimer(clock, 10)
    assert timer.check_if_idle() is False  # starts the countdown
    clock.set_current_time(START + 11)
    assert timer.check_if_idle() is True


def make_idle(clock: ManualProcessingTimeService, timeout: int) -> IdlenessTimer:
    timer = IdlenessTimer(clock, timeout)
    assert timer.check_if_idle() is False
    clock.set_current_time(clock.now + timeout + 1)
    assert timer.check_if_idle() is True
    return timer


def test_timer_repeated_checks_stay_idle() -> None:
    clock = ManualProcessingTimeService(START)
    timer = make_idle(clock, 122)
    assert timer.check_if_idle() is True
    clock.set_current_time(clock.now + 100)
    assert timer.check_if_idle() is True


def test_timer_activity_after_idleness_makes_it_active() -> None:
    clock = ManualProcessingTimeService(START)
    timer = make_idle(clock, 10)
    timer.activity()
    assert timer.check_if_idle() is False


def test_timer_idle_active_idle() -> None:
    clock = ManualProcessingTimeService(START)
    timer = make_idle(clock, 122)
    timer.activity()
    assert timer.check_if_idle() is False
    assert timer.check_if_idle() is False  # first quiet check restarts the countdown
    clock.set_current_time(clock.now + 123)
    assert timer.check_if_idle() is True


def test_exactly_the_timeout_is_not_idle_strictly_more_is() -> None:
    clock = ManualProcessingTimeService(START)
    timer = IdlenessTimer(clock, 10)
    timer.check_if_idle()
    clock.set_current_time(START + 10)
    assert timer.check_if_idle() is False
    clock.set_current_time(START + 11)
    assert timer.check_if_idle() is True


def test_countdown_starts_at_the_first_quiet_probe_not_at_the_last_event() -> None:
    # timeout 10 ms, an event at t=4, probes every 5 ms: idle at t=25, 21 ms after the event
    clock = ManualProcessingTimeService(START)
    generator = WatermarksWithIdleness(NoWatermarksGenerator(), 10, clock)
    output = RecordingOutput()
    clock.set_current_time(START + 4)
    generator.on_event(object(), 1, output)
    for t, idle in ((5, False), (10, False), (15, False), (20, False), (25, True)):
        clock.set_current_time(START + t)
        generator.on_periodic_emit(output)
        assert output.idle is idle, f"t={t}"


def test_a_clock_starting_at_zero_works() -> None:
    clock = ManualProcessingTimeService(0)
    timer = IdlenessTimer(clock, 10)
    assert timer.check_if_idle() is False  # countdown starts at t=0
    clock.set_current_time(11)
    assert timer.check_if_idle() is True


def test_generator_marks_idle_once_and_stops_asking_the_wrapped_generator() -> None:
    clock = ManualProcessingTimeService(START)
    generator = WatermarksWithIdleness(AscendingTimestampsWatermarks(), 10, clock)
    output = RecordingOutput()
    generator.on_event(object(), 100, output)
    generator.on_periodic_emit(output)  # activity seen: delegate
    generator.on_periodic_emit(output)  # first quiet probe: delegate, countdown starts
    clock.set_current_time(START + 11)
    generator.on_periodic_emit(output)  # idle
    clock.set_current_time(START + 50)
    generator.on_periodic_emit(output)  # still idle: not marked again, no watermark
    assert output.watermarks == [99, 99]
    assert output.events[-1] is WatermarkStatus.IDLE
    assert output.events.count(WatermarkStatus.IDLE) == 1


def test_generator_event_after_idleness_resumes_watermarks() -> None:
    clock = ManualProcessingTimeService(START)
    generator = WatermarksWithIdleness(AscendingTimestampsWatermarks(), 10, clock)
    output = RecordingOutput()
    generator.on_periodic_emit(output)
    clock.set_current_time(START + 11)
    generator.on_periodic_emit(output)
    assert output.idle
    generator.on_event(object(), 500, output)  # no mark_active here: the next watermark reactivates
    assert output.idle
    generator.on_periodic_emit(output)
    assert output.last_watermark == 499
    assert not output.idle
    # and idleness can be detected (and marked) again
    generator.on_periodic_emit(output)
    clock.set_current_time(START + 30)
    generator.on_periodic_emit(output)
    assert output.events.count(WatermarkStatus.IDLE) == 2


def test_generator_rejects_a_non_generator() -> None:
    with pytest.raises(TypeError, match="WatermarkGenerator"):
        WatermarksWithIdleness(object(), 10, ManualProcessingTimeService())  # type: ignore[arg-type]


# -- pausable clock ---------------------------------------------------------------------------------------------


def test_pausable_clock_hides_paused_time() -> None:
    base = ManualProcessingTimeService(100)
    clock = PausableClock(base)
    assert clock.get_current_processing_time() == 100
    clock.pause()
    base.set_current_time(150)
    assert clock.get_current_processing_time() == 100
    clock.unpause()
    assert clock.get_current_processing_time() == 100
    base.set_current_time(170)
    assert clock.get_current_processing_time() == 120


def test_pausable_clock_pauses_nest() -> None:
    base = ManualProcessingTimeService(0)
    clock = PausableClock(base)
    clock.pause()
    clock.pause()
    base.set_current_time(10)
    clock.unpause()
    assert clock.is_paused
    base.set_current_time(20)
    assert clock.get_current_processing_time() == 0
    clock.unpause()
    assert not clock.is_paused
    base.set_current_time(25)
    assert clock.get_current_processing_time() == 5


def test_pausable_clock_unpause_without_pause_is_an_error() -> None:
    with pytest.raises(RuntimeError):
        PausableClock(ManualProcessingTimeService()).unpause()


def test_idleness_is_not_detected_while_the_clock_is_paused() -> None:
    base = ManualProcessingTimeService(START)
    clock = PausableClock(base)
    generator = WatermarksWithIdleness(NoWatermarksGenerator(), 100, clock)
    output = RecordingOutput()
    generator.on_periodic_emit(output)
    clock.pause()  # e.g. back-pressured: time spent blocked does not count
    for step in range(1, 11):
        base.set_current_time(START + step * 100)
        generator.on_periodic_emit(output)
    assert not output.idle
    clock.unpause()
    base.set_current_time(base.now + 101)
    generator.on_periodic_emit(output)
    assert output.idle
