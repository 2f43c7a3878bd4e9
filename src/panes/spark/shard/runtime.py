"""Live shards: a keyed step's operators kept alive between micro-batches, one per shard, and one call of a shard.

A streaming keyed step calls each shard once per micro-batch (``processor.ShardProcessor``). The shard's
state is stored in Spark's state store as a log (a snapshot, then the changes of each later call); rebuilding
the operator from that log costs what the shard holds, so the operator is kept alive between calls, under the
*version* the call committed. :class:`LiveShards` holds those operators and runs one call of a shard
(:meth:`LiveShards.run`): with the live operator when its version is the committed one, else with one restored
from the log (a replayed batch, a restarted query, another executor's newer state: never a stale operator).

A version also says which *generation* of the step's shards wrote it: a restart with another number of shards
redistributes the state by key (``panes.spark.rescaling``) and starts a new generation. Its first micro-batch
hands each new shard the *pieces* of the old shards' state that its keys own (:attr:`ShardCall.pieces`); state of
an older generation that a shard still holds under its number is not its state any more and is ignored.

Nothing here touches Spark: the caller reads the committed version and, when asked, the log, and writes what a
call returns. The same :class:`LiveShards` runs inside a Spark Python worker or inside a shard keeper
(``keeper``), the process that keeps a slot's shards alive whichever Python worker Spark hands the task to.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa

from panes.operators.rescaling import Owner
from panes.spark.layout import CLOCK, clock_of, pack, split_rows, splits_of, unpack
from panes.spark.shard import log
from panes.spark.shard.definition import ShardDefinition, load_definition
from panes.spark.shard.hosts import ShardHost, shard_host
from panes.spark.split_watermarks import SplitTracker, effective_watermark, highest_ratings

__all__ = ["PIECE", "LiveShards", "ShardCall", "ShardDefinition", "ShardOutcome", "load_definition"]

GENERATION_SHIFT = 48
"""A version is ``generation << GENERATION_SHIFT`` plus 48 random bits."""
PIECE = b"panes-piece\0"
"""The prefix of a payload that carries a piece of rescaled state (a shard snapshot) instead of rows."""

IDLE_SECONDS = 3600.0
"""A live operator not called for this long is dropped (its state stays in the store; a later call restores)."""


@dataclass(frozen=True)
class ShardCall:
    """One micro-batch of one shard: its rows (Arrow IPC payloads, see ``layout.pack``), the watermark and
    processing time to advance to, and what the state store holds of it: the committed ``version`` (``None``:
    no state yet) and the bytes ``stored`` in its log, ``snapshot`` of them its last snapshot.

    ``clock``: for a step whose processing time comes from clock rows (``layout.CLOCK``), the time kept from an
    earlier call (``None`` before any); the call's own clock rows, if any, override it. ``None`` with
    ``clocked`` false: processing time is ``now``."""

    shard: int
    payloads: list[bytes]
    watermark: int
    now: int
    version: int | None = None
    stored: int = 0
    snapshot: int = 0
    clocked: bool = False
    clock: int | None = None
    generation: int = 0
    pieces: list[bytes] = field(default_factory=list)
    """Pieces of the state of the previous generation's shards that this shard's keys own (its first call of a
    new generation; see the module docstring)."""
    splits: bytes | None = None
    """The shard's split tracker as the last call with split rows left it (``split_watermarks.SplitTracker``;
    ``None`` before any, or for a step that tracks no splits)."""

    @property
    def committed(self) -> int | None:
        """The committed version when it is of this generation (an older one is not this shard's state)."""
        if self.version is None or self.version >> GENERATION_SHIFT != self.generation:
            return None
        return self.version


@dataclass
class ShardOutcome:
    """What one call did: its output rows (one payload), the log entry to store (``snapshot``: a new snapshot
    replacing the log, else changes to append) under the new ``version``, the shard's gauges, what its operator
    counted (``done``, restores included), its next timers, and the clock time it read from its rows."""

    payload: bytes
    entry: bytes
    snapshot: bool
    version: int
    open_panes: int
    timers: int
    stored: int
    snapshot_bytes: int
    done: dict[str, int]
    next_event_time: int | None
    next_processing_time: int | None
    clock: int | None = None
    splits: bytes | None = None
    """The split tracker to keep for the next call, when this call changed it (else ``None``)."""


@dataclass
class _Live:
    version: int
    host: ShardHost
    used: float = field(default_factory=time.monotonic)


class LiveShards:
    """The live operators of the shards called in this process, by (step uid, shard) (module docstring)."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS) -> None:
        self._live: dict[tuple[str, int], _Live] = {}
        self.idle_seconds = idle_seconds

    def __len__(self) -> int:
        return len(self._live)

    def run(self, definition: ShardDefinition, call: ShardCall, read_log: Callable[[], list[bytes]]) -> ShardOutcome:
        """Run ``call`` (see the module docstring); ``read_log`` gives the shard's stored log entries (its
        snapshot first) and is called only when the operator must be restored. An exception leaves no live
        operator behind for the shard (the next call restores the committed state)."""
        self._drop_idle()
        place = (definition.uid, call.shard)
        live = self._live.pop(place, None)
        committed = call.committed
        started = time.perf_counter()
        restored = True
        if call.pieces:
            host = shard_host(definition, call.shard)
            (merged,) = host.rescale(call.pieces, Owner(definition.max_parallelism, 1), 1)
            host.restore(merged)
            committed = None  # a new generation's state: its log starts with a snapshot
        elif live is not None and committed is not None and live.version == committed:
            host, restored = live.host, False
        else:
            host = shard_host(definition, call.shard)
            if committed is None:
                restored = False
            else:
                log.restore(host, read_log())
        seconds = time.perf_counter() - started
        done = {"restores": int(restored), "restore_ms": round(seconds * 1000) if restored else 0}
        outcome = _call(host, definition, call, committed)
        for name, value in done.items():
            outcome.done[name] = outcome.done.get(name, 0) + value
        self._live[place] = _Live(outcome.version, host)
        return outcome

    def adopt(self, definition: ShardDefinition, shard: int, version: int, entries: list[bytes]) -> bool:
        """Hold shard ``shard`` of ``definition``'s step live at ``version``, restored from ``entries`` (the log the
        call that wrote ``version`` left: a snapshot first), as if that call had run here; nothing when an operator
        of the shard is live here already (it may be newer). Whether it was adopted. A later call uses it only if
        ``version`` is the one the store committed, as any live operator (:meth:`run`)."""
        self._drop_idle()
        place = (definition.uid, shard)
        if place in self._live:
            return False
        host = shard_host(definition, shard)
        log.restore(host, entries)
        self._live[place] = _Live(version, host)
        return True

    def forget(self, uid: str, shard: int) -> None:
        self._live.pop((uid, shard), None)

    def _drop_idle(self) -> None:
        oldest = time.monotonic() - self.idle_seconds
        for place in [place for place, live in self._live.items() if live.used < oldest]:
            del self._live[place]


def _call(host: ShardHost, definition: ShardDefinition, call: ShardCall, committed: int | None) -> ShardOutcome:
    """``call`` on ``host`` (live, restored or new): process, then the entry to log (``log.next_entry``; a snapshot
    when nothing of this generation was ``committed`` yet).

    A step that tracks splits processes its rows at the watermark its tracker gave before, then feeds the call's
    split rows to the tracker and advances to what it gives now (``split_watermarks``); shard 0 passes the split
    rows on to the steps after."""
    layout = definition.layout
    batches = [batch for payload in call.payloads for batch in unpack(payload)]
    now = call.now
    clock: int | None = None
    if call.clocked:
        batches, clock = _without_clock(batches)
        found = clock if clock is not None else call.clock
        now = 0 if found is None else found
    watermark, then, tracker = call.watermark, None, None
    ratings: dict[int, int] = {}
    if definition.splits is not None:
        batches, ratings = _without_splits(batches)
        tracker = SplitTracker.of(definition.splits, call.splits)
        lag = definition.watermark_lag
        watermark = effective_watermark(definition.splits, call.watermark, tracker.watermark, lag)
        if ratings:
            tracker.update(ratings, now)
            then = effective_watermark(definition.splits, call.watermark, tracker.watermark, lag)
    counted = host.counters.values()
    out = host.run(batches, watermark, now, then=then)
    after = host.counters.values()
    done = {name: after[name] - counted[name] for name in after}
    entry = log.next_entry(host, committed is None, call.stored, call.snapshot)
    if clock is not None:
        out.append(layout.row(ch=CLOCK, ts=clock, seq=0, ph=1))
    if ratings and call.shard == 0:
        out.append(split_rows(layout, ratings))
    return ShardOutcome(
        payload=pack(out, layout.schema),
        entry=entry.data,
        snapshot=entry.snapshot,
        version=(call.generation << GENERATION_SHIFT) | random.getrandbits(GENERATION_SHIFT),
        open_panes=host.open_panes(),
        timers=host.timer_count(),
        stored=entry.stored,
        snapshot_bytes=entry.snapshot_bytes,
        done=done,
        next_event_time=host.next_event_time_timer(),
        next_processing_time=host.next_processing_time_timer(),
        clock=clock,
        splits=tracker.snapshot() if tracker is not None and ratings else None,
    )


def _without_splits(batches: list[pa.RecordBatch]) -> tuple[list[pa.RecordBatch], dict[int, int]]:
    """``batches`` without their split rows, and the largest rating of each split those carry."""
    kept: list[pa.RecordBatch] = []
    pairs: list[tuple[int, int]] = []
    for batch in batches:
        rest, found = splits_of(batch)
        pairs += found
        if rest.num_rows:
            kept.append(rest)
    return kept, highest_ratings(pairs)


def _without_clock(batches: list[pa.RecordBatch]) -> tuple[list[pa.RecordBatch], int | None]:
    """``batches`` without their clock rows, and the latest time those carry (``None`` without any)."""
    kept: list[pa.RecordBatch] = []
    latest: int | None = None
    for batch in batches:
        rest, clock = clock_of(batch)
        if clock is not None:
            latest = clock if latest is None else max(latest, clock)
        if rest.num_rows:
            kept.append(rest)
    return kept, latest
