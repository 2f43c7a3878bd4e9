"""Join scenarios shared by the local and the Spark tests: one event stream, split into the two sides of each
join, whose watermarks travel in the events themselves, so both runners see the same elements at the same
watermarks.

An event is ``(scenario, side, key, timestamp, watermark)``: ``side`` is ``"L"`` or ``"R"``; when
``watermark`` is not ``None`` a punctuated generator emits it right after the event. Each scenario lives in its
own stretch of time (0-5, 100-105, 200-205), after the previous one, so all of them can run in one job.

The interval joins' events and expected outputs come from two-input scenario files whose output real Flink
produced (``tests/scenarios/two_input``); the window join's and co-group's are derived from Flink's semantics as
cited there.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from panes.datastream import DataStream, OutputTag, StreamEnvironment
from panes.elements import Watermark
from panes.functions.join import ProcessJoinFunction
from panes.testing.scenario import Scenario
from panes.time import LONG_MAX
from panes.watermarks import WatermarkStrategy
from panes.watermarks.generators import WatermarkGenerator
from panes.windowing import TumblingEventTimeWindows
from tests.conftest import DERIVED_SCENARIOS

Event = tuple[str, str, str, int, "int | None"]


class CarriedWatermarks(WatermarkGenerator):
    """Punctuated: emits the watermark an event carries, right after it."""

    def on_event(self, event: Any, event_timestamp: int, output: Any) -> None:
        if event[4] is not None:
            output.emit_watermark(Watermark(event[4]))

    def on_periodic_emit(self, output: Any) -> None:
        """Only the events' watermarks."""


def event_time(event: Any, _: Any) -> int:
    ts: int = event[3]
    return ts


def key_of(event: Any) -> str:
    key: str = event[2]
    return key


def batches_of(events: list[Event]) -> list[list[Event]]:
    """Micro-batches that end right after each event carrying a watermark: the elements of a batch see the
    watermark of the batches before, as element by element they would."""
    batches: list[list[Event]] = [[]]
    for event in events:
        batches[-1].append(event)
        if event[4] is not None:
            batches.append([])
    return [batch for batch in batches if batch]


def source(env: StreamEnvironment, events: list[Event]) -> DataStream:
    strategy = WatermarkStrategy.for_generator(CarriedWatermarks).with_timestamp_assigner(event_time)
    return env.from_micro_batches(batches_of(events)).assign_timestamps_and_watermarks(strategy)


class _Side:
    def __init__(self, scenario: str, side: str) -> None:
        self.scenario = scenario
        self.side = side

    def __call__(self, event: Any) -> bool:
        return bool(event[0] == self.scenario and event[1] == self.side)


def sides(stream: DataStream, scenario: str) -> tuple[DataStream, DataStream]:
    """The scenario's left and right elements."""
    return stream.filter(_Side(scenario, "L")), stream.filter(_Side(scenario, "R"))


# -- the events and Flink's output from the two-input scenario files ---------------------------------------------
# tests/scenarios/two_input/04_* to 07_* hold these events, with one watermark for both sides, and what Flink
# 2.3.0 emitted for them (tools/flink_oracle); here they run in one job.


SIDES = {1: "L", 2: "R"}
"""A two-input scenario's sides as this module names them."""


def _flink_scenario(name: str) -> Scenario:
    return Scenario.load(DERIVED_SCENARIOS / "two_input" / f"{name}.scenario.json")


def events_of(scenario_name: str, scenario: Scenario) -> list[Event]:
    """A two-input scenario whose sides share their watermarks as this module's events: its watermark entries
    come in pairs (side 1, side 2, the same W) after the element that carries them; the closing pair of
    ``Long.MAX_VALUE`` is the end of input."""
    events: list[Event] = []
    for event in scenario.events:
        if "watermark" not in event:
            events.append((scenario_name, SIDES[event["side"]], event["key"], event["ts"], None))
        elif event["side"] == 2 and event["watermark"] != LONG_MAX:
            name, side, key, ts, _ = events[-1]
            events[-1] = (name, side, key, ts, event["watermark"])
    return events


def _ts_of(scenario: Scenario, seqs: list[int]) -> tuple[int, ...]:
    return tuple(scenario.events[seq]["ts"] for seq in seqs)


def _flink_records(scenario: Scenario, at: str) -> list[dict[str, Any]]:
    assert scenario.expected is not None
    return [r for r in scenario.expected["output"] if r["at"] == at]


def _flink_pairs(scenario: Scenario) -> list[tuple[tuple[int, int], int]]:
    """Flink's pairs as :class:`TimestampPairs` emits them: (left timestamp, right timestamp), timestamp."""
    return [((r["left_ts"], r["right_ts"]), r["ts"]) for r in _flink_records(scenario, "join")]


def _flink_late(scenario_name: str, scenario: Scenario, side: int) -> list[tuple[Event, int]]:
    late = [r for r in _flink_records(scenario, "late") if r["side"] == side]
    return [((scenario_name, SIDES[side], r["key"], r["ts"], None), r["ts"]) for r in late]


# -- window join with allowed lateness, co-group ------------------------------------------------------------------
# Tumbling windows of 3 ms, allowed lateness 2 ms (Flink docs, "Windows" > "Allowed Lateness": an element that
# arrives after the watermark passed the window's end but before end + lateness makes the window fire again with
# all its elements; after that the window's state is gone and its elements are dropped). Key "b" has left
# elements only: an inner join gives nothing for it. The events and what Flink 2.3.0 emitted for them are in
# tests/scenarios/two_input/06_* (the join) and 07_* (co-grouped without lateness: the late elements dropped, key
# "b" with an empty right group, as Flink's CoGroupJoinITCase.testCoGroup shows such one-sided groups).
_JOIN = _flink_scenario("06_window_join_fires_again_within_the_allowed_lateness")
_CO_GROUP = _flink_scenario("07_window_co_group_drops_late_elements")
WINDOW_JOIN = events_of("join", _JOIN)
assert events_of("join", _CO_GROUP) == WINDOW_JOIN
# (key, left timestamp, right timestamp), timestamp of the result (the window's max timestamp)
WINDOW_JOIN_EXPECTED = [((r["key"], r["left_ts"], r["right_ts"]), r["ts"]) for r in _flink_records(_JOIN, "join")]
# (left timestamps, right timestamps), timestamp of the result
WINDOW_CO_GROUP_EXPECTED = [
    ((_ts_of(_CO_GROUP, r["left"]), _ts_of(_CO_GROUP, r["right"])), r["ts"])
    for r in _flink_records(_CO_GROUP, "co_group")
]


def join_pair(left: Any, right: Any) -> tuple[str, int, int]:
    return (left[2], left[3], right[3])


def window_join(stream: DataStream) -> DataStream:
    left, right = sides(stream, "join")
    windowed = left.join(right).where(key_of).equal_to(key_of).window(TumblingEventTimeWindows.of(3))
    return windowed.allowed_lateness(2).apply(join_pair)


def timestamps_of_both(first: list[Any], second: list[Any]) -> Iterable[Any]:
    yield (tuple(e[3] for e in first), tuple(e[3] for e in second))


def window_co_group(stream: DataStream) -> DataStream:
    left, right = sides(stream, "join")
    windowed = left.co_group(right).where(key_of).equal_to(key_of).window(TumblingEventTimeWindows.of(3))
    return windowed.apply(timestamps_of_both)


# -- interval joins ----------------------------------------------------------------------------------------------

# Flink's IntervalJoinOperatorTest.testLateData, 100 ms later: between(-1, 1), watermark 103 after both elements
# at 103; the left element at 101 and the right one at 102 are then late and go to their late outputs.
_LATE = _flink_scenario("04_interval_join_late_data_on_both_sides")
INTERVAL_LATE = events_of("late", _LATE)
INTERVAL_LATE_EXPECTED = _flink_pairs(_LATE)
LEFT_LATE = OutputTag("left-late")
RIGHT_LATE = OutputTag("right-late")
INTERVAL_LEFT_LATE_EXPECTED = _flink_late("late", _LATE, 1)
INTERVAL_RIGHT_LATE_EXPECTED = _flink_late("late", _LATE, 2)


class TimestampPairs(ProcessJoinFunction[Any, Any, Any]):
    """Emits (left timestamp, right timestamp) from the context, checking it against the elements."""

    def process_element(self, left: Any, right: Any, ctx: Any) -> Iterable[Any]:
        assert (ctx.get_left_timestamp(), ctx.get_right_timestamp()) == (left[3], right[3])
        yield (ctx.get_left_timestamp(), ctx.get_right_timestamp())


def interval_join_with_late_outputs(stream: DataStream) -> DataStream:
    left, right = sides(stream, "late")
    joined = left.key_by(key_of).interval_join(right.key_by(key_of)).between(-1, 1)
    return (
        joined.side_output_left_late_data(LEFT_LATE).side_output_right_late_data(RIGHT_LATE).process(TimestampPairs())
    )


# between(0, 2): a left element at t waits for right elements until the watermark reaches t + 2, when its
# cleanup timer removes it. The right element at 202 arrives when the watermark is 202: it is not late, but the
# left element at 200 is gone, so the pair (200, 202) is never made; (203, 205) is, on the inclusive upper bound.
_CLEANUP = _flink_scenario("05_interval_join_cleanup_before_the_partner")
INTERVAL_CLEANUP = events_of("cleanup", _CLEANUP)
INTERVAL_CLEANUP_EXPECTED = _flink_pairs(_CLEANUP)


def interval_join_with_cleanup(stream: DataStream) -> DataStream:
    left, right = sides(stream, "cleanup")
    return left.key_by(key_of).interval_join(right.key_by(key_of)).between(0, 2).process(TimestampPairs())


ALL_EVENTS: list[Event] = WINDOW_JOIN + INTERVAL_LATE + INTERVAL_CLEANUP
