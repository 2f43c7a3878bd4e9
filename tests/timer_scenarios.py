"""Keyed-timer scenario files (``tests/scenarios/timers``): a ``KeyedProcessFunction``'s event-time timers against
the scenario's watermarks, replayed on the operator harness, the local runner and the Spark runner.

The format is the window scenarios' (``panes.testing.scenario``: events, ``{"watermark": W}`` entries, the
watermark rules), with ``"kind": "keyed_timers"`` and, on an element, ``"timers"`` (event times to register) and
``"delete"`` (event times to delete). :class:`TimerRecorder` deletes, then registers, then records the element
(``at: element``, its value, timestamp, ``seq`` and the watermark it saw); on a timer it records it (``at: timer``,
the timer, its timestamp, domain and the watermark) and, for an even time with ``on_timer_offset_ms`` set,
registers one more timer that much later (the offset is odd, so that one registers nothing). The expected
outputs (``NN_name.flink.json``) are what Apache Flink 2.3.0 emitted for the same function in Java
(``tools/flink_oracle``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from panes.datastream import DataStream, RuntimeExecutionMode, StreamEnvironment
from panes.functions.stream import KeyedProcessContext, KeyedProcessFunction, OnTimerContext
from panes.operators.keyed import KeyedProcessOperator
from panes.testing import OneInputOperatorHarness
from panes.testing.scenario import Scenario
from tests.conftest import DERIVED_SCENARIOS
from tests.scenario_api import MARKERS, input_elements, strategy_for

TIMER_SCENARIOS = DERIVED_SCENARIOS / "timers"


def load_all() -> list[Scenario]:
    return Scenario.load_all(TIMER_SCENARIOS)


def apply_timers(service: Any, timers: Iterable[int], deletes: Iterable[int]) -> None:
    """What an element of a timer scenario asks: delete the event-time timers it lists, then register its own."""
    for time in deletes:
        service.delete_event_time_timer(time)
    for time in timers:
        service.register_event_time_timer(time)


def timer_record(timestamp: int, ctx: Any, on_timer_offset: int | None) -> dict[str, Any]:
    """A firing timer as the scenarios record it (``at: timer``); for an even time with ``on_timer_offset`` set,
    it registers one more timer that much later (the offset is odd, so that one registers nothing)."""
    service = ctx.timer_service()
    record = {
        "at": "timer",
        "key": ctx.get_current_key(),
        "ts": ctx.timestamp(),
        "timer": timestamp,
        "domain": ctx.time_domain().value,
        "watermark": service.current_watermark(),
    }
    if on_timer_offset is not None and timestamp % 2 == 0:
        service.register_event_time_timer(timestamp + on_timer_offset)
    return record


class TimerRecorder(KeyedProcessFunction[Any, Any, dict[str, Any]]):
    """See the module docstring. Elements are ``(key, value, ts, seq, timers, deletes)``."""

    def __init__(self, on_timer_offset: int | None) -> None:
        self.on_timer_offset = on_timer_offset

    def process_element(self, value: Any, ctx: KeyedProcessContext) -> Iterator[dict[str, Any]]:
        key, number, _, seq, timers, deletes = value
        service = ctx.timer_service()
        apply_timers(service, timers, deletes)
        yield {
            "at": "element",
            "key": key,
            "value": number,
            "ts": ctx.timestamp(),
            "seq": seq,
            "watermark": service.current_watermark(),
        }

    def on_timer(self, timestamp: int, ctx: OnTimerContext) -> Iterator[dict[str, Any]]:
        yield timer_record(timestamp, ctx, self.on_timer_offset)


def recorder(scenario: Scenario) -> TimerRecorder:
    return TimerRecorder(scenario.config.get("on_timer_offset_ms"))


def elements(scenario: Scenario) -> list[tuple[Any, ...]]:
    """The scenario's input as the runners read it: :func:`tests.scenario_api.input_elements` (watermark markers
    included), each with the timers it registers and deletes."""
    return [
        (*element, tuple(event.get("timers", ())), tuple(event.get("delete", ())))
        for element, event in zip(input_elements(scenario), scenario.events, strict=True)
    ]


def numbered(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**record, "emit_seq": seq} for seq, record in enumerate(records)]


def run_on_harness(scenario: Scenario) -> list[dict[str, Any]]:
    operator = KeyedProcessOperator(recorder(scenario), lambda element: element[0], scenario.key_time())
    harness = OneInputOperatorHarness(operator)
    by_seq = elements(scenario)
    for kind, item in scenario.steps():
        if kind == "element":
            harness.process_element(by_seq[item[3]], item[2])
        else:
            harness.process_watermark(item)
    harness.process_watermark(scenario.final_watermark)
    return numbered(harness.extract_output_values())


def pipeline(source: DataStream, scenario: Scenario) -> DataStream:
    """The scenario's keyed process function over ``source`` (elements of :func:`elements`)."""
    stream = source.assign_timestamps_and_watermarks(strategy_for(scenario)).filter(
        lambda element: element[0] not in MARKERS
    )
    keyed = stream.key_by(lambda element: element[0])
    key_time = scenario.key_time()
    return (keyed if key_time is None else keyed.watermark_per_key(key_time)).process(recorder(scenario))


def runtime_mode(scenario: Scenario) -> RuntimeExecutionMode:
    """The scenario's execution mode (``"mode"`` in its config, STREAMING by default)."""
    return RuntimeExecutionMode(scenario.config.get("mode", "STREAMING"))


def run_on_local(scenario: Scenario) -> list[dict[str, Any]]:
    from panes.local import LocalRunner

    env = StreamEnvironment(
        LocalRunner(clock="stepping", advance="per_element"),
        auto_watermark_interval=200,
        runtime_mode=runtime_mode(scenario),
    )
    return numbered(pipeline(env.from_collection(elements(scenario)), scenario).execute_and_collect())


BROADCAST_RECORDS = "*broadcast*"


def by_key(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each key's records in order, without ``emit_seq`` (for runners that do not keep the order across keys);
    broadcast elements of the two-input scenarios, which belong to no key, under ``BROADCAST_RECORDS``."""
    out: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        key = BROADCAST_RECORDS if record["at"] == "broadcast" else record["key"]
        out.setdefault(key, []).append({k: v for k, v in record.items() if k != "emit_seq"})
    return out
