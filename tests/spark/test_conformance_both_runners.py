"""One scenario suite, two runners: the Flink conformance examples and the scenarios derived from Flink's
source, through the public API on the local runner and on the Spark runner (a real local SparkSession, one
event per micro-batch). A scenario that moves processing time gives each micro-batch its processing time
(``from_micro_batches(..., processing_times=...)``), which both runners follow."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import ListSink, StreamEnvironment
from panes.local import LocalRunner
from panes.spark.watermarks import EVENT_TIMES
from panes.testing.scenario import PANE_FIELDS, Scenario, collect_result, comparable
from tests.conftest import CONFORMANCE, DERIVED_SCENARIOS
from tests.scenario_api import MARKER, PROCESSING_MARKER, input_elements, scenario_pipeline

SCENARIOS = Scenario.load_all(CONFORMANCE) + Scenario.load_all(DERIVED_SCENARIOS)


def within_spark_times(scenario: Scenario) -> bool:
    """Whether every timestamp of the scenario is one the Spark runner represents (``test_time_range`` shows
    what happens to the others: they are bad records there)."""
    return all(event.get("ts", 0) in EVENT_TIMES for event in scenario.events)


SPARK_SCENARIOS = [s for s in SCENARIOS if within_spark_times(s)]
# Spark shards keys, so panes of different keys leave in another order than Flink's; everything else is equal
WITHOUT_EMISSION_ORDER = [f for f in PANE_FIELDS if f != "emit_seq"]


def run(scenario: Scenario, runner_name: str, spark: Any) -> dict[str, Any]:
    if runner_name == "local":
        # the stepping clock moves one watermark interval per element (periodic generators emit after each);
        # with the batches' processing times, the default clock follows them instead
        clock = "auto" if scenario.has_processing_time() else "stepping"
        env = StreamEnvironment(LocalRunner(clock=clock), auto_watermark_interval=200)
    else:
        from panes.spark import SparkRunner

        env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    batches, times = micro_batches(scenario)
    source = env.from_micro_batches(batches, processing_times=times)
    sink = ListSink()
    scenario_pipeline(env, source, scenario).sink_to(sink)
    env.execute(f"conformance {scenario.name}")
    return collect_result(sink.values)


def micro_batches(scenario: Scenario) -> tuple[list[list[Any]], list[int] | None]:
    """The scenario's events as micro-batches: a batch ends after each event that moves the watermark, so every
    element of a batch is processed at the watermark Flink processed it at (the one reached after the batch
    before) and a batch holds as many elements as that allows. With processing time, one batch per event, each
    at its time (a processing-time event is an empty batch at its time, elements come at the time reached before
    them)."""
    elements = input_elements(scenario)
    if not scenario.has_processing_time():
        return watermark_steps(scenario, elements), None
    batches: list[list[Any]] = []
    times: list[int] = []
    now = 0
    for element in elements:
        if element[0] == PROCESSING_MARKER:
            now = element[1]
            batches.append([])
        else:
            batches.append([element])
        times.append(now)
    return batches, times


def watermark_steps(scenario: Scenario, elements: list[tuple[Any, ...]]) -> list[list[Any]]:
    """``elements`` cut after each one that moves the scenario's watermark: an element past the largest timestamp
    so far under a bounded out-of-orderness (or monotonous) generator, a marker past the last under punctuated
    watermarks; without watermarks, one batch."""
    kind = scenario.watermark_kind()
    batches: list[list[Any]] = [[]]
    highest = None
    for element in elements:
        batches[-1].append(element)
        timestamp = element[2]
        moves = kind != "none" and (kind != "punctuated" or element[0] == MARKER)
        if moves and (highest is None or timestamp > highest):
            highest = timestamp
            batches.append([])
    return [batch for batch in batches if batch]


def test_only_scenarios_beyond_spark_s_event_times_stay_off_spark() -> None:
    left_out = [s.name for s in SCENARIOS if s not in SPARK_SCENARIOS]
    assert left_out == ["52_tumbling_at_the_long_edges"]


CASES = [pytest.param(s, "local", id=f"{s.name}-local") for s in SCENARIOS] + [
    pytest.param(s, "spark", id=f"{s.name}-spark", marks=pytest.mark.spark) for s in SPARK_SCENARIOS
]


@pytest.mark.parametrize(("scenario", "runner_name"), CASES)
def test_conformance_example(scenario: Scenario, runner_name: str, request: pytest.FixtureRequest) -> None:
    spark = request.getfixturevalue("spark") if runner_name == "spark" else None
    assert scenario.expected is not None
    fields = PANE_FIELDS if runner_name == "local" else WITHOUT_EMISSION_ORDER
    assert comparable(run(scenario, runner_name, spark), fields) == comparable(scenario.expected, fields)
