"""One scenario suite, two runners: the Flink conformance examples through the public API on the local
runner and on the Spark runner (a real local SparkSession, one event per micro-batch)."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import ListSink, StreamEnvironment
from panes.local import LocalRunner
from panes.testing.scenario import PANE_FIELDS, Scenario, collect_result, comparable
from tests.conftest import CONFORMANCE
from tests.scenario_api import input_elements, scenario_pipeline

SCENARIOS = Scenario.load_all(CONFORMANCE)
# Spark shards keys, so panes of different keys leave in another order than Flink's; everything else is equal
WITHOUT_EMISSION_ORDER = [f for f in PANE_FIELDS if f != "emit_seq"]


def run(scenario: Scenario, runner_name: str, spark: Any) -> dict[str, Any]:
    if runner_name == "local":
        env = StreamEnvironment(LocalRunner(clock="stepping"), auto_watermark_interval=200)
    else:
        from panes.spark import SparkRunner

        env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    source = env.from_micro_batches([[element] for element in input_elements(scenario)])
    sink = ListSink()
    scenario_pipeline(env, source, scenario).sink_to(sink)
    env.execute(f"conformance {scenario.name}")
    return collect_result(sink.values)


@pytest.mark.parametrize("runner_name", ["local", pytest.param("spark", marks=pytest.mark.spark)])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_conformance_example(scenario: Scenario, runner_name: str, request: pytest.FixtureRequest) -> None:
    spark = request.getfixturevalue("spark") if runner_name == "spark" else None
    assert scenario.expected is not None
    fields = PANE_FIELDS if runner_name == "local" else WITHOUT_EMISSION_ORDER
    assert comparable(run(scenario, runner_name, spark), fields) == comparable(scenario.expected, fields)
