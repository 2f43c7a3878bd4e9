"""Every connected-stream operation on keyed inputs, on the local runner (keyed state shared by both inputs)."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import (
    CoMapFunction,
    CoProcessFunction,
    KeyedCoProcessFunction,
    MapFunction,
    StreamEnvironment,
)
from panes.operators.two_input import CoProcessOperator
from panes.state import ValueStateDescriptor
from tests.connected_jobs import ORDERS, PAYMENTS, CountPerKey, check, connected_pipelines


@pytest.mark.parametrize("parallelism", [1, 3])
def test_map_flat_map_process_and_key_by_on_keyed_connected_streams(parallelism: int) -> None:
    env = StreamEnvironment("local", parallelism=parallelism)
    sinks = connected_pipelines(env.from_collection(ORDERS), env.from_collection(PAYMENTS))
    env.execute()
    check(sinks)


def test_keyed_co_map_gets_its_key_selectors() -> None:
    env = StreamEnvironment("local")
    connected = env.from_collection(ORDERS).connect(env.from_collection(PAYMENTS)).key_by("k", "k")
    stream = connected.map(CountPerKey())
    transformation: Any = stream.transformation
    operator = transformation.operator_factory()
    assert operator.key_selector is not None and operator.key_selector2 is not None
    assert connected.is_keyed() and connected.stream1 is connected.first


def test_non_keyed_connected_map_has_no_keyed_state() -> None:
    env = StreamEnvironment("local")
    stream = env.from_collection([1]).connect(env.from_collection([2])).map(CountPerKey())
    with pytest.raises(Exception, match="keyed stream"):
        stream.execute_and_collect()


class Both(CoMapFunction[Any, Any, Any]):
    def map1(self, value: Any) -> Any:
        return ("first", value)

    def map2(self, value: Any) -> Any:
        return ("second", value)


def test_non_keyed_connected_map_and_mixed_keying() -> None:
    env = StreamEnvironment("local")
    first, second = env.from_collection([1, 2]), env.from_collection([3])
    assert sorted(first.connect(second).map(Both()).execute_and_collect()) == [
        ("first", 1),
        ("first", 2),
        ("second", 3),
    ]
    with pytest.raises(ValueError, match="two keyed streams or two non-keyed"):
        first.key_by(lambda v: v).connect(second).map(Both())


class NoOp(KeyedCoProcessFunction[Any, Any, Any, Any]):
    def process_element1(self, value: Any, ctx: Any) -> None:
        return None

    def process_element2(self, value: Any, ctx: Any) -> None:
        return None


class Plain(CoProcessFunction[Any, Any, Any]):
    def process_element1(self, value: Any, ctx: Any) -> None:
        return None

    def process_element2(self, value: Any, ctx: Any) -> None:
        return None


def test_process_function_kinds_are_checked() -> None:
    env = StreamEnvironment("local")
    first, second = env.from_collection([1]), env.from_collection([2])
    with pytest.raises(TypeError, match="CoProcessFunction"):
        first.connect(second).process(NoOp())
    with pytest.raises(TypeError, match="KeyedCoProcessFunction"):
        first.connect(second).key_by(lambda v: v, lambda v: v).process(Both())
    with pytest.raises(ValueError, match="non-keyed"):
        CoProcessOperator(Plain(), lambda v: v, lambda v: v)


def test_key_by_after_key_by_partitions_by_the_last_key() -> None:
    # Flink's StreamGraphGenerator keeps the partitioning nearest to the consumer: the second key_by re-keys
    env = StreamEnvironment("local", parallelism=3)
    events = [(n, "a" if n % 2 else "b") for n in range(12)]
    counts = env.from_collection(events).key_by(lambda e: e[0]).key_by(lambda e: e[1]).map(CountOnly())
    result = counts.execute_and_collect()
    assert sorted(result) == [(key, count) for key in "ab" for count in range(1, 7)]


class CountOnly(MapFunction[Any, Any]):
    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def map(self, value: Any) -> Any:
        self.count.update((self.count.value() or 0) + 1)
        return (value[1], self.count.value())
