"""A local job snapshotted between any two elements and restored resumes with identical output."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from panes.datastream import KeyedProcessFunction, ListSink, OutputTag, StreamEnvironment
from panes.datastream.plan import Plan
from panes.functions import AggregateFunction
from panes.local import LocalRunner
from panes.state import ValueStateDescriptor
from panes.watermarks import WatermarkStrategy
from panes.windowing import EventTimeSessionWindows, SlidingEventTimeWindows

LATE = OutputTag("late")


class RunningMax(KeyedProcessFunction[str, tuple[str, int, int], tuple[str, int]]):
    def open(self, runtime_context: Any) -> None:
        self.best = runtime_context.get_state(ValueStateDescriptor("best"))

    def process_element(self, value: tuple[str, int, int], ctx: Any) -> Any:
        if self.best.value() is None or value[2] > self.best.value():
            self.best.update(value[2])
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 300)
        return None

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield (ctx.get_current_key(), self.best.value())


def build(data: list[tuple[str, int, int]], parallelism: int) -> tuple[StreamEnvironment, Plan, list[ListSink]]:
    env = StreamEnvironment(LocalRunner(clock="stepping"), parallelism=parallelism, auto_watermark_interval=200)
    stamped = env.from_splits([data[0::2], data[1::2]]).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(150).with_timestamp_assigner(lambda e, _: e[1])
    )
    keyed = stamped.key_by(lambda e: e[0])
    sliding = (
        keyed.window(SlidingEventTimeWindows.of(600, 200))
        .allowed_lateness(100)
        .side_output_late_data(LATE)
        .aggregate(_Sum(), lambda key, window, sums: [(key, window.start, s) for s in sums])
    )
    sessions = keyed.window(EventTimeSessionWindows.with_gap(250)).process(
        lambda key, ctx, elements: [(key, ctx.window().start, sorted(e[2] for e in elements))]
    )
    sinks = [ListSink(), ListSink(), ListSink(), ListSink()]
    sliding.sink_to(sinks[0])
    sliding.get_side_output(LATE).sink_to(sinks[1])
    sessions.sink_to(sinks[2])
    keyed.process(RunningMax()).sink_to(sinks[3])
    return env, env.plan(), sinks


class _Sum(AggregateFunction[tuple[str, int, int], int, int]):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: tuple[str, int, int], accumulator: int) -> int:
        return accumulator + value[2]

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, acc_a: int, acc_b: int) -> int:
        return acc_a + acc_b


events = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 3000), st.integers(0, 100)), min_size=1, max_size=40
)


@settings(max_examples=60, deadline=None)
@given(data=events, cut=st.integers(0, 60), parallelism=st.integers(1, 3))
def test_restored_job_continues_exactly(data: list[tuple[str, int, int]], cut: int, parallelism: int) -> None:
    env, plan, reference_sinks = build(data, parallelism)
    runner = LocalRunner(clock="stepping")
    reference = runner.start(plan, env.config())
    reference.run()
    expected = [sink.records for sink in reference_sinks]

    env, plan, sinks = build(data, parallelism)
    first = runner.start(plan, env.config())
    for _ in range(cut):
        if not first.step():
            break
    snapshot = first.snapshot()
    # the first job is abandoned; a new job over the same plan resumes from the snapshot
    second = runner.start(plan, env.config(), snapshot=snapshot)
    second.run()
    assert [sink.records for sink in sinks] == expected
