"""The rows of a ``ProcessWindowFunction``'s results on the columnar host: Python values out, as the element host
emits them.

The columnar aligned operator calls a ``ProcessWindowFunction`` per pane (``panes.windowing.columnar.
process_panes``), or the window function after a ``reduce`` or a Python ``AggregateFunction``; its results and
side outputs are Python values. :class:`RecordsOut` turns them into rows of
the step's output layout with the element host's rules: only channels a later step reads are emitted, a value
for a typed channel is conformed to its type first (a value that does not fit fails the step with a
``BadRecordError`` naming it and the type: the columnar form is not planned for a window with an error output),
and results of timers are numbered in the host's order (``element_host.StepHost._append``'s policy). Results
all on the main output (no side output among them) become its value column at once, the other columns with
numpy; others are encoded row by row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from panes.datastream.plan import Channel
from panes.errors import BadRecordError, located
from panes.operators.metrics import OperatorCounters
from panes.spark.layout import Layout, Record
from panes.spark.linear import Step
from panes.spark.shard.phases import timer_result_order
from panes.types.errors import SchemaMismatchError
from panes.windowing.columnar.process_panes import PaneRecords


class RecordsOut:
    """The rows of a step's ``ProcessWindowFunction`` results (module docstring)."""

    def __init__(self, step: Step, layout: Layout) -> None:
        self.own = step.transformation.id
        self.name = step.transformation.name
        self.needed = step.needed_outputs
        self.conformers = {channel: kind.conformer() for channel, kind in step.checked_outputs.items()}
        """The compiled conformer of each typed output channel (``RecordType.conformer``)."""
        self.types = step.checked_outputs
        self.layout = layout

    def batch(
        self, records: PaneRecords, shard: int, counter: int, phase: int, counters: OperatorCounters
    ) -> tuple[pa.RecordBatch, int] | None:
        """The rows of ``records`` (``None``: none is read), and the host's count of timer results after them
        (``counter`` before); ``counters`` counts them (``records_out``, ``side_out``). Records all on the main
        output (the usual case) become its column at once; others go row by row (:meth:`by_record`)."""
        if records.tags.count(None) != len(records):
            return self.by_record(records, shard, counter, phase, counters)
        count = len(records)
        counters.records_out += count
        channel = (self.own, None)
        if not count or channel not in self.needed:
            return None
        values = records.values
        conform = self.conformers.get(channel)
        if conform is not None:
            try:
                values = [conform(value) for value in values]
            except SchemaMismatchError:
                for value in values:  # the first value that does not fit, reported as row by row
                    self._conformed(conform, channel, value)
                raise
        seqs = np.array(records.seqs, dtype=np.int64)
        timed = seqs < 0
        if timed.any():  # numbered in emission order (``element_host.StepHost._append``'s policy)
            numbers = counter + np.cumsum(timed)
            seqs = np.where(timed, timer_result_order(shard, numbers), seqs)
            counter = int(numbers[-1])
        codes = self.layout.codes
        code = codes.code[channel]
        column = pa.RecordBatch.from_arrays([codes.encode(code, values)], names=[codes.column(code)])
        rows = self.layout.adapt(
            column,
            ch=pa.array(np.full(count, code, dtype=np.int32)),
            ts=pa.array(records.timestamps, pa.int64()),
            seq=pa.array(seqs, pa.int64()),
            ph=pa.array(np.full(count, phase, dtype=np.int32)),
        )
        return rows, counter

    def by_record(
        self, records: PaneRecords, shard: int, counter: int, phase: int, counters: OperatorCounters
    ) -> tuple[pa.RecordBatch, int] | None:
        """:meth:`batch`, row by row (records on side outputs too)."""
        rows: list[Record] = []
        emitted = zip(records.values, records.tags, records.timestamps, records.seqs, strict=True)
        for value, tag, timestamp, seq in emitted:
            if tag is None:
                counters.records_out += 1
            else:
                counters.side_out += 1
            channel = (self.own, tag)
            if channel not in self.needed:
                continue
            conform = self.conformers.get(channel)
            kept = value if conform is None else self._conformed(conform, channel, value)
            if seq < 0:
                counter += 1
            order = timer_result_order(shard, counter) if seq < 0 else seq
            rows.append(Record(channel, kept, timestamp, order, phase))
        if not rows:
            return None
        return self.layout.encode(rows), counter

    def _conformed(self, conform: Callable[[Any], Any], channel: Channel, value: Any) -> Any:
        try:
            return conform(value)
        except SchemaMismatchError as error:
            ddl = self.types[channel].ddl()
            problem = BadRecordError(f"a result of {self.name} does not fit its type {ddl}: {error}")
            raise located(problem, self.name) from error
