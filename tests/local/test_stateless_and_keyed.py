"""Stateless transformations, rolling aggregations, partitioning and sinks on the local runner."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import pytest

from panes.datastream import (
    FlatMapFunction,
    ListSink,
    MapFunction,
    OutputTag,
    ProcessFunction,
    StreamEnvironment,
)
from panes.errors import UnsupportedOperationError
from panes.keygroups import assign_key_to_parallel_operator
from panes.local import LocalRunner


def env(parallelism: int = 1) -> StreamEnvironment:
    return StreamEnvironment(LocalRunner(clock="manual"), parallelism=parallelism)


def test_map_filter_flat_map_union_keep_every_element() -> None:
    e = env()
    numbers = e.from_collection(range(6))
    doubled = numbers.map(lambda x: x * 2)
    words = e.from_collection(["a b", "c"]).flat_map(lambda s: s.split())
    result = doubled.filter(lambda x: x % 4 == 0).union(words.map(str.upper)).execute_and_collect()
    assert sorted(map(str, result)) == sorted(["0", "4", "8", "A", "B", "C"])


def test_function_classes_are_opened_with_a_runtime_context() -> None:
    class Tagger(MapFunction[int, str]):
        def open(self, runtime_context: Any) -> None:
            self.index = runtime_context.get_index_of_this_subtask()
            self.parallelism = runtime_context.get_number_of_parallel_subtasks()

        def map(self, value: int) -> str:
            return f"{value}@{self.index}/{self.parallelism}"

    result = env(2).from_collection([1, 2, 3, 4]).rebalance().map(Tagger()).execute_and_collect()
    assert sorted(result) == ["1@1/2", "2@0/2", "3@1/2", "4@0/2"]


def test_rolling_reduce_emits_every_intermediate_result_per_key() -> None:
    data = [("a", 1), ("b", 10), ("a", 2), ("a", 3), ("b", 20)]
    result = env().from_collection(data).key_by(lambda t: t[0]).reduce(lambda x, y: (x[0], x[1] + y[1]))
    assert result.execute_and_collect() == [("a", 1), ("b", 10), ("a", 3), ("a", 6), ("b", 30)]


def test_sum_min_max_keep_the_first_elements_other_fields() -> None:
    data = [("a", 5, "x"), ("a", 3, "y"), ("a", 7, "z")]
    e = env()
    assert e.from_collection(data).key_by(0).sum(1).execute_and_collect() == [
        ("a", 5, "x"),
        ("a", 8, "x"),
        ("a", 15, "x"),
    ]
    assert e.from_collection(data).key_by(0).min(1).execute_and_collect() == [
        ("a", 5, "x"),
        ("a", 3, "x"),
        ("a", 3, "x"),
    ]
    assert e.from_collection(data).key_by(0).max_by(1).execute_and_collect() == [
        ("a", 5, "x"),
        ("a", 5, "x"),
        ("a", 7, "z"),
    ]
    assert e.from_collection(data).key_by(0).min_by(1).execute_and_collect() == [
        ("a", 5, "x"),
        ("a", 3, "y"),
        ("a", 3, "y"),
    ]


def test_aggregations_by_field_name_on_dicts_and_named_tuples() -> None:
    Reading = namedtuple("Reading", "sensor value")
    e = env()
    rows = [Reading("s", 1.5), Reading("s", 2.5)]
    assert e.from_collection(rows).key_by("sensor").sum("value").execute_and_collect() == [
        Reading("s", 1.5),
        Reading("s", 4.0),
    ]
    dicts = [{"k": 1, "v": 2}, {"k": 1, "v": 1}]
    assert e.from_collection(dicts).key_by("k").min("v").execute_and_collect() == [{"k": 1, "v": 2}, {"k": 1, "v": 1}]


def test_key_by_sends_each_key_to_the_instance_owning_its_key_group() -> None:
    class WhereAmI(MapFunction[str, tuple[str, int]]):
        def open(self, runtime_context: Any) -> None:
            self.index = runtime_context.get_index_of_this_subtask()

        def map(self, value: str) -> tuple[str, int]:
            return (value, self.index)

    keys = [f"user-{i}" for i in range(40)]
    result = env(4).from_collection(keys).key_by(lambda k: k).map(WhereAmI()).execute_and_collect()
    assert sorted(result) == sorted((k, assign_key_to_parallel_operator(k, 128, 4)) for k in keys)
    assert len({index for _, index in result}) > 1


def test_broadcast_sends_everything_to_every_instance_and_global_to_the_first() -> None:
    class WhereAmI(MapFunction[int, int]):
        def open(self, runtime_context: Any) -> None:
            self.index = runtime_context.get_index_of_this_subtask()

        def map(self, value: int) -> int:
            return self.index

    e = env(3)
    assert sorted(e.from_collection([1, 2]).broadcast().map(WhereAmI()).execute_and_collect()) == [0, 0, 1, 1, 2, 2]
    assert e.from_collection([1, 2, 3]).global_().map(WhereAmI()).execute_and_collect() == [0, 0, 0]
    custom = e.from_collection([5, 7, 9]).partition_custom(lambda key, n: key % n, lambda v: v)
    assert sorted(custom.map(WhereAmI()).execute_and_collect()) == [0, 1, 2]


def test_process_function_side_outputs_by_context_and_by_yielded_pair() -> None:
    odd = OutputTag("odd")
    big = OutputTag("big")

    class Split(ProcessFunction[int, int]):
        def process_element(self, value: int, ctx: Any) -> Any:
            if value % 2:
                ctx.output(odd, value)
            else:
                yield value
            if value > 3:
                yield big, value * 10

    e = env()
    main = e.from_collection(range(6)).process(Split())
    evens, odds, bigs = ListSink(), ListSink(), ListSink()
    main.sink_to(evens)
    main.get_side_output(odd).sink_to(odds)
    main.get_side_output(big).sink_to(bigs)
    e.execute()
    assert (evens.values, odds.values, bigs.values) == ([0, 2, 4], [1, 3, 5], [40, 50])


def test_timers_on_a_non_keyed_stream_are_refused_as_in_flink() -> None:
    class Timer(ProcessFunction[int, int]):
        def process_element(self, value: int, ctx: Any) -> Any:
            ctx.timer_service().register_event_time_timer(10)
            return None

    with pytest.raises(UnsupportedOperationError, match="keyed"):
        env().from_collection([1]).process(Timer()).execute_and_collect()


def test_keyed_state_outside_a_keyed_stream_is_refused() -> None:
    from panes.state import ValueStateDescriptor

    class Stateful(FlatMapFunction[int, int]):
        def open(self, runtime_context: Any) -> None:
            runtime_context.get_state(ValueStateDescriptor("x"))

        def flat_map(self, value: int) -> Any:
            return [value]

    with pytest.raises(RuntimeError, match="key_by"):
        env().from_collection([1]).flat_map(Stateful()).execute_and_collect()


def test_execute_without_a_sink_and_unbounded_sources_are_refused_with_advice() -> None:
    with pytest.raises(RuntimeError, match="add a sink"):
        env().execute()
    e = env()
    e.from_generator(lambda i: i).sink_to(ListSink())
    with pytest.raises(ValueError, match="max_records"):
        e.execute()
    bounded = StreamEnvironment(LocalRunner(clock="manual", max_records=5))
    sink = ListSink()
    bounded.from_generator(lambda i: i * i).sink_to(sink)
    bounded.execute()
    assert sink.values == [0, 1, 4, 9, 16]


def test_explain_lists_every_transformation_with_its_inputs() -> None:
    e = env()
    e.from_collection([1]).map(lambda x: x).key_by(lambda x: x).reduce(lambda a, b: a + b).sink_to(ListSink())
    text = e.explain()
    for word in ("source", "map", "partition (virtual)", "reduce (keyed)", "sink", "HASH"):
        assert word in text
    assert text.count("\n") == 5


def test_forward_between_different_parallelisms_is_refused() -> None:
    e = env(2)
    e.from_collection([1]).forward().map(lambda x: x).sink_to(ListSink())
    with pytest.raises(ValueError, match="same parallelism"):
        e.execute()
