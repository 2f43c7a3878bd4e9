"""The rows of a ``ProcessWindowFunction``'s results on the columnar host: Python values out, as the element host
emits them.

The columnar aligned operator calls a ``ProcessWindowFunction`` per pane (``panes.windowing.columnar.
process_panes``); its results and side outputs are Python values. :class:`RecordsOut` turns them into rows of
the step's output layout with the element host's rules: only channels a later step reads are emitted, a value
for a typed channel is conformed to its type first (a value that does not fit fails the step with a
``BadRecordError`` naming it and the type: the columnar form is not planned for a window with an error output),
and results of timers are numbered in the host's order (``element_host.StepHost._append``'s policy).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
        (``counter`` before); ``counters`` counts them (``records_out``, ``side_out``)."""
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
