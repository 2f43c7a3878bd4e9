"""The Flink-produced conformance examples, and the scenarios derived from Flink's source, replayed on the
operator harness."""

from __future__ import annotations

from typing import Any

import pytest

from panes.testing import WindowOperatorHarness
from panes.testing.scenario import LATE, Scenario, collect_result, comparable, key_of
from panes.windowing.triggers.base import Trigger
from tests.composite_oracles import ORACLES
from tests.conftest import CONFORMANCE, DERIVED_SCENARIOS

SCENARIOS = Scenario.load_all(CONFORMANCE) + Scenario.load_all(DERIVED_SCENARIOS)


def run_on_harness(
    scenario: Scenario, trigger: Trigger[Any, Any] | None = None, accumulation: str | None = None
) -> dict[str, Any]:
    """The scenario's panes and late elements on the harness (with ``trigger`` and ``accumulation`` instead of
    its own when given)."""
    setup = scenario.window_setup()
    harness = WindowOperatorHarness(
        setup.assigner,
        scenario.pane_function(),
        key_selector=key_of,
        trigger=setup.trigger if trigger is None else trigger,
        evictor=setup.evictor,
        allowed_lateness=setup.allowed_lateness,
        late_data_tag=setup.late_data_tag,
        accumulation=setup.accumulation if accumulation is None else accumulation,
    )
    emitted: list[tuple[str, Any]] = []
    seen_late = 0

    def drain() -> None:
        nonlocal seen_late
        for value in harness.extract_output_values():
            emitted.append(("main", value))
        late = harness.get_side_output(LATE)
        # records and late elements interleave in time; each step emits from at most one of the two
        # except when an element is late *and* nothing fires, so draining per step keeps the order
        for record in late[seen_late:]:
            emitted.append(("late", record))
        seen_late = len(late)
        harness._output.elements.clear()

    for kind, item in scenario.steps():
        if kind == "element":
            harness.process_element(item, item[2])
        elif kind == "processing_time":
            harness.set_processing_time(item)
        else:
            harness.process_watermark(item)
        drain()
    harness.process_watermark(scenario.final_watermark)
    drain()
    return collect_result(emitted)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_conformance_example_on_harness(scenario: Scenario) -> None:
    assert scenario.expected is not None
    assert comparable(run_on_harness(scenario)) == comparable(scenario.expected)


@pytest.mark.parametrize("name", list(ORACLES))
def test_a_composite_or_accumulation_scenarios_expected_output_is_its_oracle(name: str) -> None:
    """The stored expected file is what the oracle (a hand-written trigger, Flink's purging, retractions written
    out by hand; ``tests/composite_oracles.py``) gives: regenerate with ``collect_result_json`` of this."""
    (scenario,) = [s for s in SCENARIOS if s.name == name]
    oracle = ORACLES[name]
    assert scenario.expected is not None
    result = oracle.then(run_on_harness(scenario, oracle.trigger(), oracle.accumulation))
    assert collect_result_json(result) == scenario.expected


def collect_result_json(result: dict[str, Any]) -> Any:
    """``result`` as its expected file stores it (JSON: tuples become lists)."""
    import json

    return json.loads(json.dumps(result))
