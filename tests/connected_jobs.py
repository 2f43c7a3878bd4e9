"""Co-functions over two keyed inputs, shared by the local and the Spark tests of connected streams.

Each operation (``map``, ``flat_map``, ``process`` with a ``KeyedCoProcessFunction`` and with a
``CoProcessFunction``) keeps keyed state shared by both inputs, so a co-operator built without its key
selectors fails in ``open()`` ("Keyed state can only be used on a 'keyed stream'"). The expected results do
not depend on how the two inputs interleave.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from panes.datastream import (
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    DataStream,
    KeyedCoProcessFunction,
    ListSink,
    StreamEnvironment,
)
from panes.state import ListStateDescriptor, ValueStateDescriptor
from panes.types import Types
from panes.watermarks import WatermarkStrategy

ORDERS = [{"k": "a", "ts": 1, "n": 1}, {"k": "b", "ts": 2, "n": 2}, {"k": "a", "ts": 3, "n": 3}]
PAYMENTS = [{"k": "a", "ts": 2, "n": 10}, {"k": "b", "ts": 4, "n": 20}, {"k": "c", "ts": 5, "n": 30}]


class CountPerKey(CoMapFunction[Any, Any, Any]):
    """Numbers the elements of each key across both inputs: (key, input, running count)."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def _next(self, value: dict[str, Any], side: int) -> tuple[str, int, int]:
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        return (value["k"], side, count)

    def map1(self, value: Any) -> Any:
        return self._next(value, 1)

    def map2(self, value: Any) -> Any:
        return self._next(value, 2)


class SymmetricJoin(CoFlatMapFunction[Any, Any, Any]):
    """Joins the two inputs per key: every (first n, second n) pair once, whichever side arrives first."""

    def open(self, runtime_context: Any) -> None:
        self.firsts = runtime_context.get_list_state(ListStateDescriptor("firsts"))
        self.seconds = runtime_context.get_list_state(ListStateDescriptor("seconds"))

    def flat_map1(self, value: Any) -> Iterator[Any]:
        self.firsts.add(value["n"])
        for other in self.seconds.get():
            yield (value["k"], value["n"], other)

    def flat_map2(self, value: Any) -> Iterator[Any]:
        self.seconds.add(value["n"])
        for other in self.firsts.get():
            yield (value["k"], other, value["n"])


class SumAtTimer(KeyedCoProcessFunction[Any, Any, Any, Any]):
    """Sums both inputs per key and emits (key, sum) from an event-time timer at 100."""

    def open(self, runtime_context: Any) -> None:
        self.total = runtime_context.get_state(ValueStateDescriptor("total"))

    def _add(self, value: Any, ctx: Any) -> None:
        self.total.update((self.total.value() or 0) + value["n"])
        ctx.timer_service().register_event_time_timer(100)

    def process_element1(self, value: Any, ctx: Any) -> None:
        self._add(value, ctx)

    def process_element2(self, value: Any, ctx: Any) -> None:
        self._add(value, ctx)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        yield (ctx.get_current_key(), self.total.value(), timestamp)


class LastSeen(CoProcessFunction[Any, Any, Any]):
    """A ``CoProcessFunction`` on keyed inputs (Java's legacy keyed co-process): per key, the previous n."""

    def open(self, runtime_context: Any) -> None:
        self.last = runtime_context.get_state(ValueStateDescriptor("last"))

    def _swap(self, value: Any) -> Iterator[Any]:
        previous = self.last.value()
        self.last.update(value["n"])
        yield (value["k"], previous is None)

    def process_element1(self, value: Any, ctx: Any) -> Iterator[Any]:
        return self._swap(value)

    def process_element2(self, value: Any, ctx: Any) -> Iterator[Any]:
        return self._swap(value)


STAMPED = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")


def connected_pipelines(first: DataStream, second: DataStream) -> dict[str, ListSink]:
    """Every connected-stream operation on keyed inputs, each into its own sink (returned by name)."""
    first = first.assign_timestamps_and_watermarks(STAMPED)
    second = second.assign_timestamps_and_watermarks(STAMPED)
    keyed = first.connect(second).key_by("k", "k", key_type=Types.STRING())
    outputs = {
        "map": keyed.map(CountPerKey()),
        "flat_map": keyed.flat_map(SymmetricJoin()),
        "process": keyed.process(SumAtTimer()),
        "legacy_process": keyed.process(LastSeen()),
        # keyed first with one key, then re-keyed through ConnectedStreams.key_by (PyFlink re-keys too)
        "rekeyed_map": first.key_by(lambda e: e["n"])
        .connect(second.key_by(lambda e: e["n"]))
        .key_by(lambda e: e["k"], lambda e: e["k"])
        .map(CountPerKey()),
    }
    sinks = {name: ListSink() for name in outputs}
    for name, stream in outputs.items():
        stream.sink_to(sinks[name])
    return sinks


EXPECTED = {
    # a: 4 elements over both inputs, b: 2, c: 1 -> counts 1..n per key, whatever the interleaving
    "map": {("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2), ("c", 1)},
    "flat_map": [("a", 1, 10), ("a", 3, 10), ("b", 2, 20)],
    "process": [("a", 14, 100), ("b", 22, 100), ("c", 30, 100)],
    "legacy_process": [("a", False), ("a", False), ("a", True), ("b", False), ("b", True), ("c", True)],
}


def check(sinks: dict[str, ListSink]) -> None:
    """Assert every pipeline's results (order-independent)."""
    for name in ("map", "rekeyed_map"):
        assert {(key, count) for key, _side, count in sinks[name].values} == EXPECTED["map"]
        assert sorted(side for _key, side, _count in sinks[name].values) == [1, 1, 1, 2, 2, 2]
    assert sorted(sinks["flat_map"].values) == EXPECTED["flat_map"]
    assert sorted(sinks["process"].values) == EXPECTED["process"]
    assert sorted(sinks["legacy_process"].values) == EXPECTED["legacy_process"]


def run(env: StreamEnvironment, first: DataStream, second: DataStream) -> None:
    sinks = connected_pipelines(first, second)
    env.execute("connected streams")
    check(sinks)
