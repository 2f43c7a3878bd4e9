"""Watermarks per split (Flink's ``WatermarkOutputMultiplexer`` and the ``SourceOperator``'s split outputs): the
combined watermark is the minimum over the active splits, a split that has not emitted holds it at ``LONG_MIN``, an
idle split stops holding it back (all idle: the output is idle), a record makes its split active again, a released
split counts no more, and the state survives a snapshot."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from panes.elements import Watermark, WatermarkStatus
from panes.time import LONG_MIN
from panes.timers.clock import ManualProcessingTimeService
from panes.watermarks import (
    SplitWatermarks,
    WatermarkGeneratorContext,
    WatermarkMultiplexer,
    WatermarkStrategy,
)
from tests.watermarks._support import RecordingOutput


def test_no_split_no_watermark() -> None:
    out = RecordingOutput()
    multiplexer = WatermarkMultiplexer(out)
    multiplexer.on_periodic_emit()
    assert out.events == []


def test_a_split_without_a_watermark_holds_the_combination_at_long_min() -> None:
    out = RecordingOutput()
    multiplexer = WatermarkMultiplexer(out)
    multiplexer.register("a")
    multiplexer.register("b")
    multiplexer.immediate("a").emit_watermark(Watermark(10))
    assert out.events == []  # b is still at LONG_MIN
    multiplexer.immediate("b").emit_watermark(Watermark(5))
    assert out.watermarks == [5]
    multiplexer.immediate("a").emit_watermark(Watermark(20))
    assert out.watermarks == [5]
    multiplexer.immediate("b").emit_watermark(Watermark(30))
    assert out.watermarks == [5, 20]
    multiplexer.immediate("b").emit_watermark(Watermark(3))  # a split's watermark never goes back
    assert multiplexer.partial("b").watermark == 30


def test_deferred_updates_wait_for_the_periodic_emit() -> None:
    out = RecordingOutput()
    multiplexer = WatermarkMultiplexer(out)
    for split in ("a", "b"):
        multiplexer.register(split)
    multiplexer.deferred("a").emit_watermark(Watermark(7))
    multiplexer.deferred("b").emit_watermark(Watermark(9))
    assert out.events == []
    multiplexer.on_periodic_emit()
    assert out.watermarks == [7]


def test_an_idle_split_stops_holding_back_and_all_idle_is_idle() -> None:
    out = RecordingOutput()
    multiplexer = WatermarkMultiplexer(out)
    for split in ("a", "b"):
        multiplexer.register(split)
    multiplexer.immediate("a").emit_watermark(Watermark(100))
    multiplexer.immediate("b").mark_idle()
    assert out.watermarks == [100]
    multiplexer.immediate("a").mark_idle()
    assert out.events[-1] is WatermarkStatus.IDLE and multiplexer.idle
    # a watermark makes its split active again; below the combined one it emits nothing
    multiplexer.immediate("b").emit_watermark(Watermark(50))
    assert not multiplexer.partial("b").idle and out.watermarks == [100]
    multiplexer.immediate("b").emit_watermark(Watermark(150))
    assert out.watermarks == [100, 150]  # a is still idle: b alone


def test_a_released_split_counts_no_more() -> None:
    out = RecordingOutput()
    multiplexer = WatermarkMultiplexer(out)
    for split in ("a", "b"):
        multiplexer.register(split)
    multiplexer.immediate("a").emit_watermark(Watermark(40))
    assert out.events == []
    assert multiplexer.unregister("b")
    multiplexer.on_periodic_emit()
    assert out.watermarks == [40]


def _splits(strategy: WatermarkStrategy, clock: ManualProcessingTimeService) -> tuple[SplitWatermarks, RecordingOutput]:
    out = RecordingOutput()
    splits = SplitWatermarks(strategy, WatermarkGeneratorContext(clock), out)
    splits.add_all(["a", "b"])
    return splits, out


def test_a_generator_per_split_with_idleness_on_the_clock() -> None:
    clock = ManualProcessingTimeService()
    splits, out = _splits(WatermarkStrategy.for_bounded_out_of_orderness(10).with_idleness(1_000), clock)
    splits.on_event("a", None, 500)
    splits.on_periodic_emit()
    assert out.watermarks == []  # b has no record: LONG_MIN
    splits.on_event("b", None, 200)
    splits.on_periodic_emit()
    assert out.watermarks == [189]
    # b gets nothing more; a goes on: b is idle once the countdown (started at its first quiet check) passed 1 s
    for now in range(200, 1_600, 200):
        clock.set_current_time(now)
        splits.on_event("a", None, 500 + now)
        splits.on_periodic_emit()
    assert out.watermarks == [189, 500 + 1_400 - 11]
    # a record of b makes it active again, and it holds the watermark from there
    splits.on_event("b", None, 2_500)
    splits.on_event("a", None, 3_000)
    splits.on_periodic_emit()
    assert out.watermarks[-1] == 2_500 - 11


def test_split_state_survives_a_snapshot() -> None:
    clock = ManualProcessingTimeService()
    splits, out = _splits(WatermarkStrategy.for_bounded_out_of_orderness(0), clock)
    splits.on_event("a", None, 50)
    splits.on_event("b", None, 70)
    splits.release("b")
    splits.on_periodic_emit()
    state = splits.snapshot_state()
    restored, again = _splits(WatermarkStrategy.for_bounded_out_of_orderness(0), clock)
    restored.restore_state(state)
    assert restored.splits() == ["a"]  # b was released before the snapshot
    restored.on_event("a", None, 80)
    restored.on_periodic_emit()
    assert out.watermarks == [49] and again.watermarks == [79]


events = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 10_000), st.booleans()), max_size=60)


@settings(max_examples=200, deadline=None)
@given(events, st.integers(0, 500))
def test_the_watermark_is_the_minimum_over_the_splits_and_never_passes_a_split(
    steps: list[tuple[str, int, bool]], bound: int
) -> None:
    """After each periodic emit the watermark is the largest minimum so far over every split of its own
    ``max - bound - 1`` (``LONG_MIN`` for a split without a record); so a split whose timestamps ascend never has a
    record behind the watermark, however the splits interleave."""
    clock = ManualProcessingTimeService()
    out = RecordingOutput()
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(bound)
    splits = SplitWatermarks(strategy, WatermarkGeneratorContext(clock), out)
    splits.add_all(["a", "b", "c"])
    highest: dict[str, int] = {}
    last_of: dict[str, int] = {}
    expected = LONG_MIN
    for split, gap, emit in steps:
        timestamp = last_of.get(split, 0) + gap  # each split ascends
        last_of[split] = timestamp
        current = out.last_watermark
        assert current is None or timestamp > current  # never late
        splits.on_event(split, None, timestamp)
        highest[split] = max(highest.get(split, timestamp), timestamp)
        if emit:
            splits.on_periodic_emit()
            lowest = min(highest[s] - bound - 1 if s in highest else LONG_MIN for s in ("a", "b", "c"))
            expected = max(expected, lowest)
            assert (out.last_watermark if out.watermarks else LONG_MIN) == expected
    assert out.watermarks == sorted(set(out.watermarks))
