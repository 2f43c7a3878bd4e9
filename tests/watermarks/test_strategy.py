"""WatermarkStrategy: factories, builders, immutability and validation (facts from WatermarkStrategyTest and
WatermarkStrategy's argument checks)."""

from __future__ import annotations

import dataclasses
import pickle
from datetime import timedelta
from typing import Any

import pytest

from panes.elements import Watermark
from panes.time import LONG_MAX
from panes.timers.clock import ManualProcessingTimeService
from panes.watermarks import (
    DEFAULT_UPDATE_INTERVAL,
    WATERMARK_ALIGNMENT_DISABLED,
    AscendingTimestampsWatermarks,
    BoundedOutOfOrdernessWatermarks,
    ColumnTimestampAssigner,
    NoWatermarksGenerator,
    RecordTimestampAssigner,
    TimestampAssigner,
    WatermarkGenerator,
    WatermarkGeneratorContext,
    WatermarkOutput,
    WatermarkStrategy,
    WatermarkStrategyKind,
    WatermarksWithIdleness,
)
from tests.watermarks._support import RecordingOutput


class Punctuated(WatermarkGenerator):
    def __init__(self) -> None:
        self.seen = 0

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        self.seen += 1
        output.emit_watermark(Watermark(event_timestamp))

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        pass


class FortyTwo(TimestampAssigner):
    def extract_timestamp(self, element: Any, record_timestamp: int) -> int:
        return 42


# -- factories ------------------------------------------------------------------------------------------------


def test_default_timestamp_assigner_is_the_record_timestamp() -> None:
    strategy = WatermarkStrategy.for_monotonous_timestamps()
    assert isinstance(strategy.create_timestamp_assigner(), RecordTimestampAssigner)
    assert strategy.timestamp_assigner is None


def test_bounded_out_of_orderness_factory() -> None:
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(timedelta(seconds=5))
    assert strategy.kind is WatermarkStrategyKind.BOUNDED_OUT_OF_ORDERNESS
    assert strategy.max_out_of_orderness == 5000
    generator = strategy.create_watermark_generator()
    assert isinstance(generator, BoundedOutOfOrdernessWatermarks)
    output = RecordingOutput()
    generator.on_event(None, 10_000, output)
    generator.on_periodic_emit(output)
    assert output.watermarks == [4999]


def test_bounded_out_of_orderness_rejects_a_negative_bound() -> None:
    with pytest.raises(ValueError, match="cannot be negative"):
        WatermarkStrategy.for_bounded_out_of_orderness(-1)


def test_monotonous_and_no_watermarks_factories() -> None:
    monotonous = WatermarkStrategy.for_monotonous_timestamps()
    assert monotonous.kind is WatermarkStrategyKind.MONOTONOUS
    assert monotonous.max_out_of_orderness == 0
    assert isinstance(monotonous.create_watermark_generator(), AscendingTimestampsWatermarks)
    none = WatermarkStrategy.no_watermarks()
    assert none.kind is WatermarkStrategyKind.NO_WATERMARKS
    assert none.max_out_of_orderness is None
    assert isinstance(none.create_watermark_generator(), NoWatermarksGenerator)


def test_each_operator_gets_a_fresh_generator() -> None:
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(10)
    assert strategy.create_watermark_generator() is not strategy.create_watermark_generator()


def test_for_generator_accepts_a_supplier_a_class_or_a_prototype() -> None:
    contexts: list[WatermarkGeneratorContext] = []

    def supplier(ctx: WatermarkGeneratorContext) -> WatermarkGenerator:
        contexts.append(ctx)
        return Punctuated()

    clock = ManualProcessingTimeService()
    from_supplier = WatermarkStrategy.for_generator(supplier)
    assert from_supplier.kind is WatermarkStrategyKind.GENERATOR
    assert isinstance(from_supplier.create_watermark_generator(WatermarkGeneratorContext(clock)), Punctuated)
    assert contexts[0].input_activity_clock is clock

    assert isinstance(WatermarkStrategy.for_generator(Punctuated).create_watermark_generator(), Punctuated)

    prototype = Punctuated()
    prototype.seen = 3
    made = WatermarkStrategy.for_generator(prototype).create_watermark_generator()
    assert isinstance(made, Punctuated)
    assert made is not prototype
    assert made.seen == 3


def test_for_generator_rejects_other_values() -> None:
    with pytest.raises(TypeError, match="for_generator"):
        WatermarkStrategy.for_generator(42)
    with pytest.raises(TypeError, match="not a WatermarkGenerator subclass"):
        WatermarkStrategy.for_generator(int)


def test_a_supplier_returning_a_non_generator_fails_clearly() -> None:
    strategy = WatermarkStrategy.for_generator(lambda ctx: "oops")
    with pytest.raises(TypeError, match="not a WatermarkGenerator"):
        strategy.create_watermark_generator()


# -- timestamp assigners --------------------------------------------------------------------------------------


def test_lambda_timestamp_assigner() -> None:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda event, ts: 42)
    assert strategy.create_timestamp_assigner().extract_timestamp(None, 13) == 42


def test_class_timestamp_assigner_is_copied_per_operator() -> None:
    assigner = FortyTwo()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(assigner)
    created = strategy.create_timestamp_assigner()
    assert created.extract_timestamp(None, 13) == 42
    assert created is not assigner


def test_column_timestamp_assigner() -> None:
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(100).with_timestamp_assigner("event_time")
    assert strategy.timestamp_column == "event_time"
    assert strategy.timestamp_assigner == ColumnTimestampAssigner("event_time")
    assert strategy.create_timestamp_assigner().extract_timestamp({"event_time": 5}, 0) == 5
    assert WatermarkStrategy.no_watermarks().timestamp_column is None


def test_timestamp_assigner_must_not_be_none() -> None:
    with pytest.raises(TypeError, match="None"):
        WatermarkStrategy.no_watermarks().with_timestamp_assigner(None)  # type: ignore[arg-type]


def test_last_timestamp_assigner_wins() -> None:
    strategy = WatermarkStrategy.no_watermarks().with_timestamp_assigner("a").with_timestamp_assigner("b")
    assert strategy.timestamp_column == "b"


# -- idleness -------------------------------------------------------------------------------------------------


def test_with_idleness_wraps_the_generator_and_keeps_the_assigner() -> None:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_idleness(timedelta(days=7))
    assert isinstance(strategy.create_timestamp_assigner(), RecordTimestampAssigner)
    generator = strategy.create_watermark_generator()
    assert isinstance(generator, WatermarksWithIdleness)
    assert isinstance(generator.generator, AscendingTimestampsWatermarks)
    assert generator.idle_timeout == 7 * 24 * 3600 * 1000
    assert strategy.idle_timeout == 7 * 24 * 3600 * 1000


def test_with_idleness_uses_the_context_clock() -> None:
    clock = ManualProcessingTimeService(1000)
    generator = (
        WatermarkStrategy.no_watermarks().with_idleness(10).create_watermark_generator(WatermarkGeneratorContext(clock))
    )
    output = RecordingOutput()
    generator.on_periodic_emit(output)
    clock.set_current_time(1011)
    generator.on_periodic_emit(output)
    assert output.idle


def test_with_idleness_twice_nests_like_flink() -> None:
    strategy = WatermarkStrategy.no_watermarks().with_idleness(10).with_idleness(20)
    assert strategy.idle_timeouts == (10, 20)
    assert strategy.idle_timeout == 20
    outer = strategy.create_watermark_generator()
    assert isinstance(outer, WatermarksWithIdleness)
    assert outer.idle_timeout == 20
    assert isinstance(outer.generator, WatermarksWithIdleness)
    assert outer.generator.idle_timeout == 10


@pytest.mark.parametrize("timeout", [0, -1, timedelta(0)])
def test_idle_timeout_must_be_greater_than_zero(timeout: int | timedelta) -> None:
    with pytest.raises(ValueError, match="idle_timeout must be greater than zero"):
        WatermarkStrategy.no_watermarks().with_idleness(timeout)


# -- alignment ------------------------------------------------------------------------------------------------


def test_with_watermark_alignment_survives_other_builders() -> None:
    strategy = (
        WatermarkStrategy.for_monotonous_timestamps()
        .with_watermark_alignment("group-1", timedelta(milliseconds=200))
        .with_idleness(200)
        .with_timestamp_assigner("ts")
    )
    params = strategy.get_alignment_parameters()
    assert params.watermark_group == "group-1"
    assert params.max_allowed_watermark_drift == 200
    assert params.update_interval == DEFAULT_UPDATE_INTERVAL == 1000
    assert params.is_enabled()
    assert isinstance(strategy.create_watermark_generator(), WatermarksWithIdleness)
    assert strategy.timestamp_column == "ts"


def test_alignment_is_disabled_by_default() -> None:
    params = WatermarkStrategy.no_watermarks().get_alignment_parameters()
    assert params == WATERMARK_ALIGNMENT_DISABLED
    assert not params.is_enabled()
    assert (params.max_allowed_watermark_drift, params.watermark_group, params.update_interval) == (LONG_MAX, "", 0)


def test_alignment_update_interval_is_configurable() -> None:
    strategy = WatermarkStrategy.no_watermarks().with_watermark_alignment("g", 0, timedelta(milliseconds=5))
    assert strategy.alignment.update_interval == 5
    assert strategy.alignment.max_allowed_watermark_drift == 0


def test_alignment_arguments_are_validated() -> None:
    base = WatermarkStrategy.no_watermarks()
    with pytest.raises(ValueError, match="max_allowed_watermark_drift must be greater than or equal to zero"):
        base.with_watermark_alignment("g", -1)
    with pytest.raises(ValueError, match="update_interval must be positive"):
        base.with_watermark_alignment("g", 10, 0)
    with pytest.raises(ValueError, match="update_interval must be positive"):
        base.with_watermark_alignment("g", 10, -5)
    with pytest.raises(TypeError, match="watermark_group"):
        base.with_watermark_alignment(None, 10)  # type: ignore[arg-type]


# -- immutability and construction-time validation ------------------------------------------------------------


def test_builders_return_new_strategies_and_leave_the_original_untouched() -> None:
    base = WatermarkStrategy.for_bounded_out_of_orderness(10)
    derived = base.with_idleness(5).with_timestamp_assigner("ts").with_watermark_alignment("g", 1)
    assert derived is not base
    assert base.idle_timeouts == ()
    assert base.timestamp_assigner is None
    assert base.alignment == WATERMARK_ALIGNMENT_DISABLED
    assert derived.max_out_of_orderness == 10
    with pytest.raises(dataclasses.FrozenInstanceError):
        base.idle_timeouts = (1,)  # type: ignore[misc]


def test_direct_construction_is_validated() -> None:
    supplier = WatermarkStrategy.no_watermarks().generator_supplier
    with pytest.raises(TypeError, match="callable"):
        WatermarkStrategy(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_out_of_orderness"):
        WatermarkStrategy(supplier, max_out_of_orderness=-1)
    with pytest.raises(ValueError, match="greater than zero"):
        WatermarkStrategy(supplier, idle_timeouts=(0,))
    with pytest.raises(TypeError, match="TimestampAssigner"):
        WatermarkStrategy(supplier, timestamp_assigner="ts")  # type: ignore[arg-type]


def test_built_in_strategies_pickle() -> None:
    strategy = (
        WatermarkStrategy.for_bounded_out_of_orderness(100)
        .with_timestamp_assigner("ts")
        .with_idleness(1000)
        .with_watermark_alignment("g", 50)
    )
    restored = pickle.loads(pickle.dumps(strategy))
    assert restored == strategy
    assert isinstance(restored.create_watermark_generator(), WatermarksWithIdleness)
