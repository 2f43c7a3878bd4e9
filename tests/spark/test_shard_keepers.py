"""A keyed step's live operators stay with their shard: ``LiveShards`` runs a call on the live operator only at
the committed version, and a shard keeper process serves the calls of its slot whichever Python worker sends
them (``panes.spark.keeper``), failing over to the worker when it is lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
from pyspark import cloudpickle

from panes.datastream import StreamEnvironment
from panes.errors import UserFunctionError
from panes.functions import Count
from panes.spark.keeper import address
from panes.spark.keeper_client import Keepers, KeeperStarting, KeeperUnavailable, _connect
from panes.spark.layout import ChannelCodes, Layout, Record, channel_mask, pack, read_records, unpack
from panes.spark.linear import linearize
from panes.spark.shard.definition import ShardDefinition
from panes.spark.shard.runtime import LiveShards, ShardCall, ShardOutcome
from panes.time import LONG_MIN
from panes.windowing import TumblingEventTimeWindows
from tests.spark.processes import keeper_parent, process_table

linux = pytest.mark.skipif(sys.platform != "linux", reason="shard keepers listen on Linux abstract sockets")


class Boom(ValueError):
    """What the step's function raises for a poisoned element."""


def count_or_fail(value: dict[str, Any]) -> str:
    if value["k"] == "poison":
        raise Boom(f"cannot key {value}")
    return str(value["k"])


def definition() -> tuple[ShardDefinition, Layout, Any, Any]:
    """A keyed tumbling-window count (keyed by a function, so its operator takes elements one by one), with
    the layout its input rows come in."""
    env = StreamEnvironment("local")
    source = env.from_collection([], type_info="k STRING, ts BIGINT")
    counts = source.key_by(count_or_fail).window(TumblingEventTimeWindows.of(10)).aggregate(Count())
    counts.print()
    steps = linearize(env.plan())
    codes = ChannelCodes.of_steps(steps)
    (keyed,) = [s for s in steps if s.kind == "keyed"]
    layout = Layout(codes, codes.code)
    return ShardDefinition("job-1", keyed, codes, layout, 1, 128), layout, source, counts


def payload(layout: Layout, source: Any, elements: list[tuple[str, int]], first_seq: int = 1) -> bytes:
    """Rows of the source's elements, processed before the call's watermark (phase 0, see ``host``)."""
    channel = (source.transformation.id, None)
    rows = [Record(channel, {"k": k, "ts": ts}, ts, first_seq + i, 0) for i, (k, ts) in enumerate(elements)]
    return pack([layout.encode(rows)], layout.schema)


def results(outcome: ShardOutcome, definition: ShardDefinition, counts: Any) -> list[Any]:
    channel = (counts.transformation.id, None)
    found = []
    for batch in unpack(outcome.payload):
        for record in read_records(batch, definition.codes, channel_mask(batch, [definition.codes.code[channel]])):
            found.append(record.value)
    return sorted(found)


class Log:
    """What a state store would hold of one shard: its log and committed version."""

    def __init__(self) -> None:
        self.entries: list[bytes] = []
        self.version: int | None = None
        self.stored = self.snapshot = 0
        self.reads = 0

    def read(self) -> list[bytes]:
        self.reads += 1
        return list(self.entries)

    def commit(self, outcome: ShardOutcome) -> None:
        self.entries = [outcome.entry] if outcome.snapshot else [*self.entries, outcome.entry]
        self.version, self.stored, self.snapshot = outcome.version, outcome.stored, outcome.snapshot_bytes

    def call(self, payloads: list[bytes], watermark: int) -> ShardCall:
        return ShardCall(0, payloads, watermark, 0, self.version, self.stored, self.snapshot)


def test_an_adopted_operator_serves_only_the_version_it_was_given_if_the_store_committed_it() -> None:
    shards, other = LiveShards(), LiveShards()
    made, layout, source, counts = definition()
    log = Log()
    first = other.run(made, log.call([payload(layout, source, [("a", 1)])], LONG_MIN), log.read)
    assert shards.adopt(made, 0, first.version, [first.entry])  # what a keeper does with a worker's seed
    assert not shards.adopt(made, 0, first.version, [first.entry])  # held already
    log.commit(first)
    second = shards.run(made, log.call([payload(layout, source, [("a", 3)], 3)], 100), log.read)
    assert second.done["restores"] == 0 and log.reads == 0 and results(second, made, counts) == [2]
    # a seed whose call's state the store never committed (its batch failed): the next call restores instead
    log.commit(second)
    elsewhere = Log()
    stale = LiveShards().run(made, elsewhere.call([payload(layout, source, [("b", 200)], 4)], 100), elsewhere.read)
    shards.forget(made.uid, 0)
    assert shards.adopt(made, 0, stale.version, [stale.entry])
    again = shards.run(made, log.call([payload(layout, source, [("b", 200)], 4)], 100), log.read)
    assert again.done["restores"] == 1 and log.reads == 1


def test_the_live_operator_serves_only_the_committed_version() -> None:
    shards = LiveShards()
    made, layout, source, counts = definition()
    log = Log()
    first = shards.run(made, log.call([payload(layout, source, [("a", 1), ("b", 2)])], LONG_MIN), log.read)
    assert first.snapshot and first.done["restores"] == 0 and log.reads == 0
    log.commit(first)
    second = shards.run(made, log.call([payload(layout, source, [("a", 3)], 3)], LONG_MIN), log.read)
    assert second.done["restores"] == 0 and log.reads == 0  # live, at the committed version
    assert not second.snapshot
    # the second call's state never committed (its task failed, say): the batch is replayed from the log
    replay = shards.run(made, log.call([payload(layout, source, [("a", 3)], 3)], 100), log.read)
    assert replay.done["restores"] == 1 and log.reads == 1
    assert results(replay, made, counts) == [1, 2]  # a: 1 and 3; b: 2, each element once
    log.commit(replay)
    after = shards.run(made, log.call([], 200), log.read)
    assert after.done["restores"] == 0 and log.reads == 1 and results(after, made, counts) == []


@pytest.fixture
def parent() -> Any:
    """A process standing for the executor's Python daemon: the keepers serve it and end with it."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    yield process
    if process.poll() is None:
        process.kill()
        process.wait()


def keeper_pids(parent: int) -> list[int]:
    return [pid for pid, (_, words) in process_table().items() if keeper_parent(words) == parent]


def listening(name: str) -> bool:
    conn = _connect(name)
    if conn is None:
        return False
    conn.close()
    return True


def wait_for(condition: Any, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@linux
def test_a_keeper_keeps_a_shard_alive_for_every_worker_and_ends_with_its_daemon(parent: Any) -> None:
    made, layout, source, counts = definition()
    blob = cloudpickle.dumps(made)
    log = Log()
    one, other = Keepers(parent.pid), Keepers(parent.pid)  # two Python workers of one executor
    try:
        first = one.run(0, made.uid, blob, log.call([payload(layout, source, [("a", 1)])], LONG_MIN), log.read)
        log.commit(first)
        (keeper,) = keeper_pids(parent.pid)
        # the next micro-batch's task lands in the other worker: the keeper still holds the shard
        second = other.run(0, made.uid, blob, log.call([payload(layout, source, [("a", 2)], 2)], 50), log.read)
        assert second.done["restores"] == 0 and log.reads == 0
        assert results(second, made, counts) == [2]
        log.commit(second)
        # the step's own failure comes back as itself; the keeper goes on serving
        poisoned = log.call([payload(layout, source, [("poison", 60)], 3)], 50)
        with pytest.raises(UserFunctionError, match="Boom: cannot key"):
            one.run(0, made.uid, blob, poisoned, log.read)
        again = one.run(0, made.uid, blob, log.call([payload(layout, source, [("b", 61)], 4)], 50), log.read)
        assert again.done["restores"] == 1  # the failed call left no live operator: restored from the log
        assert keeper_pids(parent.pid) == [keeper]
    finally:
        one.close()
        other.close()
    parent.kill()
    parent.wait()
    assert wait_for(lambda: not keeper_pids(parent.pid) and not listening(address(parent.pid, 0))), (
        "the keeper outlived its daemon"
    )


class OneShard:
    """One shard of :func:`definition`'s step, its state store's log, and the calls a Python worker of an executor
    (the process ``parent``) sends through :class:`Keepers` or runs itself."""

    def __init__(self, parent: int) -> None:
        self.made, self.layout, self.source, self.counts = definition()
        self.blob = cloudpickle.dumps(self.made)
        self.log = Log()
        self.worker = Keepers(parent)

    def call(self, elements: list[tuple[str, int]], first_seq: int, watermark: int) -> ShardCall:
        return self.log.call([payload(self.layout, self.source, elements, first_seq)] if elements else [], watermark)

    def in_keeper(self, call: ShardCall, wait: bool = True) -> ShardOutcome:
        return self.worker.run(0, self.made.uid, self.blob, call, self.log.read, wait=wait)

    def in_worker(self, call: ShardCall) -> ShardOutcome:
        """What a worker does when no keeper takes the call: it runs here, from the committed state."""
        from panes.spark import keeper_client

        return keeper_client.run_shard(None, self.made.uid, self.blob, call, self.log.read)

    def results(self, outcome: ShardOutcome) -> list[Any]:
        return results(outcome, self.made, self.counts)


@linux
def test_a_lost_keeper_costs_a_restore_not_a_wrong_answer(parent: Any) -> None:
    shard = OneShard(parent.pid)
    try:
        shard.log.commit(shard.in_keeper(shard.call([("a", 1)], 1, LONG_MIN)))
        (keeper,) = keeper_pids(parent.pid)
        os.kill(keeper, signal.SIGKILL)
        assert wait_for(lambda: not keeper_pids(parent.pid) and not listening(address(parent.pid, 0)))
        call = shard.call([("a", 2)], 2, 50)
        with pytest.raises(KeeperUnavailable):
            shard.in_keeper(call)
        here = shard.in_worker(call)
        assert here.done["restores"] == 1 and shard.results(here) == [2]
        shard.log.commit(here)
        # the next call starts a new keeper, which restores once and then keeps the shard
        later = shard.in_keeper(shard.call([("a", 60)], 3, 50))
        assert later.done["restores"] == 1
        shard.log.commit(later)
        last = shard.in_keeper(shard.call([], 4, 100))
        assert last.done["restores"] == 0 and shard.results(last) == [1]
    finally:
        shard.worker.close()


@linux
def test_a_shard_without_state_runs_in_the_worker_while_its_keeper_starts(parent: Any) -> None:
    shard = OneShard(parent.pid)
    try:
        first = shard.call([("a", 1)], 1, LONG_MIN)
        # the keeper is started, and a call without state does not wait for it: it runs in the worker
        with pytest.raises(KeeperStarting, match="is starting"):
            shard.in_keeper(first, wait=False)
        assert keeper_pids(parent.pid)
        here = shard.in_worker(first)
        assert here.snapshot and here.done["restores"] == 0 and shard.log.reads == 0
        # which hands the keeper what the call wrote: the keeper holds the shard at that version
        assert shard.worker.seed(0, shard.made.uid, shard.blob, 0, here.version, [here.entry])
        assert not shard.worker.seed(0, shard.made.uid, shard.blob, 0, here.version, [here.entry])  # held already
        shard.log.commit(here)
        later = shard.in_keeper(shard.call([("a", 2)], 2, 50), wait=False)
        assert later.done["restores"] == 0 and shard.log.reads == 0 and shard.results(later) == [2]
    finally:
        shard.worker.close()
