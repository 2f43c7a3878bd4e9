"""The default local runner gives the same output on every run of a job over bounded input: its clock advances
with the input, not with the wall clock (Flink's bounded execution has no wall-clock dependence). The wall
clock stays available as ``LocalRunner(clock="system")``."""

from __future__ import annotations

import random
from typing import Any

import pytest

from panes.datastream import ExecutionConfig, KeyedProcessFunction, ListSink, StreamEnvironment
from panes.local import LocalRunner, SteppingClock
from panes.state import ValueStateDescriptor
from panes.timers import clock as clocks
from panes.timers.clock import SystemProcessingTimeService
from panes.watermarks import WatermarkStrategy
from panes.windowing import EventTimeSessionWindows

RUNS = 5
_rows = random.Random(7)
EVENTS = [(f"k{_rows.randrange(4)}", i * 40 + _rows.randrange(-300, 300)) for i in range(400)]
STRATEGY = WatermarkStrategy.for_bounded_out_of_orderness(100).with_timestamp_assigner(lambda e, _: e[1])


class JitteryWallClock:
    """A stand-in for ``time``: each run's wall clock advances by different random steps."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)
        self._now = 1_700_000_000_000_000_000

    def time_ns(self) -> int:
        self._now += self._random.randrange(0, 400) * 1_000_000
        return self._now


def session_counts(env: StreamEnvironment) -> list[Any]:
    return (
        env.from_collection(EVENTS)
        .assign_timestamps_and_watermarks(STRATEGY)
        .key_by(lambda e: e[0])
        .window(EventTimeSessionWindows.with_gap(150))
        .process(lambda key, ctx, rows: [(key, ctx.window().start, len(list(rows)))])
        .execute_and_collect()
    )


class SilenceCounter(KeyedProcessFunction[str, tuple[str, int], tuple[str, int, int]]):
    """Counts per key; at an event-time timer 200 ms after each element, emits the count seen so far."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value: tuple[str, int], ctx: Any) -> Any:
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(value[1] + 200)
        return None

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield (ctx.get_current_key(), timestamp, self.count.value())


def timer_counts(env: StreamEnvironment) -> list[Any]:
    return (
        env.from_collection(EVENTS)
        .assign_timestamps_and_watermarks(STRATEGY)
        .key_by(lambda e: e[0])
        .process(SilenceCounter())
        .execute_and_collect()
    )


@pytest.mark.parametrize("job", [session_counts, timer_counts], ids=["sessions", "keyed timers"])
def test_the_default_runner_gives_identical_output_on_every_run(job: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    outputs = []
    for run in range(RUNS):
        monkeypatch.setattr(clocks, "time", JitteryWallClock(run))
        outputs.append(job(StreamEnvironment()))
    assert outputs[0]
    assert all(output == outputs[0] for output in outputs)


@pytest.mark.parametrize("job", [session_counts, timer_counts], ids=["sessions", "keyed timers"])
def test_the_default_is_the_stepping_clock_for_bounded_input(job: Any) -> None:
    assert job(StreamEnvironment()) == job(StreamEnvironment(LocalRunner(clock="stepping")))


def test_the_clock_follows_the_sources_boundedness_unless_one_is_chosen() -> None:
    bounded, unbounded = StreamEnvironment(), StreamEnvironment()
    bounded.from_collection([1]).sink_to(ListSink())
    unbounded.from_generator(lambda i: i).sink_to(ListSink())
    config = ExecutionConfig(auto_watermark_interval=50)
    stepping = LocalRunner().clock_for(bounded.plan(), config)
    assert isinstance(stepping, SteppingClock) and stepping.step == 50
    assert isinstance(LocalRunner().clock_for(unbounded.plan(), config), SystemProcessingTimeService)
    assert isinstance(LocalRunner(clock="system").clock_for(bounded.plan(), config), SystemProcessingTimeService)


def test_the_wall_clock_can_still_be_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    wall = JitteryWallClock(0)
    monkeypatch.setattr(clocks, "time", wall)
    before = wall._now
    timer_counts(StreamEnvironment(LocalRunner(clock="system")))
    assert wall._now > before


def test_an_unknown_clock_is_refused_when_the_runner_is_made() -> None:
    with pytest.raises(ValueError, match=r"unknown clock 'wall'.*'auto', 'stepping', 'system', 'manual'"):
        LocalRunner(clock="wall")
