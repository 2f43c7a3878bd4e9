"""A keyed window that runs on columns, as a shard host (``hosts.ShardHost``): the shard's elements stay Arrow
columns from the rows in to the rows out, never a Python object per element."""

from __future__ import annotations

import pickle
import pickletools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from panes.errors import ErrorRecord, UserFunctionError, located
from panes.operators.rescaling import Owner
from panes.spark.layout import Record, forwarded_row
from panes.spark.shard.definition import ShardDefinition
from panes.spark.shard.phases import phase_order, run_phases, timer_result_order
from panes.spark.shard.python_results import RecordsOut
from panes.spark.shard.routing import split
from panes.windowing.assigners.base import MissingTimestampError
from panes.windowing.columnar.aligned import ColumnarAlignedWindows
from panes.windowing.columnar.output import ColumnarOutput, emitted, pane_values
from panes.windowing.columnar.plan import ColumnarWindow
from panes.windowing.columnar.sessions import ColumnarSessions
from panes.windowing.implementation import columnar_operator


class ColumnarHost:
    """A window step run by a columnar operator: the shard's elements stay Arrow columns (see the module
    docstring); results and late elements leave as typed columns."""

    def __init__(self, definition: ShardDefinition, plan: ColumnarWindow, shard: int, batch: bool = False) -> None:
        step, codes, layout = definition.step, definition.codes, definition.layout
        self.step = step
        self.batch = batch
        """BATCH execution: elements are taken in timestamp order (arrival order among equal timestamps), the
        order sorted input gives each key's elements on every runner."""
        self.plan = plan
        self.codes = codes
        self.layout = layout
        self.shard = shard
        self.operator: ColumnarAlignedWindows | ColumnarSessions = columnar_operator(plan)
        own = step.transformation.id
        self.out_code = codes.code.get((own, None)) if (own, None) in step.needed_outputs else None
        late = None if plan.late_tag is None else (own, plan.late_tag)
        self.late_code = codes.code[late] if late is not None and late in step.needed_outputs else None
        error_tag = step.transformation.error_tag
        error = None if error_tag is None else (own, error_tag.tag_id)
        self.error_code = codes.code[error] if error is not None and error in step.needed_outputs else None
        self.counter = 0
        """The results of timers this host numbered (``element_host.StepHost._append``'s policy: counted from 0 in
        each life of a host, never stored)."""
        self.counters = self.operator.counters
        self.name = f"{step.transformation.name} (shard {shard})"
        self.records = RecordsOut(step, layout) if plan.process is not None else None
        """Where a ``ProcessWindowFunction``'s Python results go (also the window function's after a ``reduce`` or a
        Python ``AggregateFunction``; ``None`` for other functions)."""

    # -- one micro-batch ---------------------------------------------------------------------------------------

    def run(
        self, batches: list[pa.RecordBatch], watermark: int, now: int, batch: int = 0, then: int | None = None
    ) -> list[pa.RecordBatch]:
        mine, passing = split(batches, self.step, self.codes)
        before = self.operator.watermark
        if isinstance(self.operator, ColumnarAlignedWindows) and self.operator.calls is not None:
            self.operator.calls.now = now
        values, ts, seq, phase, out = self._elements(mine, batch)
        first, second = phase_order(phase, seq, ts if self.batch else None)
        operator = self.operator
        elements = (values, ts, seq)
        fed = [first]  # the part fed last: the indices of the elements a call's late ones refer to

        def feed(part: np.ndarray, phase: int) -> None:
            fed[0] = part
            self._emit(out, operator.process(values.take(pa.array(part)), ts[part], seq[part]), elements, part, phase)

        def advance(mark: int, phase: int) -> None:
            self._emit(out, operator.advance(mark), elements, fed[0], phase)

        try:
            run_phases((first, second), feed, advance, watermark, then, batch)
        except UserFunctionError as error:  # a process_batch, ProcessWindowFunction, reduce or aggregate function's
            raise located(error, self.name) from error.cause
        forwarded = forwarded_row(self.layout, before, operator.watermark, batch)
        return [forwarded, *out, *(self.layout.adapt(b) for b in passing)]

    def _elements(
        self, mine: list[pa.RecordBatch], batch: int
    ) -> tuple[pa.StructArray, np.ndarray, np.ndarray, np.ndarray, list[pa.RecordBatch]]:
        """The elements (values, timestamps, ordering numbers, phases) of the rows the step reads; elements
        without a timestamp are bad records (the error output's rows are returned as the last item)."""
        values, ts, seq, phase = [], [], [], []
        for part in mine:
            codes = part.column("ch").to_numpy(zero_copy_only=False)
            for code in np.unique(codes).tolist():
                rows = part if (codes == code).all() else part.filter(pa.array(codes == code))
                values.append(rows.column(self.codes.column(code)))
                ts.append(rows.column("ts"))
                seq.append(rows.column("seq"))
                phase.append(rows.column("ph"))
        struct_type = self.plan.input_type.arrow_type
        if not values:
            empty = np.empty(0, dtype=np.int64)
            return pa.array([], struct_type), empty, empty, empty.astype(np.int32), []
        all_values = pa.concat_arrays([v.cast(struct_type) if v.type != struct_type else v for v in values])
        all_ts = pa.concat_arrays(ts)
        self.counters.records_in += len(all_values)
        seqs = pa.concat_arrays(seq).to_numpy(zero_copy_only=False)
        phases = pa.concat_arrays(phase).to_numpy(zero_copy_only=False)
        errors: list[pa.RecordBatch] = []
        if all_ts.null_count:
            missing = all_ts.is_null().to_numpy(zero_copy_only=False)
            errors = self._refuse(all_values, seqs, phases, np.flatnonzero(missing), batch)
            keep = pa.array(~missing)
            all_values, all_ts = all_values.filter(keep), all_ts.filter(keep)
            seqs, phases = seqs[~missing], phases[~missing]
        return all_values, all_ts.to_numpy(zero_copy_only=False), seqs, phases, errors

    def _refuse(
        self, values: pa.StructArray, seqs: np.ndarray, phases: np.ndarray, rows: np.ndarray, batch: int
    ) -> list[pa.RecordBatch]:
        error = located(MissingTimestampError(), self.name)
        if self.step.transformation.error_tag is None:
            raise error
        self.counters.error_out += len(rows)
        if self.error_code is None:
            return []
        decoded = self.plan.input_type.decode(values.take(pa.array(rows)))
        records = [
            Record(
                self.codes.channel[self.error_code],
                ErrorRecord.of(error, value, None),
                None,
                int(seqs[i]),
                int(phases[i]),
            )
            for value, i in zip(decoded, rows.tolist(), strict=True)
        ]
        return [self.layout.encode(records)]

    def _emit(
        self,
        out: list[pa.RecordBatch],
        emitted_now: ColumnarOutput,
        elements: tuple[pa.StructArray, np.ndarray, np.ndarray],
        rows: np.ndarray,
        phase: int,
    ) -> None:
        """Add what the operator emitted to ``out``: pane results, and late elements (``rows`` maps the
        indices of the call that made them to ``elements``)."""
        for chunk in emitted_now.panes:
            panes = emitted(self.plan, chunk)
            self.counters.records_out += len(panes)
            if len(panes) and self.out_code is not None:
                seqs = panes.seqs.copy()
                timed = seqs < 0  # fired by a timer: numbered in the host's order (host.StepHost._append's policy)
                if timed.any():
                    count = int(timed.sum())
                    seqs[timed] = timer_result_order(self.shard, np.arange(self.counter + 1, self.counter + count + 1))
                    self.counter += count
                results = pane_values(self.plan, panes)
                out.append(self._rows(self.out_code, results, panes.ends - 1, seqs, phase))
        if self.records is not None:
            for records in emitted_now.records:
                found = self.records.batch(records, self.shard, self.counter, phase, self.counters)
                if found is not None:
                    batch, self.counter = found
                    out.append(batch)
        if self.late_code is not None:
            values, ts, seq = elements
            for indices in emitted_now.late:
                taken = rows[indices]
                late = values.take(pa.array(taken))
                out.append(self._rows(self.late_code, late, ts[taken], seq[taken], phase))

    def _rows(self, code: int, values: pa.Array, ts: Any, seqs: Any, phase: int) -> pa.RecordBatch:
        count = len(values)
        return self.layout.adapt(
            pa.RecordBatch.from_arrays([values], names=[self.codes.column(code)]),
            ch=pa.array(np.full(count, code, dtype=np.int32)),
            ts=pa.array(ts, pa.int64()),
            seq=pa.array(seqs, pa.int64()),
            ph=pa.array(np.full(count, phase, dtype=np.int32)),
        )

    # -- state -------------------------------------------------------------------------------------------------

    def snapshot(self) -> bytes:
        return self.operator.snapshot_state()

    def changes(self) -> bytes:
        return self.operator.snapshot_changes()

    def restore(self, blob: bytes, changes: Sequence[bytes] = ()) -> None:
        self.operator.restore_state(_unwrapped(blob), [_unwrapped(change) for change in changes])

    def open(self) -> None:
        return None

    def rescale(self, snapshots: Sequence[bytes], owner: Owner, count: int) -> list[bytes]:
        return self.operator.rescale_snapshots([_unwrapped(blob) for blob in snapshots], owner, count)

    def next_event_time_timer(self) -> int | None:
        return self.operator.next_timer()

    def next_processing_time_timer(self) -> int | None:
        return None

    def open_panes(self) -> int:
        return self.operator.open_panes()

    def timer_count(self) -> int:
        return self.operator.timer_count()

    def close(self) -> None:
        return None


def _unwrapped(entry: bytes) -> bytes:
    """A log entry as the operator wrote it.

    Earlier versions of this host stored each entry as a pickled pair: the operator's bytes and the host's count of
    timer results. Checkpoints written by them hold such pairs, and are read: a pair is the only entry whose pickle
    begins with a bytes object (the operators' own are tuples of a dict, an Arrow array, ``None`` or a mark), which
    is told from the first opcode alone, so a current entry is not unpickled twice."""
    for opcode, _, _ in pickletools.genops(entry):
        if opcode.name in ("PROTO", "FRAME"):
            continue
        if opcode.name in _BYTES_OPCODES:
            legacy: bytes = pickle.loads(entry)[0]
            return legacy
        return entry
    return entry


_BYTES_OPCODES = frozenset({"SHORT_BINBYTES", "BINBYTES", "BINBYTES8"})
