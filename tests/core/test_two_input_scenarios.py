"""The two-input scenarios (``tests/two_input_scenarios.py``), whose expected output Flink 2.3.0 produced, on the
operator harness and the local runner: every record, in Flink's order."""

from __future__ import annotations

import pytest

from panes.testing.scenario import Scenario
from tests.two_input_scenarios import WINDOW_KINDS, load_all, run_on_harness, run_on_local

SCENARIOS = load_all()
KINDS = ("connected_timers", "broadcast_timers", "interval_join", *WINDOW_KINDS)
ON_A_TWO_INPUT_OPERATOR = [s for s in SCENARIOS if s.config["kind"] not in WINDOW_KINDS]


def test_the_scenarios_spark_leaves_to_the_joins_job_are_there() -> None:
    from tests.spark.test_two_input_scenarios_spark import IN_THE_JOINS_JOB

    assert IN_THE_JOINS_JOB.issubset({s.name for s in SCENARIOS})


def test_there_is_a_flink_scenario_of_each_two_input_kind() -> None:
    assert sorted({s.config["kind"] for s in SCENARIOS}) == sorted(KINDS)
    assert all(s.expected is not None and s.expected["meta"]["produced_by"] == "tools/flink_oracle" for s in SCENARIOS)


@pytest.mark.parametrize("scenario", ON_A_TWO_INPUT_OPERATOR, ids=[s.name for s in ON_A_TWO_INPUT_OPERATOR])
def test_a_two_input_scenario_on_the_harness(scenario: Scenario) -> None:
    assert scenario.expected is not None
    expected = [{k: v for k, v in r.items() if k != "emit_seq"} for r in scenario.expected["output"]]
    records, late = run_on_harness(scenario)
    assert records == [r for r in expected if r["at"] != "late"]
    # each side's late elements in Flink's order (the harness keeps each side output apart)
    for side in (1, 2):
        flink_late = [r for r in expected if r["at"] == "late" and r["side"] == side]
        assert [r for r in late if r["side"] == side] == flink_late


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_a_two_input_scenario_on_the_local_runner(scenario: Scenario) -> None:
    assert scenario.expected is not None
    assert run_on_local(scenario) == scenario.expected["output"]
