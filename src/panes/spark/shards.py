"""Hosting a keyed step for one shard of keys, one micro-batch at a time, on Arrow batches in and out.

``shard_host`` picks how: a window that can run on columns (``panes.windowing.columnar``) gets a
:class:`ColumnarHost`, which never makes a Python object per element; every other step gets a
:class:`RecordHost`, which hands the elements to the step's operator one by one (``host.StepHost``). Both
take the rows of a micro-batch in Flink's order at batch granularity (phase 0 rows, the watermark, phase 1
rows; see ``host``), pass on the rows the step does not read, and return rows in the step's output layout.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from panes.datastream.plan import OneInputTransformation, shared_type
from panes.datastream.windowed import WindowSpec
from panes.errors import ErrorRecord, UserFunctionError, located
from panes.operators.base import OneInputStreamOperator
from panes.operators.metrics import OperatorCounters
from panes.operators.rescaling import Owner
from panes.spark.host import StepHost
from panes.spark.layout import (
    ChannelCodes,
    Columns,
    Record,
    channel_mask,
    forwarded_row,
    phase_order,
    read_columns,
    unpack,
)
from panes.spark.linear import Step
from panes.spark.shard_definition import ShardDefinition
from panes.windowing.assigners.base import MissingTimestampError
from panes.windowing.columnar.aligned import ColumnarAlignedWindows
from panes.windowing.columnar.output import ColumnarOutput, emitted, pane_values
from panes.windowing.columnar.plan import ColumnarWindow
from panes.windowing.columnar.sessions import ColumnarSessions
from panes.windowing.implementation import Implementation, columnar_operator


class ShardHost(Protocol):
    counters: OperatorCounters
    """What the step's operator counted (``panes.operators.metrics``); a caller diffs them around ``run``."""

    def run(
        self, batches: list[pa.RecordBatch], watermark: int, now: int, batch: int = 0, then: int | None = None
    ) -> list[pa.RecordBatch]:
        """One micro-batch of the shard: its rows (any layout) in, rows in the output layout out, led by the
        watermark the step forwards (``layout.FORWARDED``). The rows of phase 0 are processed before the operator
        advances to ``watermark``, those of phase 1 after it; then it advances to ``then``, when given (``host``)."""

    def open_panes(self) -> int: ...

    def timer_count(self) -> int: ...

    def snapshot(self) -> bytes:
        """The whole state; what :meth:`changes` returns next starts from here."""

    def changes(self) -> bytes:
        """What changed since the last :meth:`snapshot` or :meth:`changes` (its size follows the work done)."""

    def restore(self, blob: bytes, changes: Sequence[bytes] = ()) -> None:
        """The state of a :meth:`snapshot` followed by the :meth:`changes` taken after it, in order."""

    def open(self) -> None:
        """Open the operator (as the first :meth:`run` does): a restored operator then holds all its state."""

    def rescale(self, snapshots: Sequence[bytes], owner: Owner, count: int) -> list[bytes]:
        """The :meth:`snapshot` of ``count`` shards of this step holding the state of ``snapshots`` (shards'
        snapshots), each key's at its ``owner`` (``panes.operators.rescaling``)."""

    def next_event_time_timer(self) -> int | None: ...

    def next_processing_time_timer(self) -> int | None: ...

    def close(self) -> None: ...


def payload_batches(payloads: Iterable[bytes]) -> list[pa.RecordBatch]:
    return [batch for payload in payloads for batch in unpack(payload)]


def split(
    batches: list[pa.RecordBatch], step: Step, codes: ChannelCodes, shard: int = 0
) -> tuple[list[pa.RecordBatch], list[pa.RecordBatch]]:
    """The rows ``step`` reads, and the rows that pass on (those no step reads here, and those a later step
    reads too). Rows of a broadcast input reach every shard; only shard 0 passes them on."""
    read = codes.codes(step.consumed)
    passthrough = set(step.passthrough)
    if shard != 0 and step.broadcast_input is not None:
        passthrough -= set(step.inputs[step.broadcast_input])
    keep = codes.codes(passthrough)
    mine: list[pa.RecordBatch] = []
    passing: list[pa.RecordBatch] = []
    for batch in batches:
        mask = channel_mask(batch, read)
        if mask.any():
            mine.append(batch if mask.all() else batch.filter(pa.array(mask)))
        passes = ~mask | channel_mask(batch, keep) if keep else ~mask
        if passes.all():
            passing.append(batch)
        elif passes.any():
            passing.append(batch.filter(pa.array(passes)))
    return mine, passing


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
        self.counters = self.operator.counters
        self.name = f"{step.transformation.name} (shard {shard})"

    # -- one micro-batch ---------------------------------------------------------------------------------------

    def run(
        self, batches: list[pa.RecordBatch], watermark: int, now: int, batch: int = 0, then: int | None = None
    ) -> list[pa.RecordBatch]:
        mine, passing = split(batches, self.step, self.codes)
        before = self.operator.watermark
        values, ts, seq, phase, out = self._elements(mine, batch)
        first, second = phase_order(phase, seq, ts if self.batch else None)
        operator = self.operator
        elements = (values, ts, seq)
        try:
            earlier = operator.process(values.take(pa.array(first)), ts[first], seq[first])
            self._emit(out, earlier, elements, first, 2 * batch)
            self._emit(out, operator.advance(watermark), elements, first, 2 * batch)
            later = operator.process(values.take(pa.array(second)), ts[second], seq[second])
            self._emit(out, later, elements, second, 2 * batch + 1)
            if then is not None:
                self._emit(out, operator.advance(then), elements, second, 2 * batch + 1)
        except UserFunctionError as error:  # a process_batch function's
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
                    seqs[timed] = (self.shard << 40) | np.arange(self.counter + 1, self.counter + count + 1)
                    self.counter += count
                results = pane_values(self.plan, panes)
                out.append(self._rows(self.out_code, results, panes.ends - 1, seqs, phase))
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
        return pickle.dumps((self.operator.snapshot_state(), self.counter), protocol=pickle.HIGHEST_PROTOCOL)

    def changes(self) -> bytes:
        return pickle.dumps((self.operator.snapshot_changes(), self.counter), protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, blob: bytes, changes: Sequence[bytes] = ()) -> None:
        snapshot, self.counter = pickle.loads(blob)
        deltas = []
        for change in changes:
            delta, self.counter = pickle.loads(change)
            deltas.append(delta)
        self.operator.restore_state(snapshot, deltas)

    def open(self) -> None:
        return None

    def rescale(self, snapshots: Sequence[bytes], owner: Owner, count: int) -> list[bytes]:
        """The operator's snapshots rescaled; each new shard numbers the results of timers on from the highest
        number an old one reached."""
        states = [pickle.loads(blob) for blob in snapshots]
        counter = max((state[1] for state in states), default=0)
        parts = self.operator.rescale_snapshots([state[0] for state in states], owner, count)
        return [pickle.dumps((part, counter), protocol=pickle.HIGHEST_PROTOCOL) for part in parts]

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


def window_implementation(step: Step) -> Implementation | None:
    """How a keyed window step runs on Spark (``panes.windowing.implementation``; columnar when its inputs share
    one type that allows it); ``None`` for other steps."""
    spec = step.transformation.spec if isinstance(step.transformation, OneInputTransformation) else None
    if not isinstance(spec, WindowSpec):
        return None
    input_type = shared_type(step.types.get(channel) for channel in step.consumed)
    return spec.implementation(exact_order=False, columns=True, input_type=input_type)


def columnar_plan(step: Step) -> ColumnarWindow | None:
    """The columnar form of a keyed window step, when it runs on columns."""
    implementation = window_implementation(step)
    return None if implementation is None else implementation.columnar


def shard_host(definition: ShardDefinition, shard: int, batch: bool = False) -> ShardHost:
    """The host of shard ``shard`` of ``definition``'s step (see the module docstring). In BATCH execution a
    columnar window gives the results of sorted input too: it takes its elements in timestamp order (the keys'
    order does not matter to it), and with all input processed before the final watermark nothing is late."""
    plan = columnar_plan(definition.step)
    if plan is not None:
        return ColumnarHost(definition, plan, shard, batch)
    return RecordHost(definition, shard, batch)
