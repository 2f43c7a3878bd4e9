"""Step metrics on the local runner: every kind of step counts what it read and emitted, per output, and
reports its open state (``docs/metrics.md``); the job handle gives the same while the job runs."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import ListSink, OutputTag, StreamEnvironment
from panes.datastream.execution import metric_names
from panes.local import LocalRunner
from panes.types import Types
from panes.windowing import CountTrigger, GlobalWindows, TumblingEventTimeWindows
from tests.metrics_jobs import build, check


@pytest.mark.parametrize("parallelism", [1, 3])
def test_every_kind_of_step_counts_what_it_read_emitted_and_holds(parallelism: int) -> None:
    env = StreamEnvironment(LocalRunner(), parallelism=parallelism)
    sinks = build(env)
    check(env.execute(), sinks)


def test_a_late_record_without_a_late_output_is_counted_not_lost() -> None:
    """Flink's ``numLateRecordsDropped``: a window without a late-data output counts the late records it drops."""
    from panes.watermarks import WatermarkStrategy

    env = StreamEnvironment(LocalRunner())
    rows = [[{"k": "a", "ts": 20}], [{"k": "a", "ts": 1}, {"k": "a", "ts": 25}]]  # ts 1 after the watermark 19
    stream = env.from_micro_batches(rows).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    )
    sink = ListSink()
    stream.key_by("k").window(TumblingEventTimeWindows.of(10)).process(
        lambda key, ctx, elements: [len(list(elements))]
    ).sink_to(sink)
    window = env.execute().get_metrics("Window(Process)")
    assert sink.values == [2] and window.late_dropped == 1 and window.late_out == 0
    assert (window.records_in, window.records_out, window.open_panes, window.timers) == (3, 1, 0, 0)


def test_a_result_that_does_not_fit_its_type_counts_as_an_error_not_an_output() -> None:
    errors: OutputTag[Any] = OutputTag("errors")
    env = StreamEnvironment(LocalRunner())
    mapped = env.from_collection([1, 2, 3]).map(lambda v: v if v != 2 else "two", output_type=Types.LONG())
    mapped = mapped.side_output_errors(errors)
    mapped.sink_to(ListSink())
    mapped.get_side_output(errors).sink_to(ListSink())
    step = env.execute().get_metrics("Map")
    assert (step.records_in, step.records_out, step.error_out) == (3, 2, 1)


def test_a_running_job_reports_its_open_panes_and_timers_and_steps_of_one_name_stay_apart() -> None:
    env = StreamEnvironment(LocalRunner())
    doubled = env.from_collection(list(range(7))).map(lambda v: v * 2).map(lambda v: v + 1)
    # values 1, 3, 5, ..., 13: keys 1, 0, 2, 1, 0, 2, 1; a count trigger fires without purging
    doubled.key_by(lambda v: v % 3).window(GlobalWindows.create()).trigger(CountTrigger.of(3)).reduce(
        lambda a, b: a + b
    ).sink_to(ListSink())
    assert sorted(metric_names(env.plan()).values()) == ["Map", "Map #2", "Window(Reduce)"]
    job = LocalRunner().start(env.plan(), env.config())
    job.run(4)
    metrics = job.metrics()
    assert metrics["Map"].records_in == 4 and metrics["Map #2"].records_out == 4
    assert metrics["Window(Reduce)"].open_panes == 3 and metrics["Window(Reduce)"].state_bytes > 0
    job.run()
    window = job.metrics(state_bytes=False)["Window(Reduce)"]
    assert (window.records_in, window.records_out, window.open_panes, window.state_bytes) == (7, 1, 3, 0)
    with pytest.raises(KeyError, match="Map #2"):
        env.execute().get_metrics("Filter")
