"""A finite input ends every job on Spark, with or without a watermark strategy, whatever keyed step it runs
through, and gives what the local runner gives."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from panes.datastream import (
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    ListSink,
    StreamEnvironment,
)
from panes.datastream.stream import DataStream
from panes.local import LocalRunner
from panes.spark import SparkRunner
from panes.state import ValueStateDescriptor
from panes.windowing import GlobalWindows, TumblingProcessingTimeWindows
from panes.windowing.triggers import CountTrigger

BATCHES = [[{"k": "a", "n": 1}, {"k": "b", "n": 2}, {"k": "a", "n": 3}], [{"k": "b", "n": 4}]]
"""Two micro-batches without timestamps (no watermark strategy anywhere)."""


class CountWithProcessingTimer(KeyedProcessFunction[str, dict[str, Any], tuple[str, int]]):
    """Counts per key and emits each count; asks for a processing-time timer an hour away that never comes."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value: dict[str, Any], ctx: Any) -> Any:
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 3_600_000)
        yield (ctx.get_current_key(), count)

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield (ctx.get_current_key(), -1)


class TagBoth(KeyedCoProcessFunction[str, dict[str, Any], dict[str, Any], tuple[str, int, int]]):
    """Emits each element with its input; counts per key in keyed state (the order of the two inputs within
    a micro-batch is Spark's, so only order-free results are compared)."""

    def open(self, runtime_context: Any) -> None:
        self.seen = runtime_context.get_state(ValueStateDescriptor("seen"))

    def process_element1(self, value: dict[str, Any], ctx: Any) -> Any:
        return self._tag(1, value, ctx)

    def process_element2(self, value: dict[str, Any], ctx: Any) -> Any:
        return self._tag(2, value, ctx)

    def _tag(self, side: int, value: dict[str, Any], ctx: Any) -> Any:
        self.seen.update((self.seen.value() or 0) + 1)
        yield (ctx.get_current_key(), side, value["n"])


def keyed_reduce(events: DataStream) -> DataStream:
    return events.key_by("k").reduce(lambda a, b: {"k": a["k"], "n": a["n"] + b["n"]})


def keyed_sum(events: DataStream) -> DataStream:
    return events.key_by("k").sum("n")


def keyed_process_with_a_processing_time_timer(events: DataStream) -> DataStream:
    return events.key_by("k").process(CountWithProcessingTimer())


def count_window(events: DataStream) -> DataStream:
    return events.key_by("k").count_window(2).reduce(lambda a, b: {"k": a["k"], "n": a["n"] + b["n"]})


def global_window_with_count_trigger(events: DataStream) -> DataStream:
    windowed = events.key_by("k").window(GlobalWindows.create()).trigger(CountTrigger.of(1))
    return windowed.reduce(lambda a, b: {"k": a["k"], "n": a["n"] + b["n"]})


def processing_time_window(events: DataStream) -> DataStream:
    # an hour-long processing-time window that starts now (its offset is the wall clock's place in the hour), so
    # nothing is due when the input ends, whenever the test runs (an aligned window could end during it)
    hour = 3_600_000
    window = TumblingProcessingTimeWindows.of(hour, offset=time.time_ns() // 1_000_000 % hour)
    return events.key_by("k").window(window).reduce(lambda a, b: a)


def connected_keyed_co_process(events: DataStream) -> DataStream:
    return events.key_by("k").connect(events.key_by("k")).process(TagBoth())


STEPS: list[Callable[[DataStream], DataStream]] = [
    keyed_reduce,
    keyed_sum,
    keyed_process_with_a_processing_time_timer,
    count_window,
    global_window_with_count_trigger,
    processing_time_window,
    connected_keyed_co_process,
]


def canonical(values: list[Any]) -> list[str]:
    return sorted(repr(sorted(v.items())) if isinstance(v, dict) else repr(v) for v in values)


@pytest.mark.parametrize("step", STEPS, ids=[s.__name__ for s in STEPS])
def test_a_finite_input_without_watermarks_ends_the_job(spark: Any, step: Callable[[DataStream], DataStream]) -> None:
    results = {}
    for name, runner in (("local", LocalRunner(clock="stepping")), ("spark", SparkRunner(spark, num_shards=2))):
        env = StreamEnvironment(runner)
        sink = ListSink()
        step(env.from_micro_batches(BATCHES)).sink_to(sink)
        if name == "spark":
            job = runner.start(env.plan(), env.config())
            try:
                ended = job.await_termination(timeout=120)
            finally:
                job.stop()
                job.cleanup()
            assert ended, f"{step.__name__}: the query was still running two minutes after its input ended"
        else:
            env.execute()
        results[name] = canonical(sink.values)
    assert results["spark"] == results["local"]
