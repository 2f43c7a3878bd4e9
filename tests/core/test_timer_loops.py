"""A timer pass that would never end stops with ``TimerLoopError`` (``panes.timers.loops``), and only then.

Flink fires, in the same pass, every timer registered while firing that is already due; a callback that keeps
registering such a timer hangs the job (FLINK-35069). panes counts, per firing timer, registrations at or
before its own time, and fails the pass after ``NON_FORWARD_LIMIT`` of them, naming the trigger or function.
"""

from __future__ import annotations

from typing import Any

import pytest

from panes.functions.stream import KeyedProcessFunction
from panes.operators.keyed import KeyedProcessOperator
from panes.testing import OneInputOperatorHarness, WindowOperatorHarness
from panes.timers import NON_FORWARD_LIMIT, TimerLoopError
from panes.windowing import (
    ContinuousEventTimeTrigger,
    Trigger,
    TriggerContext,
    TriggerResult,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from tests.core.support import first, records


class Rearming(Trigger[Any, Any]):
    """A user trigger that, each time its timer fires, registers a timer ``step`` ms before it, ``times`` times
    (``None``: for ever); ``step`` 0 registers the very timer that is firing."""

    def __init__(self, step: int, times: int | None = None, processing: bool = False) -> None:
        self.step = step
        self.times = times
        self.processing = processing
        self.fired = 0

    def _register(self, ctx: TriggerContext, time: int) -> None:
        if self.processing:
            ctx.register_processing_time_timer(time)
        else:
            ctx.register_event_time_timer(time)

    def on_element(self, element: Any, timestamp: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        self._register(ctx, window.max_timestamp())
        return TriggerResult.CONTINUE

    def _on_timer(self, time: int, ctx: TriggerContext) -> TriggerResult:
        self.fired += 1
        if self.times is None or self.fired <= self.times:
            self._register(ctx, time - self.step)
        return TriggerResult.FIRE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE if self.processing else self._on_timer(time, ctx)

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return self._on_timer(time, ctx) if self.processing else TriggerResult.CONTINUE

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        return None

    def __repr__(self) -> str:
        return f"Rearming(step={self.step})"


def _event_time_harness(trigger: Trigger[Any, Any]) -> WindowOperatorHarness:
    return WindowOperatorHarness(
        TumblingEventTimeWindows.of(10), reduce=lambda a, b: (a[0], a[1] + b[1]), key_selector=first, trigger=trigger
    )


def test_a_trigger_that_re_registers_the_firing_timer_for_ever_fails_the_pass_naming_the_trigger() -> None:
    trigger = Rearming(step=0)
    h = _event_time_harness(trigger)
    h.process_element(("a", 1), 3)
    with pytest.raises(TimerLoopError, match=r"the trigger Rearming\(step=0\) of .*timer at 9 \(key 'a'"):
        h.process_watermark(20)
    # it was called as Flink would have called it, until the limit: once, then once per re-registration; only
    # the first call emitted, as the cleanup at the same time then dropped the window's contents
    assert trigger.fired == NON_FORWARD_LIMIT + 1
    assert records(h) == [(("a", 1), 9)]


def test_a_trigger_that_keeps_going_back_in_time_fails_too() -> None:
    # every firing registers a timer 1 ms earlier: always a new timer, always already due
    trigger = Rearming(step=1)
    h = _event_time_harness(trigger)
    h.process_element(("a", 1), 3)
    with pytest.raises(TimerLoopError, match="already due"):
        h.process_watermark(20)
    assert trigger.fired == NON_FORWARD_LIMIT + 1


def test_processing_time_timers_are_guarded_alike() -> None:
    trigger = Rearming(step=0, processing=True)
    h = WindowOperatorHarness(TumblingProcessingTimeWindows.of(10), reduce=max, key_selector=first, trigger=trigger)
    h.process_element(("a", 1))
    with pytest.raises(TimerLoopError, match="processing-time timers"):
        h.set_processing_time(10)


def test_a_few_re_registrations_run_as_in_flink() -> None:
    # Flink fires the timer again each time it is re-registered; a callback that stops doing so is no loop
    trigger = Rearming(step=0, times=NON_FORWARD_LIMIT)
    h = _event_time_harness(trigger)
    h.process_element(("a", 1), 3)
    h.process_watermark(20)
    assert trigger.fired == NON_FORWARD_LIMIT + 1
    # the next pass starts counting afresh
    h.process_element(("a", 1), 23)
    h.process_watermark(30)
    assert trigger.fired == NON_FORWARD_LIMIT + 2


def test_a_long_chain_that_moves_forward_is_never_stopped() -> None:
    # a continuous trigger catching up over a large watermark jump: 999 firings in one pass (fire times 1, 2,
    # ..., 999), each registering the next fire time after the current one
    h = WindowOperatorHarness(
        TumblingEventTimeWindows.of(1000),
        reduce=lambda a, b: (a[0], a[1] + b[1]),
        key_selector=first,
        trigger=ContinuousEventTimeTrigger.of(1),
    )
    h.process_element(("a", 1), 0)
    h.process_watermark(999)
    assert len(records(h)) == 999 > NON_FORWARD_LIMIT


class Echo(KeyedProcessFunction[Any, Any, Any]):
    """A process function whose timer re-registers itself for ever."""

    def process_element(self, value: Any, ctx: Any) -> Any:
        ctx.timer_service().register_event_time_timer(ctx.timestamp())
        return None

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        ctx.timer_service().register_event_time_timer(timestamp)
        return [timestamp]


def test_a_process_function_that_re_registers_its_timer_for_ever_is_named() -> None:
    h = OneInputOperatorHarness(KeyedProcessOperator(Echo(), first))
    h.process_element(("a", 1), 5)
    with pytest.raises(TimerLoopError, match=r"Echo \(on_timer\)"):
        h.process_watermark(5)
    assert h.extract_output_values() == [5] * (NON_FORWARD_LIMIT + 1)
