"""Hosting one step's operator for one shard of keys (or one partition of a non-keyed stream), one
micro-batch at a time. Pure Python: the Spark glue feeds it rows and stores what it snapshots.

Within a micro-batch the rows are processed in Flink's order at batch granularity (``phases``): rows of phase 0
(produced upstream before this batch's watermark was forwarded), the watermark, rows of phase 1. The host's own
outputs carry the phase they were made in, so a downstream operator sees the order Flink would give it.

In BATCH execution (``batch=True``) the operator is the step's batch one and :meth:`StepHost.process_sorted`
takes all the shard's rows at once and hands them to it through a ``SortedKeyedInput``: by key, then
timestamp, one key at a time, every timer of a key firing when its rows end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

import numpy as np

from panes.datastream.plan import Channel, OneInputTransformation, TwoInputTransformation
from panes.datastream.windowed import WindowSpec
from panes.elements import StreamRecord, Watermark, WatermarkStatus
from panes.operators.base import AbstractStreamOperator, OneInputStreamOperator
from panes.operators.sorted_input import sorted_input_for
from panes.operators.two_input import TwoInputStreamOperator
from panes.spark.layout import Columns, Record
from panes.spark.linear import Step
from panes.spark.shard.phases import P, phase_order, run_phases, timer_result_order
from panes.tags import OutputTag
from panes.time import LONG_MAX, LONG_MIN
from panes.timers.clock import ManualProcessingTimeService
from panes.types.errors import SchemaMismatchError

_record = tuple.__new__
"""Makes a ``Record`` from a tuple of its fields (half the cost of calling ``Record``, once per result)."""


class _Output:
    """Collects what the operator emits as rows; watermarks stay inside (Spark carries them). The main output
    goes straight to the host's :meth:`StepHost.emit_main` (once per result)."""

    def __init__(self, host: StepHost) -> None:
        self._host = host
        self.collect: Callable[[StreamRecord[Any]], None] = host.emit_main

    def collect_side(self, tag: OutputTag[Any], record: StreamRecord[Any]) -> None:
        self._host.emit(tag.tag_id, record)

    def emit_watermark(self, watermark: Watermark) -> None:
        return None

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        return None


class StepHost:
    """A live operator of ``step`` for shard ``shard`` of ``num_shards``.

    ``restore(blob, changes)`` (optional) then ``open()``; ``process(rows, watermark, now)`` per micro-batch;
    ``snapshot()`` gives the whole state to store and, with ``track_changes``, ``changes()`` only what changed
    since the last of either. ``watermark`` is the batch's watermark (``LONG_MIN`` before any).
    """

    def __init__(
        self,
        step: Step,
        shard: int = 0,
        num_shards: int = 1,
        max_parallelism: int = 128,
        track_changes: bool = False,
        batch: bool = False,
    ) -> None:
        transformation = step.transformation
        if not isinstance(transformation, (OneInputTransformation, TwoInputTransformation)):
            raise TypeError(f"step {transformation.name} has no operator to host")
        assert transformation.operator_factory is not None
        self.step = step
        self.shard = shard
        self.clock = ManualProcessingTimeService()
        spec = getattr(transformation, "spec", None)
        if isinstance(spec, WindowSpec):
            # Spark does not promise Flink's cross-key emission order: the lean operator is as exact otherwise
            self.operator: AbstractStreamOperator = spec.create_aligned_operator(batch)
        elif isinstance(transformation, OneInputTransformation):
            self.operator = transformation.factory_for(batch)()
        else:
            self.operator = transformation.operator_factory()
        self.operator.error_tag = transformation.error_tag
        self._own = transformation.id
        self._needed = step.needed_outputs
        self._checked = step.checked_outputs
        self._main_needed = (self._own, None) in self._needed
        self._main_type = self._checked.get((self._own, None))
        self._main_conform = None if self._main_type is None else self._main_type.conformer()
        self.operator.setup(
            _Output(self),
            self.clock,
            task_name=f"{transformation.name} (shard {shard}/{num_shards})",
            subtask_index=shard,
            parallelism=num_shards,
            max_parallelism=max_parallelism,
        )
        if track_changes:
            self.operator.track_changes()
        self._inputs = step.input_of
        self._out: list[Record] = []
        self._phase = 0
        self._counter = 0
        self._current_seq: int | None = None
        self._opened = False

    def restore(self, blob: bytes, changes: Sequence[bytes] = ()) -> None:
        self.operator.restore_state(blob, changes)

    def open(self) -> None:
        if not self._opened:
            self.operator.open()
            self._opened = True

    def snapshot(self) -> bytes:
        return self.operator.snapshot_state()

    def changes(self) -> bytes:
        """What changed since the last :meth:`snapshot` or :meth:`changes` (needs ``track_changes``)."""
        return self.operator.snapshot_changes()

    def close(self) -> None:
        if self._opened:
            self.operator.close()

    # -- output -------------------------------------------------------------------------------------------

    def emit_main(self, record: StreamRecord[Any]) -> None:
        """:meth:`emit` to the main output, its channel's checks worked out beforehand."""
        if not self._main_needed:
            return
        value = record.value
        conform = self._main_conform
        if conform is not None:
            try:
                value = conform(value)
            except SchemaMismatchError:  # the operator reports it (error output, or a failure naming it)
                assert self._main_type is not None
                self.operator.conform_result(record, self._main_type, None)
                return
        self._append((self._own, None), value, record.timestamp)

    def emit(self, tag: str | None, record: StreamRecord[Any]) -> None:
        channel = (self._own, tag)
        if channel not in self._needed:
            return
        value = record.value
        record_type = self._checked.get(channel)
        if record_type is not None:
            try:
                value = record_type.conform(value)
            except SchemaMismatchError:  # the operator reports it (error output, or a failure naming it)
                self.operator.conform_result(record, record_type, tag)
                return
        self._append(channel, value, record.timestamp)

    def _append(self, channel: Channel, value: Any, timestamp: int | None) -> None:
        """A row out: results of an element keep its place in the stream; results of timers follow the host's
        order, ``shard << 40 | n`` with ``n`` counting up.

        The one policy for numbering timer results (here and in ``shards.ColumnarHost``): the number orders a
        result among the rows of its own micro-batch only (rows are sorted by phase, then number, within a batch,
        never across batches), by shard and then in the order the shard emitted. Where ``n`` starts does not
        matter: this host counts from 0 in each life (a new host after a restore or on another worker starts
        again), the columnar host carries its count in its snapshots and through rescaling; both give the same
        order within a micro-batch, so the same output."""
        if self._current_seq is not None:
            order = self._current_seq
        else:
            self._counter += 1
            order = timer_result_order(self.shard, self._counter)
        self._out.append(_record(Record, (channel, value, timestamp, order, self._phase)))

    # -- one micro-batch -------------------------------------------------------------------------------------

    def _feed(self, row: Record) -> None:
        """A row to the (two-input) operator, at the input its channel feeds."""
        operator = cast(TwoInputStreamOperator, self.operator)
        record = StreamRecord(row.value, row.timestamp)
        self._current_seq = row.seq
        if self._inputs[row.channel] == 0:
            operator.process_record1(record)
        else:
            operator.process_record2(record)
        self._current_seq = None

    def advance(self, watermark: int, now: int) -> None:
        """Move the operator to ``watermark`` (when it is ahead) and to processing time ``now``."""
        operator = self.operator
        if watermark > operator.current_watermark():
            if isinstance(operator, TwoInputStreamOperator):
                operator.process_watermark1(Watermark(watermark))
                operator.process_watermark2(Watermark(watermark))
            else:
                operator.process_watermark(Watermark(watermark))
        self.clock.set_current_time(now)
        operator.advance_processing_time(now)

    def process(
        self,
        rows: Iterable[Record],
        watermark: int = LONG_MIN,
        now: int = 0,
        batch: int = 0,
        then: int | None = None,
    ) -> list[Record]:
        """Process one micro-batch of this shard's rows (any order: they are sorted by phase, then seq).

        Rows' phases are read modulo 2; outputs get phase ``2 * batch + phase`` (the bounded Spark path numbers
        its batches this way; streaming batches are all ``batch`` 0). ``then``: a watermark to advance to after
        the rows of phase 1 (a step whose watermark comes with its rows: ``panes.spark.split_watermarks``).
        """
        ordered = sorted(rows, key=lambda row: (row.phase % 2, row.seq))
        early = next((index for index, row in enumerate(ordered) if row.phase % 2), len(ordered))
        if isinstance(self.operator, OneInputStreamOperator):

            def feed(part: list[Record]) -> None:
                self._feed_elements([r.value for r in part], [r.timestamp for r in part], [r.seq for r in part])

        else:

            def feed(part: list[Record]) -> None:
                for row in part:
                    self._feed(row)

        return self._micro_batch((ordered[:early], ordered[early:]), feed, watermark, now, batch, then)

    def process_columns(
        self, rows: Columns, watermark: int = LONG_MIN, now: int = 0, batch: int = 0, then: int | None = None
    ) -> list[Record]:
        """:meth:`process` for a one-input operator (``TypeError`` for others), its rows as columns: no record
        object per row."""
        if not isinstance(self.operator, OneInputStreamOperator):
            raise TypeError(f"{self.operator.task_name} takes two inputs: process its rows as records")
        values, timestamps = rows.values, rows.timestamps

        def feed(part: np.ndarray) -> None:
            indices = part.tolist()
            self._feed_elements(
                [values[i] for i in indices], [timestamps[i] for i in indices], rows.seqs[part].tolist()
            )

        return self._micro_batch(phase_order(rows.phases, rows.seqs), feed, watermark, now, batch, then)

    def _micro_batch(
        self,
        parts: tuple[P, P],
        feed: Callable[[P], None],
        watermark: int,
        now: int,
        batch: int,
        then: int | None = None,
    ) -> list[Record]:
        """One micro-batch in the order of ``phases.run_phases``; what the operator emitted meanwhile."""
        self.open()
        self._out = []
        self.clock.set_current_time(now)

        def feed_at(part: P, phase: int) -> None:
            self._phase = phase
            feed(part)

        def advance_at(mark: int, phase: int) -> None:
            self._phase = phase
            self.advance(mark, now)

        run_phases(parts, feed_at, advance_at, watermark, then, batch)
        out, self._out = self._out, []
        return out

    def _feed_elements(self, values: list[Any], timestamps: list[int | None], seqs: list[int]) -> None:
        """Elements to the (one-input) operator, in their order, each numbering what it makes emit."""
        if values:
            cast(OneInputStreamOperator, self.operator).process_elements(values, timestamps, seqs, self._at)
        self._current_seq = None

    def _at(self, seq: int) -> None:
        """What the operator emits next is numbered ``seq`` (the element it processes)."""
        self._current_seq = seq

    def process_sorted(self, rows: Iterable[Record], now: int = 0) -> list[Record]:
        """BATCH execution: all the shard's rows of a keyed step, processed one key at a time (see the module
        docstring); then the operator is at watermark ``LONG_MAX``. Outputs get phase 1."""
        self.open()
        self._out = []
        self._phase = 1
        self.clock.set_current_time(now)
        sorted_input = sorted_input_for(self.operator)
        assert sorted_input is not None, f"{self.operator.task_name} takes no sorted input"
        for row in sorted(rows, key=lambda row: row.seq):
            sorted_input.add(StreamRecord(row.value, row.timestamp), self._inputs[row.channel])
        sorted_input.drain()
        self.operator.process_watermark(Watermark(LONG_MAX))
        out, self._out = self._out, []
        return out

    def next_event_time_timer(self) -> int | None:
        return self.operator.next_event_time_timer()
