"""The Flink-produced conformance examples, and the scenarios derived from Flink's source, replayed on the
operator harness."""

from __future__ import annotations

from typing import Any

import pytest

from panes.testing.scenario import Scenario, comparable
from panes.windowing.triggers.base import Trigger
from tests.composite_oracles import ORACLES
from tests.conftest import CONFORMANCE, DERIVED_SCENARIOS
from tests.implementations import harness_for, replay_on

SCENARIOS = Scenario.load_all(CONFORMANCE) + Scenario.load_all(DERIVED_SCENARIOS)


def run_on_harness(
    scenario: Scenario, trigger: Trigger[Any, Any] | None = None, accumulation: str | None = None
) -> dict[str, Any]:
    """The scenario's panes and late elements on the harness (with ``trigger`` and ``accumulation`` instead of
    its own when given)."""
    return replay_on(scenario, harness_for(scenario, trigger, accumulation))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_conformance_example_on_harness(scenario: Scenario) -> None:
    assert scenario.expected is not None
    assert comparable(run_on_harness(scenario)) == comparable(scenario.expected)


@pytest.mark.parametrize("name", list(ORACLES))
def test_a_composite_or_accumulation_scenarios_expected_output_is_its_oracle(name: str) -> None:
    """The stored expected output is what the oracle (a hand-written trigger, Flink's purging, retractions written
    out by hand; ``tests/composite_oracles.py``) gives on the harness. Where real Flink produced it (with the
    oracle's Java twin, ``tools/flink_oracle/OracleTriggers.java``), this holds the Python oracle to Flink's
    output (with the hand-derived pane info merged in); the retracting scenario's ``.expected.json`` is the
    oracle's result itself: regenerate it with ``collect_result_json`` of this."""
    (scenario,) = [s for s in SCENARIOS if s.name == name]
    oracle = ORACLES[name]
    assert scenario.expected is not None
    assert scenario.expected.get("meta", {}).get("flink_trigger") == oracle.flink_trigger
    result = oracle.then(run_on_harness(scenario, oracle.trigger(), oracle.accumulation))
    if oracle.flink_trigger is None:
        assert collect_result_json(result) == scenario.expected
    else:  # every field, the panes in the Flink file's order (by key, window and firing), without its meta
        assert by_firing(collect_result_json(result)) == by_firing(scenario.expected)


def by_firing(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` without ``meta``, its panes sorted by key, window and firing."""
    main = sorted(result["main"], key=lambda p: (p["key"], p["window_start"], p["window_end"], p["fire_index"]))
    return {**{k: v for k, v in result.items() if k != "meta"}, "main": main}


def collect_result_json(result: dict[str, Any]) -> Any:
    """``result`` as its expected file stores it (JSON: tuples become lists)."""
    import json

    return json.loads(json.dumps(result))
