"""Processing time a test controls, on both runners: ``from_micro_batches(..., processing_times=...)`` gives
each micro-batch its processing time, which every step of the job takes (on Spark instead of the batch's
wall-clock timestamp; on the local runner its default clock follows them). Processing-time windows,
triggers and keyed timers give the same output on both. The scenario files with processing time run on
Spark in ``test_conformance_both_runners``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from panes.datastream import KeyedProcessFunction, ListSink, StreamEnvironment
from panes.local import LocalRunner
from panes.windowing import TumblingProcessingTimeWindows

BATCHES: list[list[Any]] = [[("a", 1), ("b", 2)], [("a", 3)], [], [("a", 4), ("b", 5)], []]
TIMES = [0, 5, 10, 12, 25]


class Reminder(KeyedProcessFunction):
    """Counts a key's elements and reports the count 10 ms (processing time) after the key's first one."""

    def open(self, runtime_context: Any) -> None:
        from panes.state import ValueStateDescriptor

        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        current = self.count.value() or 0
        if current == 0:
            ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 10)
        self.count.update(current + 1)
        return iter(())

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        yield (ctx.get_current_key(), timestamp, self.count.value())


def job(env: StreamEnvironment) -> tuple[ListSink, ListSink]:
    source = env.from_micro_batches(BATCHES, processing_times=TIMES)
    windows, timers = ListSink(), ListSink()
    keyed = source.key_by(lambda element: element[0])
    keyed.window(TumblingProcessingTimeWindows.of(10)).process(
        lambda key, ctx, rows: [(key, ctx.window().start, sorted(r[1] for r in rows))]
    ).sink_to(windows)
    keyed.process(Reminder()).sink_to(timers)
    return windows, timers


def results(windows: ListSink, timers: ListSink) -> tuple[list[Any], list[Any]]:
    return sorted(windows.values), sorted(timers.values)


# windows [0, 10) fire when the (empty) batch at 10 runs, [10, 20) at 25; the timers of a and b (both first
# seen at 0) are due at 10, when a has 2 elements and b 1
EXPECTED = (
    [("a", 0, [1, 3]), ("a", 10, [4]), ("b", 0, [2]), ("b", 10, [5])],
    [("a", 10, 2), ("b", 10, 1)],
)


def test_the_local_runner_follows_the_batches_processing_times() -> None:
    env = StreamEnvironment(LocalRunner())
    sinks = job(env)
    env.execute()
    assert results(*sinks) == EXPECTED


@pytest.mark.parametrize(
    ("times", "message"),
    [([0, 5], "gives 2 times for 3 micro-batches"), ([0, 5, 4], r"never decrease.*\[2\] = 4 < .*\[1\] = 5")],
)
def test_processing_times_are_one_per_batch_and_never_go_back(times: list[int], message: str) -> None:
    env = StreamEnvironment(LocalRunner())
    with pytest.raises(ValueError, match=message):
        env.from_micro_batches([[1], [2], [3]], processing_times=times)


@pytest.mark.spark
def test_spark_follows_the_batches_processing_times_as_the_local_runner(spark: Any) -> None:
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    sinks = job(env)
    env.execute()
    assert results(*sinks) == EXPECTED
