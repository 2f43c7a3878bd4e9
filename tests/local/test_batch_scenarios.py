"""The BATCH-mode window scenarios (``tests/batch_scenarios.py``) on the local runner."""

from __future__ import annotations

import pytest

from panes.local import LocalRunner
from panes.testing.scenario import Scenario
from tests.batch_scenarios import SCENARIOS, check_against_flink, flink_reordered_ties, run_in_batch_mode


def test_there_are_batch_scenarios_flink_ran_in_batch_mode() -> None:
    assert SCENARIOS and all(s.config["mode"] == "BATCH" for s in SCENARIOS)
    assert all(s.expected is not None and s.expected["meta"]["mode"] == "BATCH" for s in SCENARIOS)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_a_batch_scenario_gives_flink_s_panes_with_ties_in_arrival_order(scenario: Scenario) -> None:
    check_against_flink(scenario, run_in_batch_mode(scenario, LocalRunner()))


def test_flink_s_sorter_reordered_equal_timestamps() -> None:
    """The deliberate difference, as Flink produced it (``docs/runtime-modes.md``): its sort did not keep the
    arrival order among equal timestamps, where panes does."""
    (ties,) = [s for s in SCENARIOS if s.name == "01_equal_timestamps_in_batch_mode"]
    assert flink_reordered_ties(ties)
