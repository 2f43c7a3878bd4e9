"""The streaming host: one ``transformWithStateInPandas`` processor per keyed step, called per shard.

Per shard it keeps the operator's whole snapshot in one ValueState blob and one Spark timer as a wake-up:
in event time at the operator's next event-time timer (shifted, see ``codec``); in a query without
watermarks (processing time) at its next processing-time timer. On every call it advances the
operator to Spark's current watermark before handling the batch's rows (``host``), so timers fire and
rows are processed in Flink's order at micro-batch granularity.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from typing import Any

import pandas as pd
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

from panes.spark.codec import ChannelCodes, dumps, from_spark_watermark, split_payload, to_spark_time
from panes.spark.host import Row, StepHost
from panes.spark.linear import Step

BLOB = StructType([StructField("blob", BinaryType())])
VERSION = StructType([StructField("version", LongType())])

_LIVE: dict[tuple[str, int], tuple[int, StepHost]] = {}
"""Operators kept alive in this Python worker between micro-batches: (processor, shard) -> (version, host).

A live operator is used only when its version equals the version committed in the state store, so a
replayed batch, a restarted query or another worker's newer state always restores from the store."""


def frame(rows: list[Row], codes: ChannelCodes, passing: list[tuple[int, bytes, Any, int, int]]) -> pd.DataFrame:
    data = [(codes.code[c], dumps(v), ts, seq, ph) for c, v, ts, seq, ph in rows] + passing
    columns = list(zip(*data, strict=True)) if data else [(), (), (), (), ()]
    result: pd.DataFrame = pd.DataFrame(
        {
            "ch": pd.array(columns[0], dtype="int32"),
            "v": pd.array(columns[1], dtype=object),
            "ts": pd.array(columns[2], dtype="Int64"),
            "seq": pd.array(columns[3], dtype="int64"),
            "ph": pd.array(columns[4], dtype="int32"),
        }
    )
    return result


class ShardProcessor(StatefulProcessor):
    """Hosts ``step``'s operator for the shard Spark groups by (see the module docstring)."""

    def __init__(
        self, step: Step, codes: ChannelCodes, num_shards: int, max_parallelism: int, event_time: bool = True
    ) -> None:
        self.event_time = event_time
        self.uid = uuid.uuid4().hex
        self.step = step
        self.codes = codes
        self.num_shards = num_shards
        self.max_parallelism = max_parallelism

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.blob = handle.getValueState("operator", BLOB)
        self.version = handle.getValueState("version", VERSION)

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[pd.DataFrame]:
        mine: list[Row] = []
        passing: list[tuple[int, bytes, Any, int, int]] = []
        for pdf in rows:
            for payload in pdf["payload"].tolist():
                split_payload(payload, self.step, self.codes, mine, passing)
        yield self._run(int(key[0]), mine, passing, timerValues)

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:
        yield self._run(int(key[0]), [], [], timerValues, fired=expiredTimerInfo.getExpiryTimeInMs())

    def _run(
        self,
        shard: int,
        mine: list[Row],
        passing: list[tuple[int, bytes, Any, int, int]],
        timer_values: Any,
        fired: int | None = None,
    ) -> pd.DataFrame:
        watermark = from_spark_watermark(timer_values.getCurrentWatermarkInMs())
        now = max(int(timer_values.getCurrentProcessingTimeInMs()), 0)
        host = self._host(shard)
        out = host.process(mine, watermark, now)
        version = random.getrandbits(62)
        self.blob.update((host.snapshot(),))
        self.version.update((version,))
        _LIVE[(self.uid, shard)] = (version, host)
        if self.event_time:
            wake_up = host.next_event_time_timer()
            self._set_wake_up(None if wake_up is None else to_spark_time(wake_up), fired)
        else:
            self._set_wake_up(host.operator.next_processing_time_timer(), fired)
        return frame(out, self.codes, passing)

    def _host(self, shard: int) -> StepHost:
        """The shard's operator: the live one when it is the committed version, else restored from the store."""
        stored_version = self.version.get() if self.version.exists() else None
        live = _LIVE.get((self.uid, shard))
        if live is not None and stored_version is not None and live[0] == stored_version[0]:
            return live[1]
        host = StepHost(self.step, shard, self.num_shards, self.max_parallelism)
        stored = self.blob.get() if self.blob.exists() else None
        if stored is not None:
            host.restore(stored[0])
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
