"""TimestampsAndWatermarksOperator (facts from Flink's TimestampsAndWatermarksOperatorTest and the operator's
source: periodic emission on a processing-time timer, upstream watermarks and statuses ignored except the
final LONG_MAX, a last periodic emit at finish, no checkpointed state)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from panes.elements import MAX_WATERMARK, StreamRecord, Watermark, WatermarkStatus
from panes.errors import BadRecordError
from panes.testing import OneInputOperatorHarness
from panes.time import LONG_MAX, LONG_MIN
from panes.watermarks import (
    DEFAULT_AUTO_WATERMARK_INTERVAL,
    TimestampAssigner,
    TimestampsAndWatermarksOperator,
    WatermarkGenerator,
    WatermarkOutput,
    WatermarkStrategy,
)

INTERVAL = 50


class PeriodicGenerator(WatermarkGenerator):
    """Emits ``last timestamp - 1`` periodically; does not enforce monotonicity itself."""

    def __init__(self) -> None:
        self.current = LONG_MIN

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        self.current = event_timestamp

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        output.emit_watermark(Watermark(LONG_MIN if self.current == LONG_MIN else self.current - 1))


class PunctuatedGenerator(WatermarkGenerator):
    """Emits the event's timestamp for events ``(True, ts)``; does not enforce monotonicity itself."""

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        if event[0]:
            output.emit_watermark(Watermark(event[1]))

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        pass


def periodic_strategy() -> WatermarkStrategy:
    return WatermarkStrategy.for_generator(PeriodicGenerator).with_timestamp_assigner(lambda e, t: e)


def punctuated_strategy() -> WatermarkStrategy:
    return WatermarkStrategy.for_generator(PunctuatedGenerator).with_timestamp_assigner(lambda e, t: e[1])


def harness_for(
    strategy: WatermarkStrategy, *, batch: bool = False, interval: int = INTERVAL
) -> OneInputOperatorHarness:
    operator = TimestampsAndWatermarksOperator(
        strategy, emit_progressive_watermarks=not batch, auto_watermark_interval=interval
    )
    harness = OneInputOperatorHarness(operator)
    harness.open()
    return harness


def drain(harness: OneInputOperatorHarness) -> list[Any]:
    out = harness.get_output()
    harness.clear_output()
    return out


def operator_of(harness: OneInputOperatorHarness) -> TimestampsAndWatermarksOperator:
    operator = harness.operator
    assert isinstance(operator, TimestampsAndWatermarksOperator)
    return operator


# -- upstream watermarks and statuses ---------------------------------------------------------------------------


def test_input_watermarks_are_not_forwarded() -> None:
    harness = harness_for(periodic_strategy())
    harness.process_watermark(42)
    harness.set_processing_time(INTERVAL)
    assert harness.get_output() == []


def test_input_statuses_are_not_forwarded() -> None:
    harness = harness_for(periodic_strategy())
    operator_of(harness).process_watermark_status(WatermarkStatus.IDLE)
    harness.set_processing_time(INTERVAL)
    assert harness.get_output() == []


def test_long_max_input_watermark_is_forwarded() -> None:
    harness = harness_for(periodic_strategy())
    harness.process_watermark(LONG_MAX)
    assert harness.get_output() == [MAX_WATERMARK]


# -- periodic watermarks ------------------------------------------------------------------------------------


def test_periodic_watermarks_emit_on_periodic_emit() -> None:
    harness = harness_for(periodic_strategy())
    harness.process_element(2, 1)
    harness.set_processing_time(INTERVAL)
    assert drain(harness) == [StreamRecord(2, 2), Watermark(1)]
    harness.process_element(4, 1)
    harness.set_processing_time(INTERVAL * 2)
    assert drain(harness) == [StreamRecord(4, 4), Watermark(3)]


def test_periodic_watermarks_in_batch_mode_are_not_emitted() -> None:
    harness = harness_for(periodic_strategy(), batch=True)
    harness.process_element(2, 1)
    harness.set_processing_time(INTERVAL)
    assert drain(harness) == [StreamRecord(2, 2)]
    harness.process_element(4, 1)
    harness.set_processing_time(INTERVAL * 2)
    assert drain(harness) == [StreamRecord(4, 4)]
    assert operator_of(harness).next_processing_time_timer() is None


def test_periodic_watermarks_only_emit_on_periodic_emit() -> None:
    harness = harness_for(periodic_strategy())
    harness.process_element(2, 1)
    assert drain(harness) == [StreamRecord(2, 2)]


def test_periodic_watermarks_do_not_regress() -> None:
    harness = harness_for(periodic_strategy())
    harness.process_element(4, 1)
    harness.set_processing_time(INTERVAL)
    assert drain(harness) == [StreamRecord(4, 4), Watermark(3)]
    harness.process_element(2, 1)
    harness.set_processing_time(INTERVAL * 2)  # the generator offers 1 < 3: dropped
    assert drain(harness) == [StreamRecord(2, 2)]


def test_periodic_emission_follows_flinks_timer() -> None:
    harness = harness_for(WatermarkStrategy.for_monotonous_timestamps(), interval=200)
    operator = operator_of(harness)
    assert operator.next_processing_time_timer() == 200
    harness.process_element("a", 1000)
    harness.set_processing_time(199)
    assert drain(harness) == [StreamRecord("a", 1000)]
    harness.set_processing_time(200)
    assert drain(harness) == [Watermark(999)]
    assert operator.next_processing_time_timer() == 400
    harness.process_element("b", 5000)
    harness.set_processing_time(1000)  # a jump over several intervals gives one emit ...
    assert drain(harness) == [StreamRecord("b", 5000), Watermark(4999)]
    assert operator.next_processing_time_timer() == 1200  # ... and the next is an interval after now


def test_zero_interval_disables_periodic_emission() -> None:
    harness = harness_for(WatermarkStrategy.for_monotonous_timestamps(), interval=0)
    harness.process_element("a", 1000)
    harness.set_processing_time(10_000)
    assert drain(harness) == [StreamRecord("a", 1000)]
    assert operator_of(harness).next_processing_time_timer() is None


def test_default_interval_is_flinks_200_ms() -> None:
    assert DEFAULT_AUTO_WATERMARK_INTERVAL == 200
    assert TimestampsAndWatermarksOperator(WatermarkStrategy.no_watermarks()).auto_watermark_interval == 200


def test_interval_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        TimestampsAndWatermarksOperator(WatermarkStrategy.no_watermarks(), auto_watermark_interval=-1)


def test_operator_needs_a_strategy() -> None:
    with pytest.raises(TypeError, match="WatermarkStrategy"):
        TimestampsAndWatermarksOperator("bounded")  # type: ignore[arg-type]


# -- punctuated watermarks -------------------------------------------------------------------------------------


def test_punctuated_watermarks_emit_immediately() -> None:
    harness = harness_for(punctuated_strategy())
    harness.process_element((True, 2), 1)
    assert drain(harness) == [StreamRecord((True, 2), 2), Watermark(2)]
    harness.process_element((True, 4), 1)
    assert drain(harness) == [StreamRecord((True, 4), 4), Watermark(4)]


def test_punctuated_watermarks_in_batch_mode_are_not_emitted() -> None:
    harness = harness_for(punctuated_strategy(), batch=True)
    harness.process_element((True, 2), 1)
    assert drain(harness) == [StreamRecord((True, 2), 2)]
    harness.process_element((True, 4), 1)
    assert drain(harness) == [StreamRecord((True, 4), 4)]


def test_punctuated_watermarks_do_not_regress() -> None:
    harness = harness_for(punctuated_strategy())
    harness.process_element((True, 4), 1)
    assert drain(harness) == [StreamRecord((True, 4), 4), Watermark(4)]
    harness.process_element((True, 2), 1)
    assert drain(harness) == [StreamRecord((True, 2), 2)]


# -- timestamps -------------------------------------------------------------------------------------------------


def test_negative_and_extreme_timestamps_are_forwarded() -> None:
    values = [LONG_MIN, -1, 0, 1, 2, 3, LONG_MAX]
    strategy = WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda e, t: e[1])
    harness = harness_for(strategy)
    for value in values:
        harness.process_element((False, value))
    assert [r.timestamp for r in harness.extract_output_records()] == values


def test_record_without_timestamp_gets_long_min_like_flink() -> None:
    seen: list[int] = []

    class Spy(WatermarkGenerator):
        def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
            seen.append(event_timestamp)

        def on_periodic_emit(self, output: WatermarkOutput) -> None:
            pass

    harness = harness_for(WatermarkStrategy.for_generator(Spy))
    harness.process_element("no-ts")
    harness.process_element("with-ts", 7)
    assert harness.extract_output_records() == [StreamRecord("no-ts", LONG_MIN), StreamRecord("with-ts", 7)]
    assert seen == [LONG_MIN, 7]


def test_assigner_sees_the_record_timestamp() -> None:
    strategy = WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda e, t: t + e)
    harness = harness_for(strategy)
    harness.process_element(5, 100)
    assert harness.extract_output_records() == [StreamRecord(5, 105)]


def test_column_assigner_with_rows() -> None:
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(100).with_timestamp_assigner("ts")
    harness = harness_for(strategy, interval=200)
    harness.process_element({"ts": 1_000, "v": "a"})
    harness.process_element({"ts": 1_500, "v": "b"})
    harness.set_processing_time(200)
    assert drain(harness) == [
        StreamRecord({"ts": 1_000, "v": "a"}, 1_000),
        StreamRecord({"ts": 1_500, "v": "b"}, 1_500),
        Watermark(1_399),
    ]


def test_assigner_errors_fail_as_bad_records_with_the_cause() -> None:
    harness = harness_for(WatermarkStrategy.no_watermarks().with_timestamp_assigner("ts"))
    with pytest.raises(BadRecordError, match="'ts'") as failure:
        harness.process_element({"time": 1})
    assert isinstance(failure.value.__cause__, KeyError)


# -- end of input ----------------------------------------------------------------------------------------------


def test_finish_asks_for_a_last_periodic_watermark() -> None:
    harness = harness_for(WatermarkStrategy.for_bounded_out_of_orderness(10), interval=200)
    harness.process_element("a", 1000)
    operator_of(harness).finish()
    assert drain(harness) == [StreamRecord("a", 1000), Watermark(989)]


def test_end_of_input_forwards_max_then_finish_adds_nothing() -> None:
    harness = harness_for(WatermarkStrategy.for_bounded_out_of_orderness(10), interval=200)
    harness.process_element("a", 1000)
    harness.process_watermark(MAX_WATERMARK)
    operator_of(harness).finish()
    assert drain(harness) == [StreamRecord("a", 1000), MAX_WATERMARK]
    assert operator_of(harness).emitted_watermark == LONG_MAX


def test_use_before_open_is_an_error() -> None:
    operator = TimestampsAndWatermarksOperator(WatermarkStrategy.no_watermarks())
    with pytest.raises(RuntimeError, match="before open"):
        operator.process_element(StreamRecord(1, 1))


# -- idleness -------------------------------------------------------------------------------------------------


def test_idleness_marks_idle_once_then_active_before_the_next_watermark() -> None:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_idleness(500)
    harness = harness_for(strategy, interval=200)
    harness.process_element("a", 1000)
    for now in (200, 400, 600, 800, 1000):
        harness.set_processing_time(now)
    # 200: activity -> 999; 400: quiet, countdown starts; 600, 800: 200/400 <= 500; 1000: 600 > 500 -> idle
    assert drain(harness) == [StreamRecord("a", 1000), Watermark(999), WatermarkStatus.IDLE]
    assert operator_of(harness).is_idle
    harness.set_processing_time(1200)
    assert drain(harness) == []
    harness.process_element("b", 2000)
    harness.set_processing_time(1400)
    assert drain(harness) == [StreamRecord("b", 2000), WatermarkStatus.ACTIVE, Watermark(1999)]
    assert not operator_of(harness).is_idle


def test_idleness_is_not_detected_while_the_input_is_blocked() -> None:
    idle_timeout = 100
    strategy = WatermarkStrategy.for_generator(PunctuatedGenerator).with_idleness(idle_timeout)
    harness = harness_for(strategy, interval=DEFAULT_AUTO_WATERMARK_INTERVAL)
    clock = operator_of(harness).input_activity_clock
    assert clock is not None
    clock.pause()  # the runner reports back-pressure
    for step in range(1, 21):
        harness.set_processing_time(step * idle_timeout)
    assert harness.get_output() == []
    clock.unpause()
    for step in range(21, 31):
        harness.set_processing_time(step * idle_timeout)
    assert harness.get_output() == [WatermarkStatus.IDLE]


def test_alignment_settings_do_not_affect_the_operator() -> None:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment("g", 0)
    harness = harness_for(strategy, interval=10)
    harness.process_element("a", 1000)
    harness.set_processing_time(10)
    assert drain(harness) == [StreamRecord("a", 1000), Watermark(999)]


# -- state ------------------------------------------------------------------------------------------------------


def test_generator_progress_survives_a_restore() -> None:
    harness = harness_for(WatermarkStrategy.for_monotonous_timestamps(), interval=10)
    harness.process_element("a", 1000)
    harness.set_processing_time(10)
    snapshot = harness.snapshot()
    restored = OneInputOperatorHarness(
        TimestampsAndWatermarksOperator(WatermarkStrategy.for_monotonous_timestamps(), auto_watermark_interval=10),
        processing_time=10,
    )
    restored.restore(snapshot)
    restored.process_element("b", 500)
    restored.set_processing_time(20)
    # Flink restarts generators fresh (a lower watermark, 499, would appear and be dropped downstream);
    # panes keeps the generator's progress, so the restored operator continues exactly: no new watermark
    assert restored.get_output() == [StreamRecord("b", 500)]
    restored.process_element("c", 2000)
    restored.set_processing_time(30)
    assert restored.get_output()[-1] == Watermark(1999)


def test_any_assigner_must_return_a_timestamp() -> None:
    class Sloppy(TimestampAssigner):
        def extract_timestamp(self, element: Any, record_timestamp: int) -> Any:
            return element

    harness = harness_for(WatermarkStrategy.no_watermarks().with_timestamp_assigner(Sloppy()))
    harness.process_element(datetime(1970, 1, 1, 0, 0, 2, tzinfo=timezone.utc))
    assert harness.extract_output_records()[0].timestamp == 2000
    with pytest.raises(BadRecordError, match="Sloppy") as failure:
        harness.process_element(None)
    assert isinstance(failure.value.__cause__, TypeError)
    with pytest.raises(BadRecordError, match="long range"):
        harness.process_element(2**63)
