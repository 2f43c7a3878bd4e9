"""The keyed-timer scenarios (``tests/timer_scenarios.py``), whose expected output Flink 2.3.0 produced, on the
operator harness and the local runner: every record, in Flink's order."""

from __future__ import annotations

import pytest

from panes.datastream import RuntimeExecutionMode
from panes.testing.scenario import Scenario
from tests.timer_scenarios import load_all, run_on_harness, run_on_local, runtime_mode

SCENARIOS = load_all()
STREAMING = [s for s in SCENARIOS if runtime_mode(s) is RuntimeExecutionMode.STREAMING]
"""The harness feeds an operator as STREAMING execution does (BATCH's sorted input is the runner's)."""


def test_there_are_timer_scenarios() -> None:
    assert len(SCENARIOS) >= 3 and all(s.expected is not None for s in SCENARIOS)
    assert any(runtime_mode(s) is RuntimeExecutionMode.BATCH for s in SCENARIOS)


@pytest.mark.parametrize("scenario", STREAMING, ids=[s.name for s in STREAMING])
def test_a_timer_scenario_on_the_harness(scenario: Scenario) -> None:
    assert scenario.expected is not None
    assert run_on_harness(scenario) == scenario.expected["output"]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_a_timer_scenario_on_the_local_runner(scenario: Scenario) -> None:
    assert scenario.expected is not None
    assert run_on_local(scenario) == scenario.expected["output"]
