"""The Flink-produced conformance examples, and the scenarios derived from Flink's source, through the local
runner, driven only by the public API."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import StreamEnvironment
from panes.local import LocalRunner
from panes.testing.scenario import Scenario, collect_result, comparable
from tests.conftest import CONFORMANCE, DERIVED_SCENARIOS
from tests.scenario_api import ScenarioClock, input_elements, scenario_pipeline

SCENARIOS = Scenario.load_all(CONFORMANCE) + Scenario.load_all(DERIVED_SCENARIOS)


def run_on_local(scenario: Scenario) -> dict[str, Any]:
    # a stepping clock moves one watermark interval per element (as the Flink runs emitted a watermark after each
    # element): the periodic generators emit after each one; a scenario that moves processing time itself gets a
    # clock that follows it
    clock = ScenarioClock(scenario) if scenario.has_processing_time() else "stepping"
    env = StreamEnvironment(LocalRunner(clock=clock, advance="per_element"), auto_watermark_interval=200)
    tagged = scenario_pipeline(env, env.from_collection(input_elements(scenario)), scenario)
    return collect_result(tagged.execute_and_collect())


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_conformance_example_on_local_runner(scenario: Scenario) -> None:
    assert scenario.expected is not None
    assert comparable(run_on_local(scenario)) == comparable(scenario.expected)
