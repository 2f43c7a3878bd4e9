"""State time-to-live per state kind, with a manual processing-time clock.

The cases and their times come from Flink's ``TtlStateTestBase`` (testNonExistentValue, testExactExpirationOnWrite,
testRelaxedExpirationOnWrite, testExactExpirationOnRead, testRelaxedExpirationOnRead,
testExpirationTimestampOverflow, testMultipleKeys, testMultipleKeysWithSnapshotCleanup, testSnapshotChangeRestore,
testMergeNamespaces, testIncrementalCleanupWholeState) with a TTL of 100 ms, replayed for every state kind as its
``Ttl*StateTestContext`` does: values are written with ``update`` (value), ``add_all`` (list), ``put_all`` (map) or
``add`` (reducing, aggregating); list elements and map entries expire one by one, reducing and aggregating states
start afresh when their value expired (``TtlReduceFunction``, ``TtlAggregateFunction``).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from panes.functions.base import AggregateFunction
from panes.functions.stream import KeyedProcessFunction
from panes.operators.keyed import KeyedProcessOperator
from panes.state import (
    AggregatingStateDescriptor,
    HeapKeyedStateBackend,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from panes.state.descriptors import StateDescriptor
from panes.testing import OneInputOperatorHarness
from panes.time import LONG_MAX, Time
from panes.timers.clock import ManualProcessingTimeService

TTL = 100
NAMESPACE = "defaultNamespace"


class SumToString(AggregateFunction[int, int, str]):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: int, accumulator: int) -> int:
        return accumulator + value

    def get_result(self, accumulator: int) -> str:
        return str(accumulator)

    def merge(self, a: int, b: int) -> int:
        return a + b


@dataclass
class Kind:
    """One state kind as Flink's test contexts drive it: how to write, read, and what reads give."""

    name: str
    descriptor: Callable[[], StateDescriptor]
    update: Callable[[Any, Any], None]
    get: Callable[[Any], Any]
    empty: Any
    update_empty: Any
    update_unexpired: Any
    update_expired: Any
    get_update_empty: Any
    get_unexpired: Any
    get_update_expired: Any
    mergeable: bool = False


KINDS = [
    Kind(
        "value",
        lambda: ValueStateDescriptor("s"),
        lambda s, v: s.update(v),
        lambda s: s.value(),
        None,
        5,
        10,
        15,
        5,
        10,
        15,
    ),
    Kind(
        "list",
        lambda: ListStateDescriptor("s"),
        lambda s, v: s.add_all(v),
        lambda s: list(s.get()),
        [],
        [5, 7, 10],
        [8, 9, 11],
        [1, 4],
        [5, 7, 10],
        [8, 9, 11],
        [1, 4],
        mergeable=True,
    ),
    Kind(
        "map",
        lambda: MapStateDescriptor("s"),
        lambda s, v: s.put_all(v),
        lambda s: dict(s.items()),
        {},
        {3: "3", 5: "5"},
        {12: "12", 7: "7"},
        {15: "15", 4: "4"},
        {3: "3", 5: "5"},
        {12: "12", 7: "7"},
        {15: "15", 4: "4"},
    ),
    # written at 0 (5) and 50 (7): the value of 0 is still visible at 50, so 50 holds 5 + 7, renewed
    Kind(
        "reducing",
        lambda: ReducingStateDescriptor("s", lambda a, b: a + b),
        lambda s, v: s.add(v),
        lambda s: s.get(),
        None,
        5,
        7,
        6,
        5,
        12,
        6,
        mergeable=True,
    ),
    Kind(
        "aggregating",
        lambda: AggregatingStateDescriptor("s", SumToString()),
        lambda s, v: s.add(v),
        lambda s: s.get(),
        None,
        3,
        6,
        7,
        "3",
        "9",
        "7",
        mergeable=True,
    ),
]


class Context:
    """A heap backend on a manual clock, the state of ``kind`` with ``config``, and Flink's snapshot round trip."""

    def __init__(self, kind: Kind, config: StateTtlConfig) -> None:
        self.kind = kind
        self.config = config
        self.clock = ManualProcessingTimeService()
        self.backend = HeapKeyedStateBackend(self.clock.get_current_processing_time)
        self._create()
        self.backend.set_current_key("defaultKey")

    def _create(self) -> None:
        self.descriptor = self.kind.descriptor()
        self.descriptor.enable_time_to_live(self.config)
        self.state = self.backend.get_partitioned_state(NAMESPACE, self.descriptor)

    @property
    def time(self) -> int:
        return self.clock.now

    @time.setter
    def time(self, now: int) -> None:
        self.clock.set_current_time(now)

    def update(self, value: Any) -> None:
        self.kind.update(self.state, value)

    def get(self) -> Any:
        return self.kind.get(self.state)

    def set_key(self, key: Any) -> None:
        self.backend.set_current_key(key)

    def original_is_empty(self) -> bool:
        """Whether storage holds nothing for the current key (Flink's ``isOriginalEmptyValue``)."""
        return (self.backend.current_key, NAMESPACE) not in self.backend._tables.get("s", {})

    def take_snapshot(self) -> bytes:
        return pickle.dumps(self.backend.snapshot())

    def restore(self, snapshot: bytes) -> None:
        key = self.backend.current_key
        self.backend = HeapKeyedStateBackend(self.clock.get_current_processing_time)
        self.backend.restore(pickle.loads(snapshot))
        self._create()
        self.backend.set_current_key(key)

    def take_and_restore_snapshot(self) -> None:
        self.restore(self.take_snapshot())


def config(
    update: StateTtlConfig.UpdateType = StateTtlConfig.UpdateType.OnCreateAndWrite,
    visibility: StateTtlConfig.StateVisibility = StateTtlConfig.StateVisibility.NeverReturnExpired,
    ttl: int = TTL,
) -> StateTtlConfig:
    builder = StateTtlConfig.new_builder(ttl).set_update_type(update).set_state_visibility(visibility)
    return builder.disable_cleanup_in_background().build()


kinds = pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])


@kinds
def test_non_existent_value(kind: Kind) -> None:
    assert Context(kind, config()).get() == kind.empty


@kinds
def test_exact_expiration_on_write(kind: Kind) -> None:
    ctx = Context(kind, config())
    ctx.take_and_restore_snapshot()
    ctx.time = 0
    ctx.update(kind.update_empty)
    ctx.take_and_restore_snapshot()
    ctx.time = 20
    assert ctx.get() == kind.get_update_empty
    ctx.take_and_restore_snapshot()
    ctx.time = 50
    ctx.update(kind.update_unexpired)
    ctx.take_and_restore_snapshot()
    ctx.time = 120
    assert ctx.get() == kind.get_unexpired
    ctx.take_and_restore_snapshot()
    ctx.time = 170
    ctx.update(kind.update_expired)
    ctx.take_and_restore_snapshot()
    ctx.time = 220
    assert ctx.get() == kind.get_update_expired
    ctx.take_and_restore_snapshot()
    ctx.time = 300
    assert ctx.get() == kind.empty
    assert ctx.original_is_empty(), "original state should be cleared on access"


@kinds
def test_relaxed_expiration_on_write(kind: Kind) -> None:
    ctx = Context(kind, config(visibility=StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp))
    ctx.time = 0
    ctx.update(kind.update_empty)
    ctx.take_and_restore_snapshot()
    ctx.time = 120
    assert ctx.get() == kind.get_update_empty
    assert ctx.original_is_empty(), "original state should be cleared on access"
    assert ctx.get() == kind.empty, "expired state should be cleared on access"


@kinds
def test_exact_expiration_on_read(kind: Kind) -> None:
    ctx = Context(kind, config(update=StateTtlConfig.UpdateType.OnReadAndWrite))
    ctx.time = 0
    ctx.update(kind.update_empty)
    ctx.take_and_restore_snapshot()
    ctx.time = 50
    assert ctx.get() == kind.get_update_empty
    ctx.take_and_restore_snapshot()
    ctx.time = 120
    assert ctx.get() == kind.get_update_empty, "unexpired state should be available after read"
    ctx.take_and_restore_snapshot()
    ctx.time = 250
    assert ctx.get() == kind.empty
    assert ctx.original_is_empty()


@kinds
def test_relaxed_expiration_on_read(kind: Kind) -> None:
    ctx = Context(
        kind,
        config(StateTtlConfig.UpdateType.OnReadAndWrite, StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp),
    )
    ctx.time = 0
    ctx.update(kind.update_empty)
    ctx.take_and_restore_snapshot()
    ctx.time = 50
    assert ctx.get() == kind.get_update_empty
    ctx.take_and_restore_snapshot()
    ctx.time = 170
    assert ctx.get() == kind.get_update_empty, "expired state is returned once when not cleaned up"
    assert ctx.get() == kind.empty, "expired state should be cleared on access"


@kinds
def test_expiration_timestamp_overflow(kind: Kind) -> None:
    ctx = Context(kind, config(ttl=LONG_MAX))
    ctx.time = 10
    ctx.update(kind.update_empty)
    ctx.take_and_restore_snapshot()
    ctx.time = 50
    assert ctx.get() == kind.get_update_empty


def multiple_keys(ctx: Context, kind: Kind, time_back_after_restore: bool) -> None:
    """Flink's ``testMultipleStateIds`` over keys; with ``time_back_after_restore`` time goes back after a
    restore, so a value is only gone when the snapshot left it out."""
    ctx.take_and_restore_snapshot()
    ctx.time = 0
    ctx.set_key("id2")
    ctx.update(kind.update_empty)
    ctx.take_and_restore_snapshot()
    ctx.time = 50
    ctx.set_key("id1")
    ctx.update(kind.update_empty)
    ctx.set_key("id2")
    ctx.update(kind.update_unexpired)
    ctx.time = 120
    ctx.take_and_restore_snapshot()
    ctx.set_key("id1")
    assert ctx.get() == kind.get_update_empty
    ctx.set_key("id2")
    assert ctx.get() == kind.get_unexpired
    ctx.take_and_restore_snapshot()
    ctx.time = 170
    ctx.set_key("id2")
    ctx.update(kind.update_expired)
    ctx.time = 230
    ctx.take_and_restore_snapshot()
    ctx.time = 170 if time_back_after_restore else ctx.time
    ctx.set_key("id1")
    assert ctx.get() == kind.empty
    ctx.set_key("id2")
    assert ctx.get() == kind.get_update_expired
    ctx.time = 300
    ctx.take_and_restore_snapshot()
    ctx.time = 230 if time_back_after_restore else ctx.time
    ctx.set_key("id1")
    assert ctx.get() == kind.empty
    ctx.set_key("id2")
    assert ctx.get() == kind.empty


@kinds
def test_multiple_keys(kind: Kind) -> None:
    multiple_keys(Context(kind, config()), kind, False)


@kinds
def test_multiple_keys_with_snapshot_cleanup(kind: Kind) -> None:
    ctx = Context(kind, StateTtlConfig.new_builder(TTL).cleanup_full_snapshot().disable_cleanup_in_background().build())
    multiple_keys(ctx, kind, True)


@kinds
def test_snapshot_change_restore(kind: Kind) -> None:
    ctx = Context(kind, config())
    ctx.time = 0
    ctx.set_key("k1")
    ctx.update(kind.update_empty)
    ctx.time = 50
    ctx.update(kind.update_unexpired)
    ctx.time = 100
    ctx.set_key("k2")
    ctx.update(kind.update_empty)
    snapshot = ctx.take_snapshot()
    ctx.time = 170
    ctx.set_key("k1")
    ctx.update(kind.update_expired)
    ctx.set_key("k2")
    ctx.update(kind.update_unexpired)
    ctx.restore(snapshot)
    ctx.time = 180
    ctx.set_key("k1")
    assert ctx.get() == kind.empty
    ctx.set_key("k2")
    assert ctx.get() == kind.get_update_empty


MERGING = [k for k in KINDS if k.mergeable]


@pytest.mark.parametrize("kind", MERGING, ids=[k.name for k in MERGING])
def test_merge_namespaces(kind: Kind) -> None:
    """As ``testMergeNamespaces``: values written at 0 have expired by the merge at 230, values last written at
    150 have not. A reducing or aggregating value written at 120 and added to at 150 was renewed at 150; list
    elements keep their own times, so those written at 120 expire with them."""
    ctx = Context(kind, config())
    sources = ["ns1", "ns2", "ns3"]

    def write(namespace: str, value: Any) -> None:
        ctx.state.set_current_namespace(namespace)
        ctx.update(value)

    ctx.time = 0
    for namespace in sources:
        write(namespace, kind.update_expired)
    ctx.time = 120
    write("ns1", kind.update_unexpired)
    write("target", kind.update_unexpired)
    ctx.time = 150
    for namespace in ("ns1", "target", "ns2"):
        write(namespace, kind.update_empty)
    ctx.time = 230
    ctx.backend.merge_namespaces(ctx.descriptor, "target", sources)
    ctx.state.set_current_namespace("target")
    merged = ctx.get()
    if kind.name == "list":
        assert sorted(merged) == sorted(kind.update_empty * 3)
    elif kind.name == "reducing":
        assert merged == 2 * (kind.update_unexpired + kind.update_empty) + kind.update_empty
    else:
        assert merged == str(2 * (kind.update_unexpired + kind.update_empty) + kind.update_empty)


@kinds
def test_incremental_cleanup_removes_the_whole_state(kind: Kind) -> None:
    """``cleanup_incrementally(5, True)``: touching keys (one record each) checks 5 entries per record, so
    touching every key once removes every expired entry from storage (``testIncrementalCleanupWholeState``)."""
    ttl_config = StateTtlConfig.new_builder(TTL).cleanup_incrementally(5, True).build()
    keys = [str(i) for i in range(40)]
    ctx = Context(kind, ttl_config)
    ctx.time = 0
    for key in keys:
        ctx.set_key(key)
        ctx.update(kind.update_empty)
    assert ctx.backend.entry_count() == len(keys)
    ctx.time = 120
    for _ in keys:
        ctx.backend.run_record_cleanups()
    assert ctx.backend.entry_count() == 0


def test_incremental_cleanup_on_access_checks_a_few_entries_per_access() -> None:
    ttl_config = StateTtlConfig.new_builder(TTL).cleanup_incrementally(3).build()
    ctx = Context(KINDS[0], ttl_config)
    for key in range(10):
        ctx.set_key(key)
        ctx.update(key + 1)
    ctx.time = 100
    ctx.set_key("other")
    ctx.get()  # one access: three stored entries checked and removed
    assert ctx.backend.entry_count() == 7
    for _ in range(3):
        ctx.get()
    assert ctx.backend.entry_count() == 0


def test_full_snapshot_cleanup_leaves_expired_values_out_of_snapshots_only() -> None:
    full_snapshot = StateTtlConfig.new_builder(TTL).cleanup_full_snapshot().disable_cleanup_in_background()
    ctx = Context(KINDS[1], full_snapshot.build())
    ctx.time = 0
    ctx.update([1, 2])
    ctx.time = 60
    ctx.update([3])
    ctx.time = 100
    data = ctx.backend.snapshot()
    assert [element.user_value for element in data["tables"]["s"][("defaultKey", NAMESPACE)]] == [3]
    assert len(ctx.backend._tables["s"][("defaultKey", NAMESPACE)]) == 3, "the live state is not changed"


def test_without_background_cleanup_expired_values_stay_until_read() -> None:
    ctx = Context(KINDS[0], config())
    ctx.update(1)
    ctx.time = 500
    assert ctx.backend.entry_count() == 1
    assert len(ctx.backend.snapshot()["tables"]["s"]) == 1


def test_config_builder_defaults_and_errors() -> None:
    built = StateTtlConfig.new_builder(Time.seconds(1)).build()
    assert built.get_ttl() == 1000
    assert built.get_update_type() is StateTtlConfig.UpdateType.OnCreateAndWrite
    assert built.get_state_visibility() is StateTtlConfig.StateVisibility.NeverReturnExpired
    strategies = built.get_cleanup_strategies()
    assert strategies.is_cleanup_in_background()
    incremental = strategies.get_incremental_cleanup_strategy()
    assert incremental is not None and incremental.get_cleanup_size() == 5
    assert not incremental.run_cleanup_for_every_record
    disabled = StateTtlConfig.new_builder(10).disable_cleanup_in_background().build().get_cleanup_strategies()
    assert disabled.get_incremental_cleanup_strategy() is None and not disabled.filters_snapshots()
    with pytest.raises(ValueError, match="TTL is expected to be positive"):
        StateTtlConfig.new_builder(0)
    with pytest.raises(ValueError, match="should be positive"):
        StateTtlConfig.new_builder(10).cleanup_incrementally(0, False)
    with pytest.raises(TypeError, match="StateTtlConfig"):
        ValueStateDescriptor("v").enable_time_to_live("1 day")


def test_a_disabled_update_type_turns_ttl_off() -> None:
    descriptor = ValueStateDescriptor("v")
    descriptor.enable_time_to_live(
        StateTtlConfig.new_builder(10).set_update_type(StateTtlConfig.UpdateType.Disabled).build()
    )
    assert descriptor.ttl_config is None


class Remember(KeyedProcessFunction[str, str, str]):
    """Stores every key's element in a value state with a 100 ms TTL and Flink's default cleanup."""

    def open(self, runtime_context: Any) -> None:
        descriptor = ValueStateDescriptor("last")
        descriptor.enable_time_to_live(StateTtlConfig.new_builder(TTL).build())
        self.last = runtime_context.get_state(descriptor)

    def process_element(self, value: str, ctx: Any) -> Any:
        self.last.update(value)


def test_an_operator_sheds_expired_state_in_its_snapshots_and_change_log() -> None:
    """With the default background cleanup, an operator's state shrinks as values expire: its snapshot leaves
    them out (the compaction filter, applied where the Spark runner compacts a shard's log) and every state access
    removes a few, which its change log records as removals (what the Spark runner stores per micro-batch)."""
    operator = KeyedProcessOperator(Remember(), lambda v: v)
    operator.track_changes()
    harness = OneInputOperatorHarness(operator)
    for key in "abcdefgh":
        harness.process_element(key)
    assert operator.state_entries() == 8
    operator.snapshot_state()
    harness.set_processing_time(TTL)
    harness.process_element("z")  # one access: five stored entries checked, all expired
    delta = pickle.loads(operator.snapshot_changes())["keyed_state"]["last"]
    assert len(delta.removed) == 5 and operator.state_entries() == 4
    restored = KeyedProcessOperator(Remember(), lambda v: v)
    restored.restore_state(operator.snapshot_state())
    assert restored.state_entries() == 1  # only "z", written at 100


def test_restoring_ttl_state_with_a_descriptor_without_ttl_fails() -> None:
    """As ``testRestoreTtlAndRegisterNonTtlStateCompatFailure``: state written with TTL cannot be read without."""
    ctx = Context(KINDS[0], config())
    ctx.update(1)
    backend = HeapKeyedStateBackend(ctx.clock.get_current_processing_time)
    backend.restore(pickle.loads(ctx.take_snapshot()))
    with pytest.raises(ValueError, match="holds values with time-to-live"):
        backend.get_partitioned_state(NAMESPACE, ValueStateDescriptor("s"))
    plain = HeapKeyedStateBackend(ctx.clock.get_current_processing_time)
    plain.set_current_key("k")
    plain.get_partitioned_state(NAMESPACE, ValueStateDescriptor("s")).update(1)
    with pytest.raises(ValueError, match="without time-to-live"):
        plain.get_partitioned_state(NAMESPACE, _with_ttl(ValueStateDescriptor("s")))


def _with_ttl(descriptor: StateDescriptor) -> StateDescriptor:
    descriptor.enable_time_to_live(config())
    return descriptor
