"""Event time per key (``watermark_per_key``) through the public API on both runners: the scenarios of
``tests/scenarios/per_key`` on the local runner and on the Spark runner (a real local SparkSession, micro-batches
cut where the stream's watermark moves, or one per event at its processing time for quiet keys, as the conformance
suite cuts them), plus what the step forwards downstream and what ``explain`` says."""

from __future__ import annotations

from typing import Any

import pytest

from panes.cli.explain import explain
from panes.datastream import ListSink, StreamEnvironment
from panes.local import LocalRunner
from panes.tags import OutputTag
from panes.testing.scenario import PANE_FIELDS, Scenario, collect_result, comparable, emission_order_per_key
from panes.watermarks import WatermarkStrategy
from panes.watermarks.per_key import PerKeyWatermarks
from panes.windowing.assigners.tumbling import TumblingEventTimeWindows
from tests.conftest import DERIVED_SCENARIOS
from tests.scenario_api import scenario_pipeline
from tests.spark.test_conformance_both_runners import micro_batches

SCENARIOS = Scenario.load_all(DERIVED_SCENARIOS / "per_key")
assert SCENARIOS, "no per-key scenario"
# Spark shards keys: panes of one key leave in their order, but the sink sees shards' rows in no promised order
WITHOUT_EMISSION_ORDER = [f for f in PANE_FIELDS if f != "emit_seq"]


def run(scenario: Scenario, runner_name: str, spark: Any) -> dict[str, Any]:
    if runner_name == "local":
        # with the batches' processing times (quiet keys), the default clock follows them
        clock = "auto" if scenario.has_processing_time() else "stepping"
        env = StreamEnvironment(LocalRunner(clock=clock), auto_watermark_interval=200)
    else:
        from panes.spark import SparkRunner

        env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    batches, times = micro_batches(scenario)
    source = env.from_micro_batches(batches, processing_times=times)
    sink = ListSink()
    scenario_pipeline(env, source, scenario).sink_to(sink)
    env.execute(f"per-key {scenario.name}")
    return collect_result(sink.values)


CASES = [pytest.param(s, "local", id=f"{s.name}-local") for s in SCENARIOS] + [
    pytest.param(s, "spark", id=f"{s.name}-spark", marks=pytest.mark.spark) for s in SCENARIOS
]


@pytest.mark.parametrize(("scenario", "runner_name"), CASES)
def test_each_key_gets_what_flink_gives_for_its_elements_alone(
    scenario: Scenario, runner_name: str, request: pytest.FixtureRequest
) -> None:
    spark = request.getfixturevalue("spark") if runner_name == "spark" else None
    assert scenario.expected is not None
    fields = PANE_FIELDS if runner_name == "local" else WITHOUT_EMISSION_ORDER
    got = comparable(emission_order_per_key(run(scenario, runner_name, spark)), fields)
    assert got == comparable(emission_order_per_key(scenario.expected), fields)


TIMER_SCENARIOS = Scenario.load_all(DERIVED_SCENARIOS / "per_key" / "timers")


@pytest.mark.spark
@pytest.mark.parametrize("scenario", TIMER_SCENARIOS, ids=[s.name for s in TIMER_SCENARIOS])
def test_a_keyed_process_function_s_timers_fire_by_each_key_s_time_on_spark(scenario: Scenario, spark: Any) -> None:
    """``KeyedStream.watermark_per_key`` on Spark (one event per micro-batch): each key's records are Flink's for
    that key's elements alone, as on the harness and the local runner (``tests/core/test_event_time_per_key.py``)."""
    from panes.spark import SparkRunner
    from tests.timer_scenarios import by_key, elements, pipeline

    assert scenario.expected is not None
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    sink = ListSink()
    pipeline(env.from_micro_batches([[element] for element in elements(scenario)]), scenario).sink_to(sink)
    env.execute(f"per-key timers {scenario.name}")
    assert by_key(sink.values) == by_key(scenario.expected["output"])


def skewed_counts(env: StreamEnvironment, micro_batches: bool = False) -> Any:
    """Two devices, 'slow' 1000 ms behind 'fast', interleaved; per-key windows of 100 ms counting each device's
    elements (stream watermark: 0 ms out-of-orderness; per key: the same, at most 5000 ms behind the stream), read
    from a collection or, with ``micro_batches``, as a stream of micro-batches of 20 rows."""
    rows = [row for i in range(30) for row in (("fast", 1000 + 10 * i), ("slow", 10 * i))]
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(0).with_timestamp_assigner(lambda row, _: row[1])
    source = env.from_micro_batches([rows[i : i + 20] for i in range(0, 60, 20)]) if micro_batches else None
    stream = (source or env.from_collection(rows)).assign_timestamps_and_watermarks(strategy)
    return (
        stream.key_by(lambda row: row[0])
        .window(TumblingEventTimeWindows.of(100))
        .watermark_per_key(PerKeyWatermarks.for_bounded_out_of_orderness(0).with_max_lag(5000))
        .process(lambda key, context, rows: [(key, context.window().start, len(list(rows)))])
    )


def per_element_watermarks() -> StreamEnvironment:
    """The local runner with a watermark after each element (the stepping clock moving per element)."""
    return StreamEnvironment(LocalRunner(clock="stepping", advance="per_element"), auto_watermark_interval=200)


def skewed_job(env: StreamEnvironment) -> ListSink:
    sink = ListSink()
    skewed_counts(env).sink_to(sink)
    return sink


def test_the_skewed_device_s_windows_all_fire_on_the_local_runner() -> None:
    """Under the stream's one watermark, 'slow' (1000 ms behind) would have every element late."""
    env = per_element_watermarks()
    sink = skewed_job(env)
    env.execute("skewed")
    assert sorted(sink.values) == sorted(
        [("fast", 1000 + 100 * w, 10) for w in range(3)] + [("slow", 100 * w, 10) for w in range(3)]
    )


def downstream_totals(env: StreamEnvironment, micro_batches: bool = False) -> ListSink:
    """The per-key counts summed per 1000 ms by a window downstream (which sees the forwarded watermark)."""
    sink = ListSink()
    late: OutputTag[Any] = OutputTag("late-counts")
    totals = (
        skewed_counts(env, micro_batches)
        .window_all(TumblingEventTimeWindows.of(1000))
        .side_output_late_data(late)
        .process(lambda context, rows: [(context.window().start, sum(row[2] for row in rows))])
    )
    totals.sink_to(sink)
    totals.get_side_output(late).map(lambda row: ("late", *row)).sink_to(sink)
    return sink


def test_a_window_downstream_sees_the_stream_s_watermark_minus_the_lag() -> None:
    """The per-key step forwards ``stream watermark - max_lag``: 'slow''s counts, 1000 ms behind the stream, are
    not late for the window after it (under the stream's own watermark, forwarded, they would all be)."""
    env = per_element_watermarks()
    sink = downstream_totals(env)
    env.execute("downstream")
    assert sorted(sink.values) == [(0, 30), (1000, 30)]


@pytest.mark.spark
def test_spark_refuses_a_keyed_step_after_a_per_key_window_in_a_streaming_query(spark: Any) -> None:
    """Spark gives every step of a query its one watermark: the window downstream would not see the forwarded
    ``stream watermark - max_lag``, so the runner refuses the streaming job, saying what to do."""
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    downstream_totals(env, micro_batches=True)
    with pytest.raises(ValueError, match="event time per key"):
        env.execute("downstream on spark")


@pytest.mark.spark
def test_a_bounded_spark_job_gives_the_local_runner_s_totals_downstream(spark: Any) -> None:
    """A bounded job on Spark runs each step over all its input, then the end of input: nothing downstream can be
    late, and the totals are the local runner's."""
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    sink = downstream_totals(env)
    env.execute("bounded downstream on spark")
    assert sorted(sink.values) == [(0, 30), (1000, 30)]


def test_explain_names_the_option_and_why_the_window_runs_element_by_element() -> None:
    env = StreamEnvironment(LocalRunner())
    skewed_job(env)
    text = explain(env.plan())
    assert "watermark per key" in text
    assert "stream's watermark - 5000 ms" in text
    assert "it keeps event time per key (watermark_per_key)" in text
    assert "a keyed step after this one is refused in a streaming query" in text
