"""Building the conformance scenarios with the public API (shared by the local and Spark runner tests)."""

from __future__ import annotations

from typing import Any

from panes.datastream import DataStream, StreamEnvironment
from panes.elements import Watermark
from panes.testing.scenario import Scenario
from panes.watermarks import WatermarkGenerator, WatermarkOutput, WatermarkStrategy

MARKER = "__watermark__"
PROCESSING_MARKER = "__processing_time__"
MARKERS = (MARKER, PROCESSING_MARKER)


class Punctuated(WatermarkGenerator):
    """Emits the watermark a marker element carries (the scenario's ``{"watermark": W}`` entries): an element whose
    field ``marker_at`` is ``MARKER`` carries W in the next field."""

    def __init__(self, marker_at: int = 0) -> None:
        self.marker_at = marker_at

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        if event[self.marker_at] == MARKER:
            output.emit_watermark(Watermark(event[self.marker_at + 1]))

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        return None


def strategy_for(scenario: Scenario) -> WatermarkStrategy:
    spec = scenario.config["watermark"]
    if spec["type"] == "bounded_out_of_orderness":
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(spec["max_ooo_ms"])
    elif spec["type"] == "monotonous":
        strategy = WatermarkStrategy.for_monotonous_timestamps()
    elif spec["type"] == "none":
        strategy = WatermarkStrategy.no_watermarks()
    else:
        strategy = WatermarkStrategy.for_generator(Punctuated)
    return strategy.with_timestamp_assigner(lambda element, _: element[2])


def input_elements(scenario: Scenario) -> list[tuple[Any, ...]]:
    elements: list[tuple[Any, ...]] = []
    for seq, event in enumerate(scenario.events):
        if "processing_time" in event:
            elements.append((PROCESSING_MARKER, event["processing_time"], 0, seq))
        elif "watermark" in event:
            elements.append((MARKER, event["watermark"], event["watermark"], seq))
        else:
            elements.append((event["key"], event["value"], event["ts"], seq))
    return elements


def scenario_pipeline(env: StreamEnvironment, source: DataStream, scenario: Scenario) -> DataStream:
    """The scenario's window over ``source``: panes tagged ``("main", pane)``, late elements ``("late", e)``."""
    setup = scenario.window_setup()
    stream = source.assign_timestamps_and_watermarks(strategy_for(scenario)).filter(
        lambda element: element[0] not in MARKERS
    )
    windowed = stream.key_by(lambda element: element[0]).window(setup.assigner)
    if setup.trigger is not None:
        windowed = windowed.trigger(setup.trigger)
    if setup.evictor is not None:
        windowed = windowed.evictor(setup.evictor)
    windowed = windowed.allowed_lateness(setup.allowed_lateness)
    if setup.late_data_tag is not None:
        windowed = windowed.side_output_late_data(setup.late_data_tag)
    if setup.accumulation == "discarding":
        windowed = windowed.discarding_fired_panes()
    elif setup.accumulation == "retracting":
        windowed = windowed.retracting_fired_panes()
    if setup.key_time is not None:
        windowed = windowed.watermark_per_key(setup.key_time)
    panes = windowed.process(scenario.pane_function())
    tagged = panes.map(lambda pane: ("main", pane))
    if setup.late_data_tag is not None:
        tagged = tagged.union(panes.get_side_output(setup.late_data_tag).map(lambda element: ("late", element)))
    return tagged


class ScenarioClock:
    """The local runner's processing-time clock for a scenario with ``{"processing_time": T}`` events.

    It starts at 0; the runner ticks it after each source element, and the tick after a processing-time
    marker moves it to that marker's ``T`` (then the runner fires the timers due). Only for scenarios whose
    watermarks do not depend on processing time (``punctuated``, ``none``).
    """

    def __init__(self, scenario: Scenario) -> None:
        if scenario.watermark_kind() not in ("punctuated", "none"):
            raise ValueError(f"{scenario.name}: processing-time events need punctuated or no watermarks")
        self._moves = [event.get("processing_time") for event in scenario.events]
        self._read = 0
        self.now = 0

    def get_current_processing_time(self) -> int:
        return self.now

    def tick(self) -> None:
        move = self._moves[self._read]
        self._read += 1
        if move is not None:
            self.now = move

    def set_current_time(self, now: int) -> None:
        self.now = now
