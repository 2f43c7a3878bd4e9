"""The heap keyed-state backend: Flink's state semantics per (key, namespace), merging of namespaces and
snapshots."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from panes.functions.base import AggregateFunction
from panes.state import (
    VOID_NAMESPACE,
    AggregatingStateDescriptor,
    HeapKeyedStateBackend,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)


class Avg(AggregateFunction[int, tuple[int, int], float]):
    """An average: accumulator ``(sum, count)``."""

    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: int, accumulator: tuple[int, int]) -> tuple[int, int]:
        return (accumulator[0] + value, accumulator[1] + 1)

    def get_result(self, accumulator: tuple[int, int]) -> float:
        return accumulator[0] / accumulator[1]

    def merge(self, acc_a: tuple[int, int], acc_b: tuple[int, int]) -> tuple[int, int]:
        return (acc_a[0] + acc_b[0], acc_a[1] + acc_b[1])


@pytest.fixture
def backend() -> HeapKeyedStateBackend:
    b = HeapKeyedStateBackend()
    b.set_current_key("k1")
    return b


def test_value_state_is_scoped_to_key_and_namespace(backend: HeapKeyedStateBackend) -> None:
    desc = ValueStateDescriptor("v")
    a = backend.get_partitioned_state("ns-a", desc)
    b = backend.get_partitioned_state("ns-b", desc)
    assert a.value() is None
    a.update(1)
    b.update(2)
    backend.set_current_key("k2")
    assert a.value() is None  # another key
    a.update(3)
    backend.set_current_key("k1")
    assert (a.value(), b.value()) == (1, 2)
    a.update(None)  # updating with None clears, as in Flink
    assert a.value() is None
    assert sorted(backend.entries("v")) == [("k1", "ns-b", 2), ("k2", "ns-a", 3)]


def test_list_state(backend: HeapKeyedStateBackend) -> None:
    state = backend.get_partitioned_state(VOID_NAMESPACE, ListStateDescriptor("l"))
    assert state.get() == []
    assert state.get_internal() is None  # what the window operator reads: absent, not empty
    state.add(1)
    state.add_all([2, 3])
    state.add_all([])
    assert state.get() == [1, 2, 3]
    state.update([9])
    assert state.get() == [9]
    state.update([])  # an empty update clears
    assert state.get_internal() is None
    assert list(backend.entries("l")) == []


def test_reducing_state(backend: HeapKeyedStateBackend) -> None:
    state = backend.get_partitioned_state("w", ReducingStateDescriptor("r", lambda a, b: a * 10 + b))
    assert state.get() is None
    state.add(1)
    state.add(2)
    state.add(3)
    assert state.get() == 123  # reduce(reduce(1, 2), 3): the running value first
    state.clear()
    assert state.get() is None


def test_aggregating_state(backend: HeapKeyedStateBackend) -> None:
    state = backend.get_partitioned_state("w", AggregatingStateDescriptor("a", Avg()))
    assert state.get() is None
    for value in (1, 2, 6):
        state.add(value)
    assert state.get() == 3.0
    assert backend.get_partitioned_state("w", AggregatingStateDescriptor("a", Avg())).get_internal() == (9, 3)


def test_map_state(backend: HeapKeyedStateBackend) -> None:
    state = backend.get_partitioned_state(VOID_NAMESPACE, MapStateDescriptor("m"))
    assert state.is_empty()
    state.put("a", 1)
    state.put_all({"b": 2, "c": 3})
    state.remove("b")
    state.remove("zz")
    assert state.contains("a")
    assert not state.contains("b")
    assert sorted(state.items()) == [("a", 1), ("c", 3)]
    assert sorted(state.keys()) == ["a", "c"]
    assert sorted(state.values()) == [1, 3]
    state.remove("a")
    state.remove("c")
    assert state.is_empty()
    assert list(backend.entries("m")) == []  # an emptied map leaves no entry


def test_one_name_cannot_be_two_kinds_of_state(backend: HeapKeyedStateBackend) -> None:
    backend.get_partitioned_state("w", ListStateDescriptor("s"))
    with pytest.raises(ValueError, match="already registered as list state"):
        backend.get_partitioned_state("w", ValueStateDescriptor("s"))


def test_merging_lists_appends_the_sources_to_the_target_in_order(backend: HeapKeyedStateBackend) -> None:
    desc = ListStateDescriptor("l")
    for namespace, values in (("t", [1]), ("s1", [2, 3]), ("s2", [4])):
        backend.get_partitioned_state(namespace, desc).update(values)
    backend.merge_namespaces(desc, "t", ["s1", "s2"])
    assert backend.get_partitioned_state("t", desc).get() == [1, 2, 3, 4]
    assert sorted(ns for _, ns, _ in backend.entries("l")) == ["t"]  # the sources are gone


def test_merging_into_an_empty_target_and_from_empty_sources(backend: HeapKeyedStateBackend) -> None:
    desc = ListStateDescriptor("l")
    backend.get_partitioned_state("s2", desc).update([4])
    backend.merge_namespaces(desc, "t", ["s1", "s2"])
    assert backend.get_partitioned_state("t", desc).get() == [4]
    backend.merge_namespaces(desc, "t", [])
    assert backend.get_partitioned_state("t", desc).get() == [4]


def test_merging_reduces_the_sources_first_then_into_the_target(backend: HeapKeyedStateBackend) -> None:
    """Flink's ``AbstractHeapMergingState.mergeNamespaces``: the sources are combined with each other in
    order, and that result is combined into the target: ``reduce(target, reduce(s1, s2))``. A reduce
    function that is not associative shows the order."""
    desc = ReducingStateDescriptor("r", lambda a, b: a - b)
    for namespace, value in (("t", 100), ("s1", 10), ("s2", 1)):
        backend.get_partitioned_state(namespace, desc).add(value)
    backend.merge_namespaces(desc, "t", ["s1", "s2"])
    assert backend.get_partitioned_state("t", desc).get() == 100 - (10 - 1)


def test_merging_aggregates_uses_merge_sources_first(backend: HeapKeyedStateBackend) -> None:
    calls: list[tuple[Any, Any]] = []

    class Recording(Avg):
        def merge(self, acc_a: tuple[int, int], acc_b: tuple[int, int]) -> tuple[int, int]:
            calls.append((acc_a, acc_b))
            return super().merge(acc_a, acc_b)

    desc = AggregatingStateDescriptor("a", Recording())
    for namespace, value in (("t", 1), ("s1", 2), ("s2", 3)):
        backend.get_partitioned_state(namespace, desc).add(value)
    backend.merge_namespaces(desc, "t", ["s1", "s2"])
    assert calls == [((2, 1), (3, 1)), ((1, 1), (5, 2))]
    assert backend.get_partitioned_state("t", desc).get() == 2.0


def test_merging_only_touches_the_current_key(backend: HeapKeyedStateBackend) -> None:
    desc = ListStateDescriptor("l")
    backend.set_current_key("other")
    backend.get_partitioned_state("s", desc).update(["other's"])
    backend.set_current_key("k1")
    backend.get_partitioned_state("s", desc).update(["mine"])
    backend.merge_namespaces(desc, "t", ["s"])
    assert sorted(backend.entries("l")) == [("k1", "t", ["mine"]), ("other", "s", ["other's"])]


def test_value_state_cannot_be_merged(backend: HeapKeyedStateBackend) -> None:
    with pytest.raises(ValueError, match="mergeable"):
        backend.merge_namespaces(ValueStateDescriptor("v"), "t", ["s"])


def test_snapshot_and_restore_round_trip_every_state(backend: HeapKeyedStateBackend) -> None:
    backend.get_partitioned_state("w1", ListStateDescriptor("l")).update([1, 2])
    backend.get_partitioned_state("w1", ValueStateDescriptor("v")).update("x")
    backend.set_current_key("k2")
    backend.get_partitioned_state(VOID_NAMESPACE, ReducingStateDescriptor("r", lambda a, b: a + b)).add(5)

    data = pickle.loads(pickle.dumps(backend.snapshot()))
    restored = HeapKeyedStateBackend()
    restored.restore(data)
    for name in ("l", "v", "r"):
        assert sorted(restored.entries(name), key=repr) == sorted(backend.entries(name), key=repr)
    restored.set_current_key("k2")
    # the reduce function comes back with the descriptor of the first use after restore
    state = restored.get_partitioned_state(VOID_NAMESPACE, ReducingStateDescriptor("r", lambda a, b: a + b))
    state.add(1)
    assert state.get() == 6
    assert not restored.is_empty()
    assert HeapKeyedStateBackend().is_empty()
