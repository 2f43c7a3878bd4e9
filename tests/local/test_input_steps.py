"""Steps of bounded input on the local runner: the watermark moves where a step ends (between the micro-batches of
``from_micro_batches`` or ``from_collection(..., batch_size=n)``; a plain collection is one step), or after every
element with ``advance="per_element"``; ``panes explain`` says what can make the runners differ."""

from __future__ import annotations

from typing import Any

import pytest

from panes.cli.explain import explain
from panes.datastream import KeyedProcessFunction, ListSink, OutputTag, StreamEnvironment
from panes.datastream.differences import runner_differences
from panes.local import LocalRunner
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows, TumblingProcessingTimeWindows

EVENTS = [("a", 100), ("a", 5_000), ("a", 200), ("b", 300)]


class Watermarks(KeyedProcessFunction[Any, Any, Any]):
    """Each element with the watermark its step sees when the element arrives."""

    def process_element(self, value: Any, ctx: Any) -> Any:
        yield (value[1], ctx.timer_service().current_watermark())


def watermarks_seen(source: Any, runner: LocalRunner) -> list[tuple[int, int]]:
    env = StreamEnvironment(runner)
    sink = ListSink()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, _: v[1])
    source(env).assign_timestamps_and_watermarks(strategy).key_by(lambda v: v[0]).process(Watermarks()).sink_to(sink)
    env.execute()
    return list(sink.values)


def late_panes(source: Any, runner: LocalRunner) -> tuple[list[Any], list[Any]]:
    env = StreamEnvironment(runner)
    late: OutputTag[Any] = OutputTag("late")
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, _: v[1])
    windows = (
        source(env)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda v: v[0])
        .window(TumblingEventTimeWindows.of(1_000))
        .side_output_late_data(late)
        .process(lambda key, ctx, items: [(key, ctx.window().start, sorted(v[1] for v in items))])
    )
    panes, late_sink = ListSink(), ListSink()
    windows.sink_to(panes)
    windows.get_side_output(late).sink_to(late_sink)
    env.execute()
    return sorted(panes.values), sorted(late_sink.values)


def test_a_collection_is_one_step_the_watermark_moves_only_at_its_end() -> None:
    seen = watermarks_seen(lambda env: env.from_collection(EVENTS), LocalRunner())
    assert seen == [(ts, -(2**63)) for _, ts in EVENTS]
    panes, late = late_panes(lambda env: env.from_collection(EVENTS), LocalRunner())
    assert panes == [("a", 0, [100, 200]), ("a", 5_000, [5_000]), ("b", 0, [300])] and late == []


def test_micro_batches_are_steps_the_watermark_moves_between_them() -> None:
    batches = [EVENTS[:2], EVENTS[2:]]
    seen = watermarks_seen(lambda env: env.from_micro_batches(batches), LocalRunner())
    # monotonous: the largest timestamp so far - 1, after each batch
    assert seen == [(100, -(2**63)), (5_000, -(2**63)), (200, 4_999), (300, 4_999)]
    panes, late = late_panes(lambda env: env.from_micro_batches(batches), LocalRunner())
    assert panes == [("a", 0, [100]), ("a", 5_000, [5_000])] and late == [("a", 200), ("b", 300)]


def test_batch_size_slices_a_collection_into_micro_batches() -> None:
    sliced = watermarks_seen(lambda env: env.from_collection(EVENTS, batch_size=2), LocalRunner())
    batches = watermarks_seen(lambda env: env.from_micro_batches([EVENTS[:2], EVENTS[2:]]), LocalRunner())
    assert sliced == batches
    one_each = watermarks_seen(lambda env: env.from_collection(EVENTS, batch_size=1), LocalRunner())
    per_element = watermarks_seen(lambda env: env.from_collection(EVENTS), LocalRunner(advance="per_element"))
    assert one_each == per_element == [(100, -(2**63)), (5_000, 99), (200, 4_999), (300, 4_999)]


@pytest.mark.parametrize("size", [0, -1, 1.5, "2"])
def test_a_batch_size_below_one_is_refused(size: Any) -> None:
    with pytest.raises(ValueError, match="batch_size must be an int >= 1"):
        StreamEnvironment().from_collection([1], batch_size=size)


def test_an_unknown_advance_is_refused() -> None:
    with pytest.raises(ValueError, match="advance must be 'per_step'"):
        LocalRunner(advance="per_record")


def test_a_job_restored_in_the_middle_of_a_step_gives_the_uninterrupted_output() -> None:
    batches = [EVENTS[:2], EVENTS[2:]]

    def build() -> tuple[StreamEnvironment, ListSink]:
        env = StreamEnvironment(LocalRunner())
        sink = ListSink()
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, _: v[1])
        env.from_micro_batches(batches).assign_timestamps_and_watermarks(strategy).key_by(lambda v: v[0]).process(
            Watermarks()
        ).uid("seen").sink_to(sink)
        return env, sink

    env, whole = build()
    env.execute()
    for read in range(1, 5):
        env, first = build()
        job = LocalRunner().start(env.plan(), env.config())
        job.run(read)
        snapshot = job.snapshot()
        env2, second = build()
        restored = LocalRunner().start(env2.plan(), env2.config(), snapshot=snapshot)
        restored.run()
        restored.close()
        assert first.values + second.values == whole.values, read


def test_explain_says_when_the_runners_can_differ() -> None:
    env = StreamEnvironment()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, _: v[1])
    env.from_collection(EVENTS, batch_size=2).assign_timestamps_and_watermarks(strategy).key_by(lambda v: v[0]).window(
        TumblingEventTimeWindows.of(1_000)
    ).process(lambda k, c, items: [1]).sink_to(ListSink())
    assert runner_differences(env.plan(), env.config()) == []
    assert "yes: the watermark moves where a step of the input ends" in explain(env.plan(), config=env.config())

    env.from_collection(EVENTS).key_by(lambda v: v[0]).window(TumblingProcessingTimeWindows.of(1_000)).process(
        lambda k, c, items: [1]
    ).name("per second").sink_to(ListSink())
    reasons = runner_differences(env.plan(), env.config(), local_runner=LocalRunner(advance="per_element"))
    assert len(reasons) == 2
    assert "'per second' is a processing-time window" in reasons[0] and "per_element" in reasons[1]
    text = explain(env.plan(), config=env.config())
    assert "not always" in text and "processing-time window" in text
