"""The broadcast operators on a two-input harness.

Expectations follow Flink's ``CoBroadcastWithKeyedOperatorTest`` (testKeyQuerying, testAccessToKeyedStateIt,
testFunctionWithTimer, testSideOutput, testFunctionWithBroadcastState, testNoKeyedStateOnBroadcastSide) and
``CoBroadcastWithNonKeyedOperatorTest`` (testBroadcastState, testSideOutput), and Flink's docs on the broadcast
state pattern (read-only broadcast state on the non-broadcast side).
"""

from __future__ import annotations

from typing import Any

import pytest

from panes.elements import StreamRecord, Watermark
from panes.errors import UnsupportedOperationError, UserFunctionError
from panes.functions.broadcast import BroadcastProcessFunction, KeyedBroadcastProcessFunction
from panes.operators.broadcast import CoBroadcastWithKeyedOperator, CoBroadcastWithNonKeyedOperator
from panes.state import ListStateDescriptor, MapStateDescriptor
from panes.tags import OutputTag
from panes.testing.two_input import TwoInputOperatorHarness
from panes.types import Types

STATE = MapStateDescriptor("broadcast-state", Types.STRING(), Types.INT())


def keyed_harness(function: Any, descriptors: Any = (STATE,), key: Any = lambda v: v) -> TwoInputOperatorHarness:
    return TwoInputOperatorHarness(CoBroadcastWithKeyedOperator(function, descriptors, key))


def both_watermarks(harness: TwoInputOperatorHarness, watermark: int) -> None:
    harness.process_watermark1(watermark)
    harness.process_watermark2(watermark)


class KeyQuerying(KeyedBroadcastProcessFunction[int, tuple[int, str], str, str]):
    def process_element(self, value: tuple[int, str], ctx: Any) -> Any:
        assert ctx.get_current_key() == value[0]
        yield value[1]

    def process_broadcast_element(self, value: str, ctx: Any) -> Any:
        return None


def test_key_querying() -> None:
    harness = keyed_harness(KeyQuerying(), (), key=lambda v: v[0])
    harness.process_element1((5, "5"), 12)
    harness.process_element1((42, "42"), 13)
    assert harness.get_output() == [StreamRecord("5", 12), StreamRecord("42", 13)]


class KeyedStateOnBroadcast(KeyedBroadcastProcessFunction[str, str, int, tuple[str, list[str]]]):
    """Adds non-broadcast elements to a list state; each broadcast element reports every key's list."""

    LIST = ListStateDescriptor("listStateTest")

    def open(self, runtime_context: Any) -> None:
        self.runtime_context = runtime_context

    def process_element(self, value: str, ctx: Any) -> Any:
        self.runtime_context.get_list_state(self.LIST).add(value)

    def process_broadcast_element(self, value: int, ctx: Any) -> Any:
        seen: list[tuple[str, list[str]]] = []
        ctx.apply_to_keyed_state(self.LIST, lambda key, state: seen.append((key, list(state.get()))))
        return sorted(seen)


def test_access_to_keyed_state_on_the_broadcast_side() -> None:
    harness = keyed_harness(KeyedStateOnBroadcast())
    for value in ["test1", "test1", "test2", "test2", "test2", "test3", "test3", "test3", "test2"]:
        harness.process_element1(value, 12)
    harness.process_element2(1, 13)
    assert harness.extract_output_values() == [
        ("test1", ["test1"] * 2),
        ("test2", ["test2"] * 4),
        ("test3", ["test3"] * 3),
    ]


class TimerOnKeyed(KeyedBroadcastProcessFunction[str, str, int, str]):
    def process_broadcast_element(self, value: int, ctx: Any) -> Any:
        yield f"BR:{value} WM:{ctx.current_watermark()} TS:{ctx.timestamp()}"

    def process_element(self, value: str, ctx: Any) -> Any:
        ctx.timer_service().register_event_time_timer(41)
        yield f"NON-BR:{value} WM:{ctx.current_watermark()} TS:{ctx.timestamp()}"

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        assert ctx.get_current_key() == "6"
        yield f"TIMER:{timestamp}"


def test_function_with_timer() -> None:
    harness = keyed_harness(TimerOnKeyed())
    both_watermarks(harness, 10)
    harness.process_element2(5, 12)
    both_watermarks(harness, 40)
    harness.process_element1("6", 13)
    harness.process_element1("6", 15)
    both_watermarks(harness, 50)
    assert harness.get_output() == [
        Watermark(10),
        StreamRecord("BR:5 WM:10 TS:12", 12),
        Watermark(40),
        StreamRecord("NON-BR:6 WM:40 TS:13", 13),
        StreamRecord("NON-BR:6 WM:40 TS:15", 15),
        StreamRecord("TIMER:41", 41),
        Watermark(50),
    ]


BROADCAST_TAG: OutputTag[str] = OutputTag("br-out")
NON_BROADCAST_TAG: OutputTag[str] = OutputTag("non-br-out")


class SideOutputs(KeyedBroadcastProcessFunction[str, str, int, str]):
    def process_broadcast_element(self, value: int, ctx: Any) -> Any:
        ctx.output(BROADCAST_TAG, f"BR:{value} WM:{ctx.current_watermark()} TS:{ctx.timestamp()}")

    def process_element(self, value: str, ctx: Any) -> Any:
        ctx.output(NON_BROADCAST_TAG, f"NON-BR:{value} WM:{ctx.current_watermark()} TS:{ctx.timestamp()}")


def test_side_outputs() -> None:
    harness = keyed_harness(SideOutputs())
    both_watermarks(harness, 10)
    harness.process_element2(5, 12)
    both_watermarks(harness, 40)
    harness.process_element1("6", 13)
    harness.process_element1("6", 15)
    assert harness.get_side_output(BROADCAST_TAG) == [StreamRecord("BR:5 WM:10 TS:12", 12)]
    assert harness.get_side_output(NON_BROADCAST_TAG) == [
        StreamRecord("NON-BR:6 WM:40 TS:13", 13),
        StreamRecord("NON-BR:6 WM:40 TS:15", 15),
    ]


class BroadcastStateFunction(KeyedBroadcastProcessFunction[str, str, int, str]):
    """Broadcast elements become entries ``"<n>.key" -> n``; a keyed element reads the whole state."""

    def process_broadcast_element(self, value: int, ctx: Any) -> Any:
        ctx.get_broadcast_state(STATE).put(f"{value}.key", value)

    def process_element(self, value: str, ctx: Any) -> Any:
        state = ctx.get_broadcast_state(STATE)
        yield (value, sorted(state.items()))


def test_function_with_broadcast_state() -> None:
    harness = keyed_harness(BroadcastStateFunction())
    for value, ts in [(5, 10), (34, 12), (53, 15), (12, 16), (98, 19)]:
        harness.process_element2(value, ts)
    harness.process_element1("trigger", 13)
    harness.process_element2(51, 21)
    expected = sorted({f"{n}.key": n for n in (5, 34, 53, 12, 98)}.items())
    assert harness.get_output() == [StreamRecord(("trigger", expected), 13)]


class WritesOnTheReadOnlySide(KeyedBroadcastProcessFunction[str, str, int, str]):
    def process_broadcast_element(self, value: int, ctx: Any) -> Any:
        return None

    def process_element(self, value: str, ctx: Any) -> Any:
        ctx.get_broadcast_state(STATE)[value] = 1


def test_broadcast_state_is_read_only_on_the_non_broadcast_side() -> None:
    harness = keyed_harness(WritesOnTheReadOnlySide())
    with pytest.raises(UnsupportedOperationError, match="read-only on the non-broadcast side"):
        harness.process_element1("a", 1)


class UnknownDescriptor(KeyedBroadcastProcessFunction[str, str, int, str]):
    def process_broadcast_element(self, value: int, ctx: Any) -> Any:
        ctx.get_broadcast_state(MapStateDescriptor("not-registered"))

    def process_element(self, value: str, ctx: Any) -> Any:
        return None


def test_a_descriptor_not_given_to_broadcast_is_refused() -> None:
    harness = keyed_harness(UnknownDescriptor())
    with pytest.raises(UserFunctionError, match="The requested state does not exist"):
        harness.process_element2(1, 1)


def test_broadcast_state_survives_snapshot_and_restore() -> None:
    harness = keyed_harness(BroadcastStateFunction())
    harness.process_element2(5, 10)
    harness.process_element2(7, 11)
    snapshot = harness.snapshot()
    restored = keyed_harness(BroadcastStateFunction())
    restored.restore(snapshot)
    restored.process_element1("k", 20)
    assert restored.extract_output_values() == [("k", [("5.key", 5), ("7.key", 7)])]


def test_broadcast_state_changes_replay_onto_the_snapshot() -> None:
    operator = CoBroadcastWithKeyedOperator(BroadcastStateFunction(), (STATE,), lambda v: v)
    operator.track_changes()
    harness = TwoInputOperatorHarness(operator)
    harness.process_element2(1, 1)
    snapshot = harness.snapshot()
    harness.process_element1("no-change", 2)
    unchanged = operator.snapshot_changes()
    harness.process_element2(2, 3)
    changed = operator.snapshot_changes()
    restored = keyed_harness(BroadcastStateFunction())
    restored.operator.restore_state(snapshot, [unchanged, changed])
    restored.process_element1("k", 4)
    assert restored.extract_output_values() == [("k", [("1.key", 1), ("2.key", 2)])]


class NonKeyed(BroadcastProcessFunction[str, int, str]):
    def process_broadcast_element(self, value: int, ctx: Any) -> Any:
        ctx.get_broadcast_state(STATE).put(str(value), value)
        ctx.output(BROADCAST_TAG, f"BR:{value} TS:{ctx.timestamp()}")

    def process_element(self, value: str, ctx: Any) -> Any:
        with pytest.raises(Exception, match=r"Setting timers|keyed side"):
            ctx.timer_service()
        yield f"{value}:{sorted(ctx.get_broadcast_state(STATE).keys())}"


def test_non_keyed_broadcast_state_and_side_output() -> None:
    harness = TwoInputOperatorHarness(CoBroadcastWithNonKeyedOperator(NonKeyed(), (STATE,)))
    harness.process_element2(3, 5)
    harness.process_element2(1, 6)
    harness.process_element1("x", 7)
    assert harness.get_output() == [StreamRecord("x:['1', '3']", 7)]
    assert harness.get_side_output(BROADCAST_TAG) == [StreamRecord("BR:3 TS:5", 5), StreamRecord("BR:1 TS:6", 6)]


def test_broadcast_needs_map_state_descriptors() -> None:
    from panes.datastream import StreamEnvironment
    from panes.state import ValueStateDescriptor

    stream = StreamEnvironment("local").from_collection([1])
    with pytest.raises(TypeError, match="MapStateDescriptor"):
        stream.broadcast(ValueStateDescriptor("v"))
    with pytest.raises(ValueError, match="named 'a'"):
        stream.broadcast(MapStateDescriptor("a"), MapStateDescriptor("a"))


class KeyedStateOnTheBroadcastSide(KeyedBroadcastProcessFunction[str, str, int, str]):
    def open(self, runtime_context: Any) -> None:
        self.values = runtime_context.get_list_state(ListStateDescriptor("values"))

    def process_broadcast_element(self, value: int, ctx: Any) -> Any:
        self.values.add(value)

    def process_element(self, value: str, ctx: Any) -> Any:
        self.values.add(value)


def test_no_keyed_state_on_the_broadcast_side() -> None:
    harness = keyed_harness(KeyedStateOnTheBroadcastSide())
    harness.process_element1("a", 1)
    with pytest.raises(UserFunctionError, match="No key set"):
        harness.process_element2(1, 2)
