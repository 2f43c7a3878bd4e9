"""Two-input scenario files (``tests/scenarios/two_input``): connected keyed streams, a keyed stream connected with
a broadcast stream, and an interval join, each input with its own punctuated watermarks, replayed on the operator
harness, the local runner and the Spark runner.

The format is the window scenarios' (``panes.testing.scenario``) with a ``side`` (1 or 2) on every event, its
watermark entries included, and a two-input ``"kind"``:

- ``connected_timers``: :class:`CoTimerRecorder`, a ``KeyedCoProcessFunction`` that, per element of either side,
  deletes the event-time timers its ``"delete"`` lists, registers those its ``"timers"`` lists and records the
  element (``at: element``, its side, value, timestamp, ``seq`` and the watermark it saw); per timer it records
  it (``at: timer``) and, for an even time with ``on_timer_offset_ms`` set, registers one more that much later.
- ``broadcast_timers``: :class:`BroadcastTimerRecorder`, side 1 keyed (as above), side 2 broadcast, recorded as
  ``at: broadcast`` with the watermark it saw.
- ``interval_join``: side 1 joined with side 2 ``between(lower_ms, upper_ms)`` (each bound inclusive unless
  ``lower_inclusive`` / ``upper_inclusive`` is false); :class:`PairRecorder` records each pair (``at: join``, the
  two ``seq`` and the context's timestamps), and with ``late_side_outputs`` each side's late elements are recorded
  (``at: late``).
- ``window_join`` and ``window_co_group``: side 1 joined (co-grouped) with side 2 in the scenario's windows
  (``assigner``, ``allowed_lateness_ms``); :func:`join_record` records each pair (``at: join``),
  :func:`co_group_records` each key's two groups (``at: co_group``), each with the timestamp of the record
  emitted (the window's max timestamp).

A scenario ends with side 1's watermark ``Long.MAX_VALUE``, then side 2's, so every runner (and Flink) sees the
inputs end in one order. The expected outputs (``NN_name.flink.json``) are what Apache Flink 2.3.0 emitted for the
same functions in Java (``tools/flink_oracle/TwoInputScenario.java``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from panes.datastream import DataStream, OutputTag, StreamEnvironment
from panes.functions.broadcast import KeyedBroadcastProcessFunction
from panes.functions.join import ProcessJoinFunction
from panes.functions.stream import KeyedCoProcessFunction, ProcessFunction
from panes.operators.broadcast import CoBroadcastWithKeyedOperator
from panes.operators.interval_join import IntervalJoinOperator
from panes.operators.two_input import KeyedCoProcessOperator, TwoInputStreamOperator
from panes.state import MapStateDescriptor
from panes.testing import TwoInputOperatorHarness
from panes.testing.scenario import Scenario
from panes.time import LONG_MIN
from panes.types import Types
from panes.watermarks import WatermarkStrategy
from tests.conftest import DERIVED_SCENARIOS
from tests.scenario_api import MARKER, Punctuated
from tests.timer_scenarios import apply_timers, numbered, runtime_mode, timer_record

TWO_INPUT_SCENARIOS = DERIVED_SCENARIOS / "two_input"
LEFT_LATE = OutputTag("left-late")
RIGHT_LATE = OutputTag("right-late")
WINDOW_KINDS = ("window_join", "window_co_group")
"""Kinds that are a window operator over the union of the two sides: no two-input operator for the harness."""
BROADCAST = MapStateDescriptor("broadcast", Types.STRING(), Types.LONG())

Element = tuple[int, str, int, int, int, tuple[int, ...], tuple[int, ...]]
"""``(side, key, value, timestamp, seq, timers, deletes)``; a watermark entry has key ``MARKER`` and value W."""


def load_all() -> list[Scenario]:
    return Scenario.load_all(TWO_INPUT_SCENARIOS)


def elements(scenario: Scenario) -> list[Element]:
    out: list[Element] = []
    for seq, event in enumerate(scenario.events):
        if "watermark" in event:  # stamped 0: it leaves the stream right after its side's watermark generator
            out.append((event["side"], MARKER, event["watermark"], 0, seq, (), ()))
        else:
            timers, deletes = tuple(event.get("timers", ())), tuple(event.get("delete", ()))
            out.append((event["side"], event["key"], event["value"], event["ts"], seq, timers, deletes))
    return out


def _element(at: str, value: Element, timestamp: int | None, watermark: int) -> dict[str, Any]:
    side, key, number, _, seq, _, _ = value
    return {"at": at, "side": side, "key": key, "value": number, "ts": timestamp, "seq": seq, "watermark": watermark}


class CoTimerRecorder(KeyedCoProcessFunction[Any, Any, Any, dict[str, Any]]):
    """See the module docstring (``connected_timers``)."""

    def __init__(self, on_timer_offset: int | None) -> None:
        self.on_timer_offset = on_timer_offset

    def _record(self, value: Element, ctx: Any) -> Iterator[dict[str, Any]]:
        apply_timers(ctx.timer_service(), value[5], value[6])
        yield _element("element", value, ctx.timestamp(), ctx.timer_service().current_watermark())

    def process_element1(self, value: Any, ctx: Any) -> Iterator[dict[str, Any]]:
        return self._record(value, ctx)

    def process_element2(self, value: Any, ctx: Any) -> Iterator[dict[str, Any]]:
        return self._record(value, ctx)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[dict[str, Any]]:
        yield timer_record(timestamp, ctx, self.on_timer_offset)


class BroadcastTimerRecorder(KeyedBroadcastProcessFunction[Any, Any, Any, dict[str, Any]]):
    """See the module docstring (``broadcast_timers``)."""

    def __init__(self, on_timer_offset: int | None) -> None:
        self.on_timer_offset = on_timer_offset

    def process_element(self, value: Any, ctx: Any) -> Iterator[dict[str, Any]]:
        apply_timers(ctx.timer_service(), value[5], value[6])
        yield _element("element", value, ctx.timestamp(), ctx.timer_service().current_watermark())

    def process_broadcast_element(self, value: Any, ctx: Any) -> Iterator[dict[str, Any]]:
        yield _element("broadcast", value, ctx.timestamp(), ctx.current_watermark())

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[dict[str, Any]]:
        yield timer_record(timestamp, ctx, self.on_timer_offset)


class PairRecorder(ProcessJoinFunction[Any, Any, dict[str, Any]]):
    """See the module docstring (``interval_join``)."""

    def process_element(self, left: Any, right: Any, ctx: Any) -> Iterator[dict[str, Any]]:
        yield {
            "at": "join",
            "key": left[1],
            "left": left[4],
            "right": right[4],
            "left_ts": ctx.get_left_timestamp(),
            "right_ts": ctx.get_right_timestamp(),
            "ts": ctx.get_timestamp(),
        }


def join_record(left: Element, right: Element) -> dict[str, Any]:
    return {"at": "join", "key": left[1], "left": left[4], "right": right[4], "left_ts": left[3], "right_ts": right[3]}


def co_group_records(first: list[Element], second: list[Element]) -> Iterator[dict[str, Any]]:
    key = (first or second)[0][1]
    yield {"at": "co_group", "key": key, "left": [e[4] for e in first], "right": [e[4] for e in second]}


class Stamped(ProcessFunction[dict[str, Any], dict[str, Any]]):
    """Adds each record's timestamp to it (``ts``)."""

    def process_element(self, value: dict[str, Any], ctx: Any) -> Iterator[dict[str, Any]]:
        yield {**value, "ts": ctx.timestamp()}


def late_record(value: Element) -> dict[str, Any]:
    side, key, number, ts, seq, _, _ = value
    return {"at": "late", "side": side, "key": key, "value": number, "ts": ts, "seq": seq}


def _key(value: Element) -> str:
    return value[1]


def _offset(scenario: Scenario) -> int | None:
    offset: int | None = scenario.config.get("on_timer_offset_ms")
    return offset


def _late_tags(scenario: Scenario) -> tuple[OutputTag | None, OutputTag | None]:
    return (LEFT_LATE, RIGHT_LATE) if scenario.config.get("late_side_outputs") else (None, None)


def _bounds(scenario: Scenario) -> tuple[int, int, bool, bool]:
    config = scenario.config
    return (
        config["lower_ms"],
        config["upper_ms"],
        config.get("lower_inclusive", True),
        config.get("upper_inclusive", True),
    )


def operator(scenario: Scenario) -> TwoInputStreamOperator:
    kind = scenario.config["kind"]
    if kind == "connected_timers":
        return KeyedCoProcessOperator(CoTimerRecorder(_offset(scenario)), _key, _key)
    if kind == "broadcast_timers":
        return CoBroadcastWithKeyedOperator(BroadcastTimerRecorder(_offset(scenario)), [BROADCAST], _key)
    lower, upper, lower_inclusive, upper_inclusive = _bounds(scenario)
    left_late, right_late = _late_tags(scenario)
    return IntervalJoinOperator(
        lower, upper, PairRecorder(), _key, _key, lower_inclusive, upper_inclusive, left_late, right_late
    )


def run_on_harness(scenario: Scenario) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The operator's records in order, and its late records (both sides, each in order; the harness keeps side
    outputs apart, so their place among the records is not known here)."""
    harness = TwoInputOperatorHarness(operator(scenario))
    current = {1: LONG_MIN, 2: LONG_MIN}
    for value in elements(scenario):
        side = value[0]
        if value[1] == MARKER:
            if value[2] > current[side]:  # a punctuated generator emits only watermarks that advance
                current[side] = value[2]
                (harness.process_watermark1 if side == 1 else harness.process_watermark2)(value[2])
        else:
            (harness.process_element1 if side == 1 else harness.process_element2)(value, value[3])
    late = [late_record(record.value) for tag in (LEFT_LATE, RIGHT_LATE) for record in harness.get_side_output(tag)]
    return harness.extract_output_values(), late


def _side_watermarks(_: Any) -> Punctuated:
    """Punctuated: the side's watermark entries, ``(side, MARKER, W, ...)``."""
    return Punctuated(marker_at=1)


class _OnSide:
    def __init__(self, side: int) -> None:
        self.side = side

    def __call__(self, value: Element) -> bool:
        return value[0] == self.side


def _side(source: DataStream, side: int) -> DataStream:
    watermarks = WatermarkStrategy.for_generator(_side_watermarks)
    strategy = watermarks.with_timestamp_assigner(lambda value, _: value[3])
    stamped = source.filter(_OnSide(side)).assign_timestamps_and_watermarks(strategy)
    return stamped.filter(lambda value: value[1] != MARKER)


def pipeline(source1: DataStream, source2: DataStream, scenario: Scenario) -> DataStream:
    """The scenario's two-input operator over side 1's elements of ``source1`` and side 2's of ``source2``
    (elements of :func:`elements`; one source may be both), its late elements recorded after it
    (``late_record``)."""
    first, second = _side(source1, 1), _side(source2, 2)
    kind = scenario.config["kind"]
    if kind == "connected_timers":
        keyed = first.key_by(_key).connect(second.key_by(_key))
        return keyed.process(CoTimerRecorder(_offset(scenario)))
    if kind == "broadcast_timers":
        broadcast = second.broadcast(BROADCAST)
        return first.key_by(_key).connect(broadcast).process(BroadcastTimerRecorder(_offset(scenario)))
    if kind in WINDOW_KINDS:
        setup = scenario.window_setup()
        pairs = first.join(second) if kind == "window_join" else first.co_group(second)
        windowed = pairs.where(_key).equal_to(_key).window(setup.assigner).allowed_lateness(setup.allowed_lateness)
        return windowed.apply(join_record if kind == "window_join" else co_group_records).process(Stamped())
    lower, upper, lower_inclusive, upper_inclusive = _bounds(scenario)
    joined = first.key_by(_key).interval_join(second.key_by(_key)).between(lower, upper)
    if not lower_inclusive:
        joined = joined.lower_bound_exclusive()
    if not upper_inclusive:
        joined = joined.upper_bound_exclusive()
    left_late, right_late = _late_tags(scenario)
    if left_late is None or right_late is None:
        return joined.process(PairRecorder())
    pairs = joined.side_output_left_late_data(left_late).side_output_right_late_data(right_late).process(PairRecorder())
    late = pairs.get_side_output(left_late).union(pairs.get_side_output(right_late))
    return pairs.union(late.map(late_record))


def run_on_local(scenario: Scenario) -> list[dict[str, Any]]:
    from panes.local import LocalRunner

    env = StreamEnvironment(
        LocalRunner(clock="stepping", advance="per_element"),
        auto_watermark_interval=200,
        runtime_mode=runtime_mode(scenario),
    )
    source = env.from_collection(elements(scenario))
    return numbered(pipeline(source, source, scenario).execute_and_collect())


def micro_batches(scenario: Scenario, side: int) -> list[list[Element]]:
    """``side``'s micro-batches (the other side's source has the same number): a run of one side's events shares
    a micro-batch, which ends at a watermark entry or where the other side's events start. So each element sees
    the watermarks of the entries before it (on Spark a watermark holds from the micro-batch after the one it
    arrived in), and, within a key, the two inputs arrive in the scenario's order."""
    batches: list[list[Element]] = []
    previous: Element | None = None
    for value in elements(scenario):
        if previous is None or previous[0] != value[0] or previous[1] == MARKER:
            batches.append([])
        if value[0] == side:
            batches[-1].append(value)
        previous = value
    return batches


def ties_in_arrival_order(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records`` with each run of consecutive element records of one key and timestamp put in arrival (``seq``)
    order: what BATCH execution gives in panes, where Flink's sorted inputs leave such ties in their sorter's order
    (``docs/runtime-modes.md``)."""
    out: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []
    for record in [*records, {"at": "end"}]:
        tied = run and record["at"] == "element" and (record["key"], record["ts"]) == (run[0]["key"], run[0]["ts"])
        if tied:
            run.append(record)
            continue
        out += sorted(run, key=lambda r: r["seq"])
        run = [record] if record["at"] == "element" else []
        if record["at"] not in ("element", "end"):
            out.append(record)
    return out
