"""The two-input scenarios (``tests/two_input_scenarios.py``), whose expected output Flink 2.3.0 produced, on the
operator harness and the local runner: every record, in Flink's order."""

from __future__ import annotations

import pytest

from panes.datastream import RuntimeExecutionMode
from panes.testing.scenario import Scenario
from tests.timer_scenarios import runtime_mode
from tests.two_input_scenarios import WINDOW_KINDS, load_all, run_on_harness, run_on_local, ties_in_arrival_order

SCENARIOS = load_all()
KINDS = ("connected_timers", "broadcast_timers", "interval_join", *WINDOW_KINDS)
ON_A_TWO_INPUT_OPERATOR = [
    s for s in SCENARIOS if s.config["kind"] not in WINDOW_KINDS and runtime_mode(s) is RuntimeExecutionMode.STREAMING
]
"""What the harness replays: two-input operators fed as STREAMING execution feeds them."""
STREAMING = [s for s in SCENARIOS if runtime_mode(s) is RuntimeExecutionMode.STREAMING]
BATCH = [s for s in SCENARIOS if runtime_mode(s) is RuntimeExecutionMode.BATCH]


def test_the_scenarios_spark_leaves_to_the_joins_job_are_there() -> None:
    from tests.spark.test_two_input_scenarios_spark import IN_THE_JOINS_JOB

    assert IN_THE_JOINS_JOB.issubset({s.name for s in SCENARIOS})


def test_there_is_a_flink_scenario_of_each_two_input_kind() -> None:
    assert sorted({s.config["kind"] for s in SCENARIOS}) == sorted(KINDS)
    assert BATCH, "and one in BATCH execution mode"
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


@pytest.mark.parametrize("scenario", STREAMING, ids=[s.name for s in STREAMING])
def test_a_two_input_scenario_on_the_local_runner(scenario: Scenario) -> None:
    assert scenario.expected is not None
    assert run_on_local(scenario) == scenario.expected["output"]


@pytest.mark.parametrize("scenario", BATCH, ids=[s.name for s in BATCH])
def test_a_two_input_scenario_in_batch_mode_on_the_local_runner(scenario: Scenario) -> None:
    """Flink's records in Flink's order, except among elements of one key with equal timestamps: panes keeps their
    arrival order, Flink merges its two sorted inputs through a priority queue of their heads (on a tie, the input
    it did not just read goes first, each input's own ties in its sorter's order), as the stored output shows."""
    assert scenario.expected is not None
    records = run_on_local(scenario)
    flink = scenario.expected["output"]
    assert ties_in_arrival_order(records) == records
    assert [{k: v for k, v in r.items() if k != "emit_seq"} for r in records] == [
        {k: v for k, v in r.items() if k != "emit_seq"} for r in ties_in_arrival_order(flink)
    ]
    assert ties_in_arrival_order(flink) != flink, "the scenario shows Flink's order among ties"
