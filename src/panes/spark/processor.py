"""The streaming host: one ``transformWithStateInPandas`` processor per keyed step, called per shard.

Per shard it keeps the operator's state as a log in a ListState: a full snapshot followed by the changes of
each later call (``ShardHost.changes``), appended, so a micro-batch writes what it changed, not what the
shard holds. When the changes logged since the snapshot outgrow twice the snapshot (plus
:data:`COMPACT_SLACK`), the call writes a new snapshot in place of the log, so the stored bytes stay within
three times the state and the write cost per call stays proportional to its work (amortised); a shard left
holding nothing (no state entries, no timers) writes its (tiny) snapshot in place of the log at once, so the
stored bytes return to almost nothing when the final watermark has fired everything. A ValueState
holds the shard's version and gauges, and one Spark timer is its wake-up:
in event time at the operator's next event-time timer (shifted, see ``codec``); in a query without
watermarks (processing time) at its next processing-time timer. On every call it advances the
operator to Spark's current watermark before handling the batch's rows (``host``), so timers fire and
rows are processed in Flink's order at micro-batch granularity.

Processing time is Spark's batch timestamp, or, when the job's source gives its micro-batches' processing
times (``clocked``), the time of the clock rows every shard receives in each batch (``layout.CLOCK``; kept
in a ValueState for calls without rows, and passed on in the output); a clocked processor registers no
processing-time wake-ups, since every shard is called in every batch.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

from panes.spark.codec import from_spark_watermark, to_spark_time
from panes.spark.failures import carrying_iterators
from panes.spark.layout import CLOCK, ChannelCodes, Layout, clock_of, pack
from panes.spark.linear import Step
from panes.spark.metrics import DDL, Gauges, counters, difference
from panes.spark.shards import ShardHost, payload_batches, shard_host

LOG = StructType([StructField("entry", BinaryType())])
CLOCK_STATE = StructType([StructField("now", LongType())])
META = StructType(
    [StructField(name, LongType()) for name in ("version", "open_panes", "stored_bytes", "snapshot_bytes", "timers")]
)
COMPACT_SLACK = 64 * 1024
"""Bytes of changes a shard may log beyond twice its last snapshot before it writes a new snapshot."""
PAYLOAD_DDL = f"payload BINARY, {DDL}"
"""A keyed step's output: one row per shard and call, its rows (``layout``) as an IPC payload and its
counters (``metrics``)."""

_LIVE: dict[tuple[str, int], tuple[int, ShardHost]] = {}
"""Operators kept alive in this Python worker between micro-batches: (processor, shard) -> (version, host).

A live operator is used only when its version equals the version committed in the state store, so a
replayed batch, a restarted query or another worker's newer state always restores from the store."""


class ShardProcessor(StatefulProcessor):
    """Hosts ``step``'s operator for the shard Spark groups by (see the module docstring)."""

    def __init__(
        self,
        step: Step,
        codes: ChannelCodes,
        layout: Layout,
        num_shards: int,
        max_parallelism: int,
        event_time: bool = True,
        clocked: bool = False,
    ) -> None:
        self.event_time = event_time
        self.clocked = clocked
        self.uid = uuid.uuid4().hex
        self.step = step
        self.codes = codes
        self.layout = layout
        self.num_shards = num_shards
        self.max_parallelism = max_parallelism

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.log = handle.getListState("log", LOG)
        self.meta = handle.getValueState("meta", META)
        self.clock = handle.getValueState("clock", CLOCK_STATE)

    @carrying_iterators
    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[pd.DataFrame]:
        payloads = (payload for frame in rows for payload in frame["payload"].tolist())
        yield self._run(int(key[0]), payload_batches(payloads), timerValues)

    @carrying_iterators
    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:
        yield self._run(int(key[0]), [], timerValues, fired=expiredTimerInfo.getExpiryTimeInMs())

    def _run(
        self, shard: int, batches: list[pa.RecordBatch], timer_values: Any, fired: int | None = None
    ) -> pd.DataFrame:
        watermark = from_spark_watermark(timer_values.getCurrentWatermarkInMs())
        now = max(int(timer_values.getCurrentProcessingTimeInMs()), 0)
        clock: int | None = None
        if self.clocked:
            batches, clock = _without_clock(batches)
            if clock is not None:
                self.clock.update((clock,))
            kept = self.clock.get() if clock is None and self.clock.exists() else None
            now = clock if clock is not None else (0 if kept is None else int(kept[0]))
        meta = self.meta.get() if self.meta.exists() else None
        host = self._host(shard, meta)
        before = Gauges() if meta is None else Gauges(meta[1], meta[4], meta[2])
        counted = host.counters.values()
        out = host.run(batches, watermark, now)
        done = difference(host.counters.values(), counted)
        stored, snapshot = (0, 0) if meta is None else (meta[2], meta[3])
        if (
            meta is None
            or stored - snapshot > 2 * snapshot + COMPACT_SLACK
            or (stored > snapshot and _holds_nothing(host))
        ):
            entry = host.snapshot()
            self.log.put([(entry,)])
            stored = snapshot = len(entry)
        else:
            entry = host.changes()
            self.log.appendValue((entry,))
            stored += len(entry)
        gauges = Gauges(host.open_panes(), host.timer_count(), stored)
        version = random.getrandbits(62)
        self.meta.update((version, gauges.open_panes, stored, snapshot, gauges.timers))
        _LIVE[(self.uid, shard)] = (version, host)
        counts = counters(done, before, gauges, len(entry))
        if self.event_time:
            wake_up = host.next_event_time_timer()
            self._set_wake_up(None if wake_up is None else to_spark_time(wake_up), fired)
        else:
            self._set_wake_up(None if self.clocked else host.next_processing_time_timer(), fired)
        if clock is not None:
            out.append(self.layout.row(ch=CLOCK, ts=clock, seq=0, ph=1))
        frame: pd.DataFrame = pd.DataFrame(
            {"payload": [pack(out, self.layout.schema)], **{name: [value] for name, value in counts.items()}}
        )
        return frame

    def _host(self, shard: int, meta: tuple[int, ...] | None) -> ShardHost:
        """The shard's operator: the live one when it is the committed version, else restored from the log."""
        live = _LIVE.get((self.uid, shard))
        if live is not None and meta is not None and live[0] == meta[0]:
            return live[1]
        host = shard_host(self.step, self.codes, self.layout, shard, self.num_shards, self.max_parallelism)
        if meta is not None:
            entries = [row[0] for row in self.log.get()]
            host.restore(entries[0], entries[1:])
        return host

    def _set_wake_up(self, wanted: int | None, fired: int | None) -> None:
        present = False
        for registered in list(self.handle.listTimers()):
            if registered == wanted:
                present = True
            elif registered != fired:
                self.handle.deleteTimer(registered)
        if wanted is not None and not present:
            self.handle.registerTimer(wanted)

    def close(self) -> None:
        return None


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


def _holds_nothing(host: ShardHost) -> bool:
    """Whether ``host`` keeps no state entry and no timer (its snapshot is as small as it gets)."""
    return host.open_panes() == 0 and host.timer_count() == 0
