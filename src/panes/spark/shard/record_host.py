"""A keyed step whose operator takes its elements one by one, as a shard host (``hosts.ShardHost``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa

from panes.operators.base import OneInputStreamOperator
from panes.operators.rescaling import Owner
from panes.spark.layout import Columns, Record, channel_mask, forwarded_row, read_columns
from panes.spark.shard.definition import ShardDefinition
from panes.spark.shard.element_host import StepHost
from panes.spark.shard.routing import split


class RecordHost:
    """A keyed step whose operator takes elements one by one (``StepHost``), for shard ``shard`` of ``definition``."""

    def __init__(self, definition: ShardDefinition, shard: int, batch: bool = False) -> None:
        step = definition.step
        self.step = step
        self.codes = definition.codes
        self.layout = definition.layout
        self.host = StepHost(
            step, shard, definition.num_shards, definition.max_parallelism, track_changes=not batch, batch=batch
        )
        self.shard = shard
        self.counters = self.host.operator.counters

    def run_sorted(self, batches: list[pa.RecordBatch], now: int) -> list[pa.RecordBatch]:
        """BATCH execution: every row of the shard at once, one key at a time (``StepHost.process_sorted``)."""
        return self._run(batches, lambda rows: self.host.process_sorted(rows.records(self.codes), now))

    def run(
        self, batches: list[pa.RecordBatch], watermark: int, now: int, batch: int = 0, then: int | None = None
    ) -> list[pa.RecordBatch]:
        """One micro-batch of the shard: the watermark the operator reached, its output, the rows passing by. A
        one-input operator takes its rows as columns (no record object per row)."""
        before = self.host.operator.current_watermark()
        if isinstance(self.host.operator, OneInputStreamOperator):
            out = self._run(batches, lambda rows: self.host.process_columns(rows, watermark, now, batch, then))
        else:
            out = self._run(
                batches, lambda rows: self.host.process(rows.records(self.codes), watermark, now, batch, then)
            )
        return [forwarded_row(self.layout, before, self.host.operator.current_watermark(), batch), *out]

    def _run(self, batches: list[pa.RecordBatch], process: Callable[[Columns], list[Record]]) -> list[pa.RecordBatch]:
        """The step's rows of ``batches`` through ``process``; its output, then the rows passing by."""
        mine, passing = split(batches, self.step, self.codes, self.shard)
        read = self.codes.codes(self.step.consumed)
        rows = Columns.concat([read_columns(part, self.codes, channel_mask(part, read)) for part in mine])
        out = process(rows)
        return ([self.layout.encode(out)] if out else []) + [self.layout.adapt(b) for b in passing]

    def process_records(self, records: list[Record], watermark: int, now: int, batch: int = 0) -> list[Record]:
        return self.host.process(records, watermark, now, batch)

    def snapshot(self) -> bytes:
        return self.host.snapshot()

    def changes(self) -> bytes:
        return self.host.changes()

    def restore(self, blob: bytes, changes: Sequence[bytes] = ()) -> None:
        self.host.restore(blob, changes)

    def open(self) -> None:
        self.host.open()

    def rescale(self, snapshots: Sequence[bytes], owner: Owner, count: int) -> list[bytes]:
        return type(self.host.operator).rescale_snapshots(snapshots, owner, count)

    def next_event_time_timer(self) -> int | None:
        return self.host.next_event_time_timer()

    def next_processing_time_timer(self) -> int | None:
        timer: int | None = self.host.operator.next_processing_time_timer()
        return timer

    def open_panes(self) -> int:
        return self.host.operator.open_panes()

    def timer_count(self) -> int:
        return self.host.operator.timer_count()

    def close(self) -> None:
        self.host.close()
