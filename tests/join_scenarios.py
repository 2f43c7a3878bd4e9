"""Join scenarios shared by the local and the Spark tests: one event stream, split into the two sides of each
join, whose watermarks travel in the events themselves, so both runners see the same elements at the same
watermarks.

An event is ``(scenario, side, key, timestamp, watermark)``: ``side`` is ``"L"`` or ``"R"``; when
``watermark`` is not ``None`` a punctuated generator emits it right after the event. Each scenario lives in its
own stretch of time (0-5, 100-105, 200-205), after the previous one, so all of them can run in one job.

Expected outputs are derived from Flink's semantics as cited at each scenario.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from panes.datastream import DataStream, OutputTag, StreamEnvironment
from panes.elements import Watermark
from panes.functions.join import ProcessJoinFunction
from panes.watermarks import WatermarkStrategy
from panes.watermarks.generators import WatermarkGenerator
from panes.windowing import TumblingEventTimeWindows

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


# -- window join with allowed lateness -------------------------------------------------------------------------
# Tumbling windows of 3 ms, allowed lateness 2 ms (Flink docs, "Windows" > "Allowed Lateness": an element that
# arrives after the watermark passed the window's end but before end + lateness makes the window fire again with
# all its elements; after that the window's state is gone and its elements are dropped). Key "b" has left
# elements only: an inner join gives nothing for it.

WINDOW_JOIN: list[Event] = [
    ("join", "L", "a", 0, None),
    ("join", "R", "a", 1, None),
    ("join", "L", "b", 1, None),
    ("join", "L", "a", 2, 2),  # watermark 2: window [0, 3) fires
    ("join", "R", "a", 1, 4),  # late, within the lateness: [0, 3) fires again; watermark 4 then cleans it up
    ("join", "R", "a", 2, None),  # after the cleanup: dropped
    ("join", "L", "a", 4, None),
    ("join", "R", "a", 5, None),
]

# (key, left timestamp, right timestamp), timestamp of the result (the window's max timestamp)
WINDOW_JOIN_EXPECTED = [
    (("a", 0, 1), 2),
    (("a", 2, 1), 2),
    (("a", 0, 1), 2),  # the late firing: every pair of the pane again, the late element's included
    (("a", 0, 1), 2),
    (("a", 2, 1), 2),
    (("a", 2, 1), 2),
    (("a", 4, 5), 5),
]


def join_pair(left: Any, right: Any) -> tuple[str, int, int]:
    return (left[2], left[3], right[3])


def window_join(stream: DataStream) -> DataStream:
    left, right = sides(stream, "join")
    windowed = left.join(right).where(key_of).equal_to(key_of).window(TumblingEventTimeWindows.of(3))
    return windowed.allowed_lateness(2).apply(join_pair)


# The same elements co-grouped without allowed lateness: the late elements are dropped, key "b" gets its left
# elements with an empty right side (Flink's CoGroupJoinITCase.testCoGroup shows such one-sided groups).
WINDOW_CO_GROUP_EXPECTED = [
    (((0, 2), (1,)), 2),
    (((1,), ()), 2),
    (((4,), (5,)), 5),
]


def timestamps_of_both(first: list[Any], second: list[Any]) -> Iterable[Any]:
    yield (tuple(e[3] for e in first), tuple(e[3] for e in second))


def window_co_group(stream: DataStream) -> DataStream:
    left, right = sides(stream, "join")
    windowed = left.co_group(right).where(key_of).equal_to(key_of).window(TumblingEventTimeWindows.of(3))
    return windowed.apply(timestamps_of_both)


# -- interval join, late data ------------------------------------------------------------------------------------
# Flink's IntervalJoinOperatorTest.testLateData, 100 ms later: between(-1, 1), watermark 103 after both elements
# at 103; the left element at 101 and the right one at 102 are then late and go to their late outputs.

INTERVAL_LATE: list[Event] = [
    ("late", "L", "k", 103, None),
    ("late", "R", "k", 103, 103),
    ("late", "L", "k", 104, None),
    ("late", "R", "k", 104, None),
    ("late", "L", "k", 101, None),
    ("late", "R", "k", 102, None),
    ("late", "L", "k", 105, None),
    ("late", "R", "k", 105, None),
]

INTERVAL_LATE_EXPECTED = [
    ((lhs, rhs), max(lhs, rhs))
    for lhs, rhs in [(103, 103), (103, 104), (104, 103), (104, 104), (104, 105), (105, 104), (105, 105)]
]
LEFT_LATE = OutputTag("left-late")
RIGHT_LATE = OutputTag("right-late")
INTERVAL_LEFT_LATE_EXPECTED = [(("late", "L", "k", 101, None), 101)]
INTERVAL_RIGHT_LATE_EXPECTED = [(("late", "R", "k", 102, None), 102)]


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


# -- interval join, cleanup ------------------------------------------------------------------------------------
# between(0, 2): a left element at t waits for right elements until the watermark reaches t + 2, when its
# cleanup timer removes it (IntervalJoinOperator: cleanup time = t + upper bound for upper > 0). The right element
# at 202 arrives when the watermark is 202: it is not late (202 is not below 202) but the left element at 200 is
# gone, so the pair (200, 202) is never made; (203, 205) is, on the inclusive upper bound.

INTERVAL_CLEANUP: list[Event] = [
    ("cleanup", "L", "c", 200, None),
    ("cleanup", "R", "c", 201, 202),
    ("cleanup", "R", "c", 202, None),
    ("cleanup", "L", "c", 203, None),
    ("cleanup", "R", "c", 205, None),
]

INTERVAL_CLEANUP_EXPECTED = [((200, 201), 201), ((203, 205), 205)]


def interval_join_with_cleanup(stream: DataStream) -> DataStream:
    left, right = sides(stream, "cleanup")
    return left.key_by(key_of).interval_join(right.key_by(key_of)).between(0, 2).process(TimestampPairs())


ALL_EVENTS: list[Event] = WINDOW_JOIN + INTERVAL_LATE + INTERVAL_CLEANUP
