"""The scenario files (Flink's examples, the derived and composite scenarios) on every window implementation that
runs them (``tests/implementations.py``): the general and evicting operators on the harness, the aligned
operator, and the columnar aligned operator (with a ``process_batch`` function, with a ProcessWindowFunction, and
with a reduce function and an AggregateFunction each followed by one) and session operator, each giving the expected
output in the fields it
records. Which implementation runs which scenario is the chooser's verdict, recorded below, so a window that
stops (or starts) running somewhere shows."""

from __future__ import annotations

import pytest

from panes.testing.scenario import Scenario, comparable
from tests.conftest import CONFORMANCE, DERIVED_SCENARIOS
from tests.implementations import FIELDS, IMPLEMENTATIONS, replay, verdict

SCENARIOS = Scenario.load_all(CONFORMANCE) + Scenario.load_all(DERIVED_SCENARIOS)
CASES = [(s, i) for s in SCENARIOS for i in IMPLEMENTATIONS if verdict(s, i) is None]


@pytest.mark.parametrize(("scenario", "implementation"), CASES, ids=[f"{s.name}-{i}" for s, i in CASES])
def test_a_scenario_gives_its_expected_output_on_every_implementation_that_runs_it(
    scenario: Scenario, implementation: str
) -> None:
    assert scenario.expected is not None
    fields = FIELDS[implementation]
    assert comparable(replay(scenario, implementation), fields) == comparable(scenario.expected, fields)


def test_the_chooser_s_verdicts_on_the_scenarios() -> None:
    runs = {s.name: [i for i in IMPLEMENTATIONS if verdict(s, i) is None] for s in SCENARIOS}
    default_trigger = [
        *("general", "aligned", "columnar aligned", "columnar aligned, ProcessWindowFunction"),
        *("columnar aligned, reduce", "columnar aligned, AggregateFunction"),
    ]
    element_by_element = {name: ["general"] for name in runs if name.startswith(("05", "06", "51", "6"))}
    assert runs == {
        "01_tumbling_ooo_lateness": default_trigger,
        "02_sliding": default_trigger,
        "03_session_merge": ["general", "columnar sessions"],
        "04_count_sliding": ["evicting"],
        "07_count_evictor": ["evicting"],
        "52_tumbling_at_the_long_edges": default_trigger,
        "53_sliding_lateness_and_late_elements": default_trigger,
        "54_session_lateness_bridging_element": ["general", "columnar sessions"],
        "55_tumbling_offset_negative_timestamps": default_trigger,
        "56_sessions_bridged_one_by_one": ["general", "columnar sessions"],
        "57_late_elements_that_batch_mode_keeps": default_trigger,
        **element_by_element,  # their triggers (or accumulation modes) are not the default ones
    }
