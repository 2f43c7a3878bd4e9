"""A keyed step restored at another parallelism: its state is redistributed by key group (as Flink restores key-group
ranges into any parallelism), and the job's output is what the uninterrupted job gives."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from panes.datastream import KeyedProcessFunction, ListSink, OutputTag, StreamEnvironment
from panes.local import LocalRunner
from panes.state import ValueStateDescriptor
from panes.watermarks import WatermarkStrategy
from panes.windowing import EventTimeSessionWindows, ProcessWindowFunction, TumblingEventTimeWindows

EVENTS = [(f"k{(i * 7) % 23}", i * 130 - (i % 5) * 700, i) for i in range(240)]
"""Out of order, 23 keys: some elements come late, some within the allowed lateness."""
CUT = 131
LATE: OutputTag[Any] = OutputTag("late")


class Contents(ProcessWindowFunction[Any, Any, Any, Any]):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        window = context.window()
        yield (key, window.start, window.end, sorted(e[2] for e in elements))


class Silence(KeyedProcessFunction[Any, Any, Any]):
    """Alerts when a key has been silent for 900 ms of event time after its last element (a timer per element;
    a newer element makes the older timers stale), counting its elements in value state."""

    def open(self, runtime_context: Any) -> None:
        self.last = runtime_context.get_state(ValueStateDescriptor("last"))
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.last.update(value[1])
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(value[1] + 900)
        return iter(())

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        if self.last.value() is not None and timestamp == self.last.value() + 900:
            yield (ctx.get_current_key(), timestamp, self.count.value())


def keyed_events(env: StreamEnvironment) -> Any:
    return (
        env.from_collection(EVENTS)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(400).with_timestamp_assigner(lambda e, _: e[1])
        )
        .key_by(lambda e: e[0])
    )


def build(kind: str, parallelism: int, late_output: bool = True) -> tuple[StreamEnvironment, ListSink, ListSink]:
    env = StreamEnvironment(LocalRunner(clock="stepping", advance="per_element"))
    keyed = keyed_events(env)
    late = ListSink()
    if kind == "timers":
        result = keyed.process(Silence())
    else:
        assigner = TumblingEventTimeWindows.of(1000) if kind == "tumbling" else EventTimeSessionWindows.with_gap(700)
        windowed = keyed.window(assigner).allowed_lateness(500)
        if late_output:
            windowed = windowed.side_output_late_data(LATE)
        result = windowed.process(Contents())
    result = result.uid(f"{kind}-step").set_parallelism(parallelism)
    if late_output and kind != "timers":
        result.get_side_output(LATE).sink_to(late)
    sink = ListSink()
    result.sink_to(sink)
    return env, sink, late


def outputs(
    kind: str, before: int, after: int | None, late_output: bool = True
) -> tuple[Counter[Any], Counter[Any], Any]:
    """The job's main and late outputs (as multisets: the order across keys follows the instances), run whole
    at parallelism ``before``, or, with ``after``, snapshotted at ``CUT`` and restored at ``after``; and the
    restored job's metrics."""
    env, sink, late = build(kind, before, late_output)
    job = LocalRunner(clock="stepping", advance="per_element").start(env.plan(), env.config())
    if after is None:
        job.run()
        return Counter(map(repr, sink.values)), Counter(map(repr, late.values)), job.metrics()
    job.run(CUT)
    snapshot = job.snapshot()
    main, side = list(sink.values), list(late.values)
    env, sink, late = build(kind, after, late_output)
    restored = LocalRunner(clock="stepping", advance="per_element").start(env.plan(), env.config(), snapshot=snapshot)
    restored.run()
    return Counter(map(repr, main + sink.values)), Counter(map(repr, side + late.values)), restored.metrics()


@pytest.mark.parametrize("kind", ["tumbling", "sessions", "timers"])
@pytest.mark.parametrize("after", [8, 2, 1])
def test_a_keyed_step_restored_at_another_parallelism_gives_the_uninterrupted_output(kind: str, after: int) -> None:
    expected_main, expected_late, _ = outputs(kind, 4, None)
    assert sum(expected_main.values()) > 10
    main, late, metrics = outputs(kind, 4, after)
    assert main == expected_main
    assert late == expected_late
    if kind != "timers":
        assert sum(late.values()) > 0, "some elements come too late"
    step = next(m for name, m in metrics.items() if name.startswith(("Window", "KeyedProcess")))
    assert step.restores == after  # each new instance was rebuilt once, from its keys' share of the old ones


@pytest.mark.parametrize("after", [8, 2])
def test_the_late_records_a_window_dropped_are_counted_once_after_rescaling(after: int) -> None:
    # a window keeps its count of dropped late records in its state: rescaled, it is neither lost nor repeated
    _, _, whole = outputs("tumbling", 4, None, late_output=False)
    _, _, restored = outputs("tumbling", 4, after, late_output=False)
    dropped = next(m for name, m in whole.items() if name.startswith("Window")).late_dropped
    assert dropped > 0
    assert next(m for name, m in restored.items() if name.startswith("Window")).late_dropped == dropped


def test_settings_given_after_a_side_output_was_taken_apply_to_the_one_step() -> None:
    # as in Flink, where uid and parallelism change the one operator every stream of it refers to
    env = StreamEnvironment(LocalRunner(clock="stepping", advance="per_element"))
    windows = (
        keyed_events(env).window(TumblingEventTimeWindows.of(1000)).side_output_late_data(LATE).process(Contents())
    )
    late = ListSink()
    windows.get_side_output(LATE).sink_to(late)  # taken before the settings below
    main = ListSink()
    windows.name("windows").uid("the-windows").set_parallelism(3).sink_to(main)
    plan = env.plan()
    (step,) = [t for t in plan.transformations() if t.name == "windows"]
    assert (step.uid, step.parallelism) == ("the-windows", 3)
    readers = [t for t in plan.transformations() if any(p.id == step.id for p in t.inputs)]
    assert len(readers) == 2  # the late data's side output, and the main sink: both read the step as it is now
    assert all(p is step for t in readers for p in t.inputs if p.id == step.id)
    env.execute()
    assert main.values and late.values
