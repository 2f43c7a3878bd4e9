"""The Flink-produced conformance examples through the local runner, driven only by the public API."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import StreamEnvironment
from panes.elements import Watermark
from panes.local import LocalRunner
from panes.testing.scenario import PaneFunction, Scenario, collect_result, comparable
from panes.watermarks import WatermarkGenerator, WatermarkOutput, WatermarkStrategy
from tests.conftest import CONFORMANCE

SCENARIOS = Scenario.load_all(CONFORMANCE)
MARKER = "__watermark__"


class Punctuated(WatermarkGenerator):
    """Emits the watermark a marker element carries (the scenario's ``{"watermark": W}`` entries)."""

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        if event[0] == MARKER:
            output.emit_watermark(Watermark(event[1]))

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        return None


def strategy_for(scenario: Scenario) -> WatermarkStrategy:
    spec = scenario.config["watermark"]
    if spec["type"] == "bounded_out_of_orderness":
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(spec["max_ooo_ms"])
    elif spec["type"] == "monotonous":
        strategy = WatermarkStrategy.for_monotonous_timestamps()
    else:
        strategy = WatermarkStrategy.for_generator(Punctuated)
    return strategy.with_timestamp_assigner(lambda element, _: element[2])


def input_elements(scenario: Scenario) -> list[tuple[Any, ...]]:
    elements: list[tuple[Any, ...]] = []
    for seq, event in enumerate(scenario.events):
        if "watermark" in event:
            elements.append((MARKER, event["watermark"], event["watermark"], seq))
        else:
            elements.append((event["key"], event["value"], event["ts"], seq))
    return elements


def run_on_local(scenario: Scenario) -> dict[str, Any]:
    setup = scenario.window_setup()
    # a stepping clock moves one watermark interval per element: the periodic generators emit after each one
    env = StreamEnvironment(LocalRunner(clock="stepping"), auto_watermark_interval=200)
    stream = (
        env.from_collection(input_elements(scenario))
        .assign_timestamps_and_watermarks(strategy_for(scenario))
        .filter(lambda element: element[0] != MARKER)
    )
    windowed = stream.key_by(lambda element: element[0]).window(setup.assigner)
    if setup.trigger is not None:
        windowed = windowed.trigger(setup.trigger)
    if setup.evictor is not None:
        windowed = windowed.evictor(setup.evictor)
    windowed = windowed.allowed_lateness(setup.allowed_lateness)
    if setup.late_data_tag is not None:
        windowed = windowed.side_output_late_data(setup.late_data_tag)
    panes = windowed.process(PaneFunction())
    tagged = panes.map(lambda pane: ("main", pane))
    if setup.late_data_tag is not None:
        tagged = tagged.union(panes.get_side_output(setup.late_data_tag).map(lambda element: ("late", element)))
    return collect_result(tagged.execute_and_collect())


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_conformance_example_on_local_runner(scenario: Scenario) -> None:
    assert scenario.expected is not None
    assert comparable(run_on_local(scenario)) == comparable(scenario.expected)
