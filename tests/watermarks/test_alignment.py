"""Watermark alignment bookkeeping (facts from Flink's SourceCoordinatorAlignmentTest,
SourceCoordinatorTest.testWatermarkAggregator, SourceOperatorAlignmentTest and SourceOperator's source)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from panes.time import LONG_MAX, LONG_MIN
from panes.timers.clock import ManualProcessingTimeService
from panes.watermarks import (
    WATERMARK_ALIGNMENT_DISABLED,
    PausableClock,
    SourceWatermarkAlignment,
    WatermarkAggregator,
    WatermarkAlignmentCoordinator,
    WatermarkAlignmentParams,
    max_allowed_watermark,
)

GROUP1 = WatermarkAlignmentParams(1000, "group1", 1000)


def report(coordinator: WatermarkAlignmentCoordinator, source: str, subtask: int, watermark: int) -> None:
    """A report followed by an announcement, as Flink's test helper does."""
    coordinator.report_watermark(source, subtask, watermark)
    coordinator.announce(source)


# -- parameters -------------------------------------------------------------------------------------------------


def test_params_of_validates_and_converts() -> None:
    params = WatermarkAlignmentParams.of("g", timedelta(seconds=2), timedelta(milliseconds=250))
    assert params == WatermarkAlignmentParams(2000, "g", 250)
    assert params.is_enabled()
    assert WatermarkAlignmentParams.of("g", 5).update_interval == 1000
    with pytest.raises(ValueError, match="greater than or equal to zero"):
        WatermarkAlignmentParams.of("g", -1)
    with pytest.raises(ValueError, match="update_interval must be positive"):
        WatermarkAlignmentParams.of("g", 1, 0)
    with pytest.raises(TypeError, match="watermark_group"):
        WatermarkAlignmentParams.of(1, 1)  # type: ignore[arg-type]


def test_disabled_means_an_unbounded_drift() -> None:
    assert not WATERMARK_ALIGNMENT_DISABLED.is_enabled()
    assert not WatermarkAlignmentParams(LONG_MAX, "g", 10).is_enabled()
    assert WatermarkAlignmentParams(LONG_MAX - 1, "g", 10).is_enabled()


def test_max_allowed_watermark_saturates() -> None:
    assert max_allowed_watermark(42, 1000) == 1042
    assert max_allowed_watermark(LONG_MIN, 1000) == LONG_MIN + 1000
    assert max_allowed_watermark(LONG_MAX, 1000) == LONG_MAX
    assert max_allowed_watermark(LONG_MAX - 10, 11) == LONG_MAX


# -- the aggregator -----------------------------------------------------------------------------------------------


def test_aggregator_keeps_the_minimum_of_the_latest_watermarks() -> None:
    aggregator: WatermarkAggregator[int] = WatermarkAggregator()
    assert aggregator.aggregated_watermark == LONG_MIN
    steps = [
        (0, 10, 10),
        (1, 12, 10),
        (2, 13, 10),
        (1, 9, 9),
        (1, LONG_MAX, 10),  # an idle source
        (1, 8, 8),
        (1, 20, 10),
        (0, 23, 13),
        (2, 22, 20),
    ]
    for key, watermark, expected in steps:
        aggregator.aggregate(key, watermark)
        assert aggregator.aggregated_watermark == expected
    assert aggregator.keys() == {0, 1, 2}


def test_aggregator_reports_only_changes() -> None:
    aggregator: WatermarkAggregator[str] = WatermarkAggregator()
    assert aggregator.aggregate("a", 10) == 10
    assert aggregator.aggregate("b", 12) is None
    assert aggregator.aggregate("a", 11) == 11
    assert aggregator.get("b") == 12
    assert aggregator.get("c") is None


# -- the coordinator ---------------------------------------------------------------------------------------------


def test_alignment_announces_group_minimum_plus_drift() -> None:
    coordinator = WatermarkAlignmentCoordinator()
    coordinator.register_source("s1", GROUP1)
    report(coordinator, "s1", 0, 42)
    assert coordinator.announced("s1", 0) == 1042
    report(coordinator, "s1", 1, 44)
    assert coordinator.announced("s1", 0) == 1042
    assert coordinator.announced("s1", 1) == 1042
    report(coordinator, "s1", 0, 5000)
    assert coordinator.announced("s1", 0) == 1044
    assert coordinator.announced("s1", 1) == 1044


def test_alignment_with_idleness() -> None:
    coordinator = WatermarkAlignmentCoordinator()
    coordinator.register_source("s1", GROUP1)
    report(coordinator, "s1", 0, 42)
    report(coordinator, "s1", 1, 44)
    assert (coordinator.announced("s1", 0), coordinator.announced("s1", 1)) == (1042, 1042)
    report(coordinator, "s1", 0, LONG_MAX)  # subtask 0 idle
    assert (coordinator.announced("s1", 0), coordinator.announced("s1", 1)) == (1044, 1044)
    report(coordinator, "s1", 0, 42)  # active again
    assert (coordinator.announced("s1", 0), coordinator.announced("s1", 1)) == (1042, 1042)
    report(coordinator, "s1", 0, LONG_MAX)
    report(coordinator, "s1", 1, LONG_MAX)  # all idle: no limit
    assert (coordinator.announced("s1", 0), coordinator.announced("s1", 1)) == (LONG_MAX, LONG_MAX)
    report(coordinator, "s1", 0, 42)
    assert (coordinator.announced("s1", 0), coordinator.announced("s1", 1)) == (1042, 1042)
    report(coordinator, "s1", 1, 46)
    assert (coordinator.announced("s1", 0), coordinator.announced("s1", 1)) == (1042, 1042)


def test_alignment_groups_are_independent() -> None:
    coordinator = WatermarkAlignmentCoordinator()
    coordinator.register_source("s1", WatermarkAlignmentParams(1000, "group1", 1000))
    coordinator.register_source("s2", WatermarkAlignmentParams(1000, "group2", 1000))
    report(coordinator, "s1", 0, 42)
    assert coordinator.announced("s1", 0) == 1042
    report(coordinator, "s2", 1, 44)
    assert coordinator.announced("s1", 0) == 1042
    assert coordinator.announced("s2", 1) == 1044
    report(coordinator, "s1", 0, 5000)
    assert coordinator.announced("s1", 0) == 6000
    assert coordinator.announced("s2", 1) == 1044


def test_sources_of_one_group_align_with_each_other() -> None:
    coordinator = WatermarkAlignmentCoordinator()
    coordinator.register_source("kafka", WatermarkAlignmentParams(100, "g", 1000))
    coordinator.register_source("files", WatermarkAlignmentParams(300, "g", 1000))
    coordinator.report_watermark("kafka", 0, 5000)
    coordinator.report_watermark("kafka", 1, 4000)
    coordinator.report_watermark("files", 0, 1000)
    assert coordinator.source_watermark("kafka") == 4000
    assert coordinator.group_watermark("g") == 1000
    assert coordinator.announce("kafka") == {0: 1100, 1: 1100}  # each source adds its own drift
    assert coordinator.announce("files") == {0: 1300}
    assert coordinator.group_watermark("unknown") == LONG_MIN


def test_announcements_go_to_subtasks_that_reported() -> None:
    coordinator = WatermarkAlignmentCoordinator()
    coordinator.register_source("s", GROUP1)
    assert coordinator.announce("s") == {}
    assert coordinator.announced("s", 0) == LONG_MAX
    coordinator.report_watermark("s", 3, 10)
    assert coordinator.announce("s") == {3: 1010}


def test_announcements_every_update_interval() -> None:
    coordinator = WatermarkAlignmentCoordinator()
    coordinator.register_source("s", WatermarkAlignmentParams(10, "g", 100), now=0)
    coordinator.report_watermark("s", 0, 50)
    assert coordinator.next_announcement_time() == 100
    assert coordinator.advance_processing_time(99) == {}
    assert coordinator.advance_processing_time(100) == {"s": {0: 60}}
    assert coordinator.next_announcement_time() == 200
    assert coordinator.advance_processing_time(1000) == {"s": {0: 60}}
    assert coordinator.next_announcement_time() == 1100


def test_coordinator_argument_checks() -> None:
    coordinator = WatermarkAlignmentCoordinator()
    assert coordinator.next_announcement_time() is None
    with pytest.raises(ValueError, match="disabled"):
        coordinator.register_source("s", WATERMARK_ALIGNMENT_DISABLED)
    coordinator.register_source("s", GROUP1)
    with pytest.raises(ValueError, match="already registered"):
        coordinator.register_source("s", GROUP1)
    with pytest.raises(KeyError, match="register_source"):
        coordinator.report_watermark("other", 0, 1)
    with pytest.raises(TypeError):
        coordinator.register_source("t", {"drift": 1})  # type: ignore[arg-type]


# -- the source side ---------------------------------------------------------------------------------------------


def test_source_waits_while_its_watermark_exceeds_the_announced_maximum() -> None:
    source = SourceWatermarkAlignment(WatermarkAlignmentParams(100, "group1", 1))
    assert source.max_desired_watermark == LONG_MAX
    source.update_watermark(1000)
    assert source.reported_watermark() == 1000
    assert not source.is_waiting_for_alignment
    source.on_alignment_event(999)
    assert source.is_waiting_for_alignment
    source.on_alignment_event(1001)
    assert not source.is_waiting_for_alignment
    source.update_watermark(2000)  # reading on ran past the maximum
    assert source.is_waiting_for_alignment
    assert source.reported_watermark() == 2000


def test_equal_to_the_maximum_is_allowed() -> None:
    source = SourceWatermarkAlignment(GROUP1)
    source.update_watermark(1000)
    source.on_alignment_event(1000)
    assert not source.should_wait_for_alignment()


def test_source_reports_nothing_before_its_first_watermark_and_max_when_idle_or_finished() -> None:
    source = SourceWatermarkAlignment(GROUP1)
    assert source.reported_watermark() is None
    source.update_watermark(1)
    source.update_idle(True)
    assert source.reported_watermark() == LONG_MAX
    source.update_idle(False)
    assert source.reported_watermark() == 1  # back to the last emitted watermark
    source.end_of_input()
    assert source.reported_watermark() == LONG_MAX


def test_source_reports_every_update_interval() -> None:
    source = SourceWatermarkAlignment(WatermarkAlignmentParams(100, "g", 10))
    assert source.poll_report(100) is None  # not started
    source.start_reporting(0)
    assert source.poll_report(9) is None
    assert source.poll_report(10) is None  # due, but no watermark yet
    source.update_watermark(7)
    assert source.poll_report(19) is None
    assert source.poll_report(20) == 7
    assert source.poll_report(25) is None
    assert source.poll_report(30) == 7


def test_waiting_pauses_the_idleness_clock() -> None:
    base = ManualProcessingTimeService(0)
    clock = PausableClock(base)
    source = SourceWatermarkAlignment(GROUP1, activity_clock=clock)
    source.update_watermark(5000)
    source.on_alignment_event(1000)
    assert clock.is_paused
    base.set_current_time(500)
    assert clock.get_current_processing_time() == 0
    source.on_alignment_event(6000)
    assert not clock.is_paused
    source.on_alignment_event(7000)  # no second unpause
    base.set_current_time(600)
    assert clock.get_current_processing_time() == 100


def test_splits_ahead_of_the_maximum_are_paused_and_resumed() -> None:
    source = SourceWatermarkAlignment(GROUP1)
    assert source.update_split_watermark("a", 100) == []
    assert source.update_split_watermark("b", 300) == []
    assert source.on_alignment_event(200) == (["b"], [])
    assert source.paused_splits == frozenset({"b"})
    assert source.update_split_watermark("a", 250) == ["a"]  # paused as soon as it passes the maximum
    assert source.on_alignment_event(260) == ([], ["a"])
    assert source.on_alignment_event(1000) == ([], ["b"])
    assert source.paused_splits == frozenset()
    source.split_finished("a")
    assert source.on_alignment_event(0) == (["b"], [])


def test_a_fast_source_waits_for_a_slow_one() -> None:
    """Two sources of one group, one reading ten times faster: the fast one is held within the drift."""
    params = WatermarkAlignmentParams(100, "g", 10)
    coordinator = WatermarkAlignmentCoordinator()
    coordinator.register_source("fast", params)
    coordinator.register_source("slow", params)
    sides = {"fast": SourceWatermarkAlignment(params), "slow": SourceWatermarkAlignment(params)}
    speed = {"fast": 10, "slow": 1}
    watermark = {"fast": 0, "slow": 0}
    for side in sides.values():
        side.start_reporting(0)
    max_gap = 0
    for now in range(1, 2000):
        for name, side in sides.items():
            if not side.is_waiting_for_alignment:
                watermark[name] += speed[name]
                side.update_watermark(watermark[name])
            reported = side.poll_report(now)
            if reported is not None:
                coordinator.report_watermark(name, 0, reported)
        for name, announcement in coordinator.advance_processing_time(now).items():
            for allowed in announcement.values():
                sides[name].on_alignment_event(allowed)
        max_gap = max(max_gap, watermark["fast"] - watermark["slow"])
    assert watermark["slow"] == 1999  # the slow source is never held back
    # the fast one stops as soon as it passes (stale slow report + drift), so it leads by at most one read more
    assert max_gap <= params.max_allowed_watermark_drift + speed["fast"]
    assert watermark["fast"] > watermark["slow"] + params.max_allowed_watermark_drift - speed["fast"]
