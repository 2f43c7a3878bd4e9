"""Window scenarios in BATCH execution mode (``tests/scenarios/batch``), whose output Flink 2.3.0 produced, on the
local runner: the same panes, fired once at the end of input, each with its elements in timestamp order.

Among elements of one key with equal timestamps the orders differ, deliberately (``docs/runtime-modes.md``):
panes keeps their arrival order; Flink's sort is not stable, so its order among them is the sorter's. The test
checks both facts on the stored output, so the documented difference rests on what Flink produced."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from panes.datastream import RuntimeExecutionMode, StreamEnvironment
from panes.local import LocalRunner
from panes.testing.scenario import Scenario, collect_result
from tests.conftest import DERIVED_SCENARIOS
from tests.scenario_api import input_elements, scenario_pipeline

SCENARIOS = Scenario.load_all(DERIVED_SCENARIOS / "batch")


def run_in_batch_mode(scenario: Scenario) -> dict[str, Any]:
    env = StreamEnvironment(LocalRunner(), runtime_mode=RuntimeExecutionMode.BATCH)
    tagged = scenario_pipeline(env, env.from_collection(input_elements(scenario)), scenario)
    return collect_result(tagged.execute_and_collect())


def _ties_in_arrival_order(pane: dict[str, Any]) -> bool:
    """Whether the pane's elements of equal timestamp came in arrival (``seq``) order."""
    by_time: dict[int, list[int]] = {}
    for ts, seq in zip(pane["ts_in_order"], pane["seqs_in_order"], strict=True):
        by_time.setdefault(ts, []).append(seq)
    return all(seqs == sorted(seqs) for seqs in by_time.values())


def _without_tie_order(pane: dict[str, Any]) -> dict[str, Any]:
    """The pane, its elements in timestamp order with what each timestamp holds as a multiset."""
    held = Counter(zip(pane["ts_in_order"], pane["seqs_in_order"], pane["values_in_order"], strict=True))
    rest = {k: v for k, v in pane.items() if k not in ("values_in_order", "seqs_in_order", "ts_in_order", "emit_seq")}
    return {**rest, "ts_in_order": pane["ts_in_order"], "held": held}


def test_there_are_batch_scenarios_flink_ran_in_batch_mode() -> None:
    assert SCENARIOS and all(s.config["mode"] == "BATCH" for s in SCENARIOS)
    assert all(s.expected is not None and s.expected["meta"]["mode"] == "BATCH" for s in SCENARIOS)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_a_batch_scenario_gives_flink_s_panes_with_ties_in_arrival_order(scenario: Scenario) -> None:
    assert scenario.expected is not None
    result = run_in_batch_mode(scenario)
    flink = scenario.expected
    assert result["late"] == flink["late"] == []
    assert [_without_tie_order(p) for p in result["main"]] == [_without_tie_order(p) for p in flink["main"]]
    assert all(pane["ts_in_order"] == sorted(pane["ts_in_order"]) for pane in result["main"])
    assert all(_ties_in_arrival_order(pane) for pane in result["main"])
    # the deliberate difference, as Flink produced it: its sorter did not keep the arrival order among ties
    assert not all(_ties_in_arrival_order(pane) for pane in flink["main"])
