"""The streaming host: one ``transformWithStateInPandas`` processor per keyed step, called per shard.

Per shard it keeps the operator's state as a log in a ListState: a full snapshot followed by the changes of
each later call, appended, or replaced by a new snapshot when the shard runtime says so (``shard.log``, which owns
that rule); the processor only writes what a call returns. One ValueState, the shard's ``meta`` (:data:`META`),
holds everything else a call reads and writes: the shard's version, gauges and the run that last reported them,
its registered wake-up, and the clock and split tracker below; one ``get`` and one ``update`` a call. One Spark
timer is the shard's wake-up: in event time at the operator's next event-time timer (shifted, see
``watermarks``); in a query without watermarks (processing time) at its next processing-time timer. The meta
remembers the wake-up registered, so a call whose wake-up is unchanged makes no timer call, and one that moves
it deletes the old timer and registers the new one, without listing the timers. On every call it advances the
operator to Spark's current watermark before handling the batch's rows (``shard.phases``), so timers fire and
rows are processed in Flink's order at micro-batch granularity.

The operator itself lives outside the call: in the shard keeper of the task's slot (``keeper``), which keeps
it alive between micro-batches whichever Python worker Spark picks, or, when no keeper can be reached, in this
worker (``shard.runtime``). Either way it is the committed version or is restored from the log.

A step downstream of a Kafka source's own strategy tracks that source's partitions (``split_watermarks``): its
shards advance by the split rows every micro-batch with Kafka records brings to every shard, not by Spark's
watermark; the tracker is kept in the meta's ``tracker``, and such a shard needs a Spark timer only where
Spark's watermark also counts (a step with other inputs too).

Processing time is Spark's batch timestamp, or, when the job's source gives its micro-batches' processing
times (``clocked``), the time of the clock rows every shard receives in each batch (``layout.CLOCK``; kept
in the meta's ``clock`` for calls without rows, and passed on in the output); a clocked processor registers no
processing-time wake-ups, since every shard is called in every batch.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pandas as pd
from pyspark import cloudpickle
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

from panes.spark.failures import carrying_iterators
from panes.spark.keeper_client import keepers_enabled, run_shard
from panes.spark.metrics import DDL, Gauges, counters
from panes.spark.shard.definition import ShardDefinition
from panes.spark.shard.runtime import PIECE, ShardCall, ShardOutcome
from panes.spark.watermarks import ahead, from_spark_watermark, held_back, to_spark_time
from panes.time import LONG_MAX

LOG = StructType([StructField("entry", BinaryType())])
META = StructType(
    [
        *(
            StructField(name, LongType())
            for name in ("version", "open_panes", "stored_bytes", "snapshot_bytes", "timers", "run", "wake_up", "clock")
        ),
        StructField("tracker", BinaryType()),
    ]
)
"""A shard's meta: its version, gauges, stored and snapshot bytes, the run (query start) that wrote it, the Spark
timer registered as its wake-up (``None``: none), the clock time kept (``None``: none yet, or not ``clocked``) and
its split tracker (``None``: none yet, or a step that tracks no splits). State format 6 (``STATE_FORMAT``); before,
the clock and the tracker were ValueStates of their own and the wake-up was read with ``listTimers``."""
PAYLOAD_DDL = f"payload BINARY, {DDL}"
"""A keyed step's output: one row per shard and call, its rows (``layout``) as an IPC payload and its
counters (``metrics``)."""


class ShardProcessor(StatefulProcessor):
    """Hosts the operator of ``definition``'s step for the shard Spark groups by (see the module docstring).

    ``slots``: the task slots of an executor, so the number of shard keepers each keeps (``None``: the
    executor's CPU count); ``keepers=False`` hosts every shard in the worker that runs its task."""

    def __init__(
        self,
        definition: ShardDefinition,
        event_time: bool = True,
        clocked: bool = False,
        slots: int | None = None,
        keepers: bool = True,
    ) -> None:
        self.event_time = event_time
        self.watermark_lag = definition.watermark_lag
        """How far the steps with event time per key before this one hold the watermark back (the sum of their
        ``max_lag`` along the longest path): the operator runs at Spark's watermark minus it, as on the local
        runner, where each such step forwards ``stream watermark - max_lag``."""
        self.clocked = clocked
        self.splits = definition.splits
        """The splits whose watermarks the step tracks (``split_watermarks``; ``None``: Spark's watermark)."""
        self.uid = definition.uid
        self.run = int(self.uid[:15], 16)
        """This query run (a start of the query) as a number: a shard's first call in a run reports its gauges in
        full, the later ones their changes, so a job's totals are the state now also after a restart."""
        self.definition: bytes = cloudpickle.dumps(definition)  # type: ignore[no-untyped-call]
        """The definition as the shards receive it (pickled once, here on the driver)."""
        self.slots = slots
        self.keepers = keepers
        self.generation = 0
        """The generation of the step's shards (``shard.runtime``): raised by a restart that rescales them."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.log = handle.getListState("log", LOG)
        self.meta = handle.getValueState("meta", META)

    @carrying_iterators
    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[pd.DataFrame]:
        payloads = [payload for frame in rows for payload in frame["payload"].tolist()]
        yield self._run(int(key[0]), payloads, timerValues)

    @carrying_iterators
    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:
        yield self._run(int(key[0]), [], timerValues, fired=expiredTimerInfo.getExpiryTimeInMs())

    def _run(self, shard: int, payloads: list[bytes], timer_values: Any, fired: int | None = None) -> pd.DataFrame:
        started = time.perf_counter()
        meta = self.meta.get()  # None when the shard has none yet
        registered = None if meta is None or meta[6] is None else int(meta[6])
        kept = None if meta is None or meta[7] is None else int(meta[7])
        tracked = None if meta is None or meta[8] is None else bytes(meta[8])
        spark_watermark = int(timer_values.getCurrentWatermarkInMs())
        call = ShardCall(
            shard=shard,
            payloads=[payload for payload in payloads if not payload.startswith(PIECE)],
            watermark=held_back(from_spark_watermark(spark_watermark), self.watermark_lag),
            now=max(int(timer_values.getCurrentProcessingTimeInMs()), 0),
            version=None if meta is None else int(meta[0]),
            stored=0 if meta is None else int(meta[2]),
            snapshot=0 if meta is None else int(meta[3]),
            clocked=self.clocked,
            clock=kept if self.clocked else None,
            generation=self.generation,
            pieces=[payload[len(PIECE) :] for payload in payloads if payload.startswith(PIECE)],
            splits=tracked if self.splits is not None else None,
        )
        outcome = run_shard(self._slot(), self.uid, self.definition, call, self._read_log)
        if outcome.snapshot:
            self.log.put([(outcome.entry,)])
        else:
            self.log.appendValue((outcome.entry,))
        wake_up = self._set_wake_up(self._wanted_wake_up(outcome, call.watermark, spark_watermark), registered, fired)
        clock = outcome.clock if outcome.clock is not None else kept
        tracker = outcome.splits if outcome.splits is not None else tracked
        self.meta.update(
            (
                outcome.version,
                outcome.open_panes,
                outcome.stored,
                outcome.snapshot_bytes,
                outcome.timers,
                self.run,
                wake_up,
                clock if self.clocked else None,
                tracker if self.splits is not None else None,
            )
        )
        # the changes since this run's previous report (all of it at a shard's first call of the run)
        before = Gauges() if meta is None or meta[5] != self.run else Gauges(meta[1], meta[4], meta[2])
        gauges = Gauges(outcome.open_panes, outcome.timers, outcome.stored)
        elapsed = round((time.perf_counter() - started) * 1000)
        counts = counters(outcome.done, before, gauges, len(outcome.entry), elapsed)
        frame: pd.DataFrame = pd.DataFrame(
            {"payload": [outcome.payload], **{name: [value] for name, value in counts.items()}}
        )
        return frame

    def _wanted_wake_up(self, outcome: ShardOutcome, watermark: int, spark_watermark: int) -> int | None:
        """The Spark timer the shard wants after a call that advanced its operator to ``watermark`` (Spark's is
        ``spark_watermark``), ``None`` for none (see the module docstring)."""
        if self.event_time and self.splits is not None:
            # the splits move this step's watermark, and their rows reach every shard in every micro-batch with
            # Kafka records; Spark's watermark counts only for its other inputs (then: a wake-up past Spark's own)
            wake_up = outcome.next_event_time
            if self.splits.alone or wake_up is None:
                return None
            return max(to_spark_time(ahead(wake_up, self.watermark_lag)), spark_watermark + 1)
        if self.event_time:
            wake_up = outcome.next_event_time
            if wake_up is not None and watermark < LONG_MAX:
                # a timer registered behind the watermark fires at the next watermark, as in Flink (Spark would
                # never fire a timer at or below the watermark it has passed)
                wake_up = max(wake_up, watermark + 1)
            return None if wake_up is None else to_spark_time(ahead(wake_up, self.watermark_lag))
        return None if self.clocked else outcome.next_processing_time

    def _read_log(self) -> list[bytes]:
        return [row[0] for row in self.log.get()]

    def _slot(self) -> int | None:
        """The keeper slot of this task (its partition modulo the slots), ``None`` when keepers are off."""
        if not self.keepers or not keepers_enabled():
            return None
        from pyspark import TaskContext

        context = TaskContext.get()
        partition = 0 if context is None else context.partitionId()
        return partition % max(1, self.slots or os.cpu_count() or 1)

    def _set_wake_up(self, wanted: int | None, registered: int | None, fired: int | None) -> int | None:
        """Make ``wanted`` the shard's one Spark timer, given the one the meta says is ``registered`` and the one
        that ``fired`` this call (Spark deletes that one once the call returns); returns the timer registered
        now (``None``: none). No timer call when the wake-up is unchanged."""
        if registered is not None and registered == fired:
            registered = None  # Spark deletes it after this call, whatever the call registers
        if wanted == registered:
            return registered
        if registered is not None:
            self.handle.deleteTimer(registered)
        if wanted is None or wanted == fired:
            return None  # (a fired timer registered again would be deleted with the fired one)
        self.handle.registerTimer(wanted)
        return wanted

    def close(self) -> None:
        return None
