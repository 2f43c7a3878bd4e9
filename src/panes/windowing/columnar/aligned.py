"""Tumbling and sliding event-time windows over batches of columns, with the window operator's rules.

State is one table per window start: a :class:`~panes.windowing.columnar.pane_table.PaneTable` for built-in
aggregates (its keys, sorted, and their accumulators as numpy columns: about 40 bytes per open count+sum pane
plus its key), an ``element_table.ElementTable`` for a function of a pane's elements (``process_batch``, a
``ProcessWindowFunction``: ``process_panes``), or an ``accumulator_table.AccumulatorTable`` for a ``reduce``
function or a Python ``AggregateFunction`` (one Python accumulator per pane, folded by ``incremental_panes``,
each batch's values decoded once); and one timer per
window: ``FIRE`` at its ``max_timestamp()``, ``CLEANUP`` at ``max_timestamp() + allowed lateness``. Timers
follow from the windows and the watermark, so snapshots hold only the windows;
:meth:`ColumnarAlignedWindows.snapshot_changes` holds only the panes written and the windows dropped since the
last snapshot. For a batch of elements at the
operator's watermark ``W``, each (element, window) pair is:

- late when the window's cleanup time is ``<= W`` (skipped; an element all of whose windows are skipped is
  a late element when ``timestamp + lateness <= W``: it goes to the late-data output, or is counted as
  dropped);
- *pending* when the window's end is still ahead (``max_timestamp() > W``): pairs are added to their panes
  with numpy, in element order, and the window fires when the watermark reaches it;
- *late but allowed* otherwise: added one element at a time, each firing its pane at once, as Flink's
  ``EventTimeTrigger`` does.

These are exactly the window operator's rules for these windows (see ``panes.windowing.aligned``); tests
compare both on random streams.
"""

from __future__ import annotations

import heapq
import pickle
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from panes.operators.metrics import OperatorCounters
from panes.operators.rescaling import Owner
from panes.time import LONG_MAX, LONG_MIN, java_add
from panes.windowing.assigners.sliding import element_window_starts
from panes.windowing.columnar.accumulator_table import AccumulatorTable
from panes.windowing.columnar.element_table import ElementTable
from panes.windowing.columnar.incremental_panes import Folding
from panes.windowing.columnar.output import ColumnarOutput, PaneColumns, Panes
from panes.windowing.columnar.pane_table import PaneTable, key_array, key_list
from panes.windowing.columnar.plan import ColumnarWindow
from panes.windowing.columnar.process_panes import Fired, PaneCalls
from panes.windowing.observer import PaneTiming, pane_timing
from panes.windowing.rules import cleanup_time, cleanup_times, elements_late, have_ended, windows_late

Table = PaneTable | ElementTable | AccumulatorTable

FIRE = 0
CLEANUP = 1


class ColumnarAlignedWindows:
    """The columnar operator of a tumbling or sliding event-time window (see the module docstring)."""

    def __init__(self, plan: ColumnarWindow) -> None:
        if plan.kind != "aligned":
            raise ValueError(f"ColumnarAlignedWindows runs tumbling and sliding windows, not {plan.kind}")
        self.plan = plan
        self.table: type[PaneTable] | type[ElementTable] | type[AccumulatorTable] = (
            ElementTable if plan.keeps_elements else PaneTable if plan.incremental is None else AccumulatorTable
        )
        """What a window keeps: its panes' accumulators as columns (built-in aggregates), its elements
        (``process_batch``, ``ProcessWindowFunction``), or one Python accumulator per pane (``reduce``, a Python
        ``AggregateFunction``)."""
        self.calls = None if plan.process is None else PaneCalls(plan)
        """What calls a ``ProcessWindowFunction`` (or the window function after a ``reduce`` or a Python
        ``AggregateFunction``) and keeps its keyed state (``process_panes``)."""
        self.folding = None if plan.incremental is None else Folding(plan)
        """What folds elements into panes with a ``reduce`` function or a Python ``AggregateFunction``
        (``incremental_panes``)."""
        self.windows: dict[int, Table] = {}
        self.timers: list[tuple[int, int, int]] = []
        self.scheduled: set[tuple[int, int, int]] = set()
        self.watermark = LONG_MIN
        self.counters = OperatorCounters()
        """``late_dropped`` (kept in snapshots) and ``late_out`` (the host counts what passes in and out:
        ``ColumnarHost``)."""
        self._dropped: set[int] = set()

    # -- time ------------------------------------------------------------------------------------------------

    def _schedule(self, time: int, kind: int, start: int) -> None:
        entry = (time, kind, start)
        if entry not in self.scheduled:
            self.scheduled.add(entry)
            heapq.heappush(self.timers, entry)

    def _schedule_window(self, start: int, cleanup: int) -> None:
        """The timers of the window at ``start``: ``FIRE`` when its end is still ahead of the watermark,
        ``CLEANUP`` unless it is never cleaned up."""
        max_ts = java_add(start, self.plan.size - 1)
        if max_ts > self.watermark:
            self._schedule(max_ts, FIRE, start)
        if cleanup != LONG_MAX:
            self._schedule(cleanup, CLEANUP, start)

    def next_timer(self) -> int | None:
        return self.timers[0][0] if self.timers else None

    def advance(self, watermark: int) -> ColumnarOutput:
        """Move to ``watermark`` (when ahead), firing and cleaning windows whose time it reached."""
        out = ColumnarOutput()
        if watermark <= self.watermark:
            return out
        before, self.watermark = self.watermark, watermark
        size = self.plan.size
        fired: list[tuple[int, Table]] = []
        calls = self.calls
        while self.timers and self.timers[0][0] <= watermark:
            entry = heapq.heappop(self.timers)
            self.scheduled.discard(entry)
            _, kind, start = entry
            if kind == CLEANUP:
                dropped = self.windows.pop(start, None)
                self._dropped.add(start)
                if calls is not None and dropped and calls.needs_cleanup():
                    assert not isinstance(dropped, PaneTable)
                    calls.clean(start, dropped.pane_keys(), watermark)
                continue
            table = self.windows.get(start)
            if table and calls is not None:  # a ProcessWindowFunction's windows, one by one in timer order
                self._call(start, table, watermark, before, -1)
            elif table:
                fired.append((start, table))
        if calls is not None:
            out.records.append(calls.take())
            return out
        if not fired:
            return out
        if self.plan.keeps_elements:
            windows = [(start, table.panes()) for start, table in fired if isinstance(table, ElementTable)]
            self._evaluate(windows, -1, out)
            return out
        for start, table in fired:
            assert isinstance(table, PaneTable)
            count = len(table)
            starts = np.full(count, start, dtype=np.int64)
            ends = np.full(count, java_add(start, size), dtype=np.int64)
            info = self._on_time_info(table, java_add(start, size - 1), before)
            out.panes.append(Panes(table.keys, starts, ends, table.results(), np.full(count, -1, np.int64), info))
        return out

    def _call(
        self, start: int, table: Table, watermark: int, before: int | None, seq: int, rows: np.ndarray | None = None
    ) -> None:
        """Call the window's ``ProcessWindowFunction`` (``PaneCalls``) on the panes of the window at ``start`` that
        fire (``table``'s, or the panes ``rows`` of an ``AccumulatorTable``): with their elements, or with the
        result of their accumulator (``incremental_panes``); ``watermark``, ``before``, ``seq``: as
        ``PaneCalls.fire``."""
        calls = self.calls
        assert calls is not None
        if isinstance(table, AccumulatorTable):
            assert self.folding is not None
            calls.call(start, self.folding.results(start, table, rows), watermark, before, seq)
        else:
            assert isinstance(table, ElementTable)
            calls.fire(start, table.panes(), watermark, before, seq)

    def _on_time_info(self, table: PaneTable, max_ts: int, before: int) -> PaneColumns | None:
        """The pane info of the firing of every pane of ``table`` by its window's end timer, during an advance
        from ``before`` (the window operator's rule: ``pane_info``), recorded; ``None`` when not kept."""
        fired = table.fired
        if fired is None:
            return None
        count = len(table)
        timing = pane_timing(max_ts, max_ts, before, None)  # the default trigger fires a window first at its end
        # last when the advance reaches the window's cleanup too (the window operator's rule, ``WindowStep._closes``)
        last = cleanup_time(max_ts, self.plan.lateness) <= self.watermark
        info = PaneColumns(fired.copy(), np.full(count, timing.value, dtype=object), np.full(count, last))
        if not last:
            table.record_firings(slice(None))
        return info

    def _evaluate(self, windows: list[Fired], seq: int, out: ColumnarOutput) -> None:
        """Add to ``out`` the results of the function over the panes of ``windows`` (each a window's start and its
        elements by pane, ``ElementTable.panes``): a ``ProcessWindowFunction``'s, pane by pane
        (``process_panes``), or a ``process_batch`` function's, in one call; ``seq``: the ordering number of the
        element that fired them (``-1``: a timer)."""
        if self.calls is not None:
            for start, elements in windows:
                self.calls.fire(start, elements, self.watermark, None, seq)
            out.records.append(self.calls.take())
            return
        batch = self.plan.batch
        assert batch is not None
        size = self.plan.size
        keys, values, firsts, starts, ends = [], [], [], [], []
        offset = 0
        for start, (window_keys, window_values, window_firsts) in windows:
            keys.append(window_keys[window_firsts])
            values.append(window_values)
            firsts.append(window_firsts + offset)
            offset += len(window_keys)
            starts.append(np.full(len(window_keys), start, dtype=np.int64))
            ends.append(np.full(len(window_keys), java_add(start, size), dtype=np.int64))
        all_starts, all_ends, panes = np.concatenate(starts), np.concatenate(ends), np.concatenate(firsts)
        results = batch.call_panes(pa.concat_arrays(values), all_starts, all_ends, panes)
        of = results.panes
        seqs = np.full(len(of), seq, np.int64)
        out.panes.append(
            Panes(np.concatenate(keys)[of], all_starts[panes][of], all_ends[panes][of], results.values, seqs)
        )

    # -- elements --------------------------------------------------------------------------------------------

    def process(self, values: pa.StructArray, timestamps: np.ndarray, seqs: np.ndarray) -> ColumnarOutput:
        """Add a batch of elements (in their order) at the current watermark."""
        out = ColumnarOutput()
        count = len(values)
        if count == 0:
            return out
        plan = self.plan
        watermark, lateness, size, slide = self.watermark, plan.lateness, plan.size, plan.slide
        element, start = element_window_starts(timestamps, size, slide, plan.offset, plan.tumbling)
        max_ts = start + (size - 1)
        cleanup = cleanup_times(max_ts, lateness)
        live = ~windows_late(cleanup, watermark)
        # skipped by all its windows (or it has none), and itself late: timestamp + lateness <= watermark (which
        # follows from the former unless a window's end wrapped around the long range)
        skipped = np.bincount(element[live], minlength=count) == 0
        late = np.flatnonzero(skipped & elements_late(timestamps, lateness, watermark))
        if late.size:
            out.late.append(late)
            if plan.late_tag is None:
                self.counters.late_dropped += int(late.size)
            else:
                self.counters.late_out += int(late.size)
        keys = key_array(values.field(plan.key))
        ended = have_ended(max_ts, watermark)
        pending = live & ~ended
        allowed = live & ended
        if self.folding is not None and live.any():  # each element decoded once, for all its windows
            decoded = plan.input_type.decode(values)
            if pending.any():
                self._fold_pending(decoded, element[pending], start[pending], cleanup[pending], keys)
            if allowed.any():
                self._fold_one_by_one(decoded, element[allowed], start[allowed], cleanup[allowed], keys, seqs, out)
            return out
        if pending.any():
            self._add_pending(values, element[pending], start[pending], cleanup[pending], keys)
        if allowed.any():
            self._add_one_by_one(values, element[allowed], start[allowed], cleanup[allowed], keys, seqs, out)
        return out

    def _table(self, start: int, cleanup: int, keys: np.ndarray) -> Table:
        """The panes of the window at ``start``, made (with its timers) when it has none yet."""
        table = self.windows.get(start)
        if table is None:
            table = self.windows[start] = self.table.empty(self.plan, keys.dtype)
            self._schedule_window(start, cleanup)
        return table

    def _add_pending(
        self, values: pa.StructArray, element: np.ndarray, start: np.ndarray, cleanup: np.ndarray, keys: np.ndarray
    ) -> None:
        """Elements of windows still ahead of the watermark: added window by window, in element order."""
        for window in np.unique(start).tolist():
            chosen = start == window
            elements = element[chosen]
            table = self._table(window, int(cleanup[chosen][0]), keys)
            assert not isinstance(table, AccumulatorTable)
            table.add(values.take(pa.array(elements)), keys[elements])

    def _fold_pending(
        self, decoded: list[Any], element: np.ndarray, start: np.ndarray, cleanup: np.ndarray, keys: np.ndarray
    ) -> None:
        """:meth:`_add_pending` for a window that folds its elements (``incremental_panes``): ``decoded`` are the
        batch's values as Python values."""
        folding = self.folding
        assert folding is not None
        for window in np.unique(start).tolist():
            chosen = start == window
            elements = element[chosen]
            table = self._table(window, int(cleanup[chosen][0]), keys)
            assert isinstance(table, AccumulatorTable)
            folding.add(table, window, keys[elements], decoded, elements)

    def _fold_one_by_one(
        self,
        decoded: list[Any],
        element: np.ndarray,
        start: np.ndarray,
        cleanup: np.ndarray,
        keys: np.ndarray,
        seqs: np.ndarray,
        out: ColumnarOutput,
    ) -> None:
        """:meth:`_add_one_by_one` for a window that folds its elements: each element is folded into its pane,
        which fires at once."""
        folding, calls = self.folding, self.calls
        assert folding is not None and calls is not None
        for e, s, c in zip(element.tolist(), start.tolist(), cleanup.tolist(), strict=True):
            table = self._late_table(s, c, keys)
            assert isinstance(table, AccumulatorTable)
            row = folding.add_one(table, s, keys[e : e + 1], decoded[e])
            self._call(s, table, self.watermark, None, int(seqs[e]), np.array([row]))
        out.records.append(calls.take())

    def _add_one_by_one(
        self,
        values: pa.StructArray,
        element: np.ndarray,
        start: np.ndarray,
        cleanup: np.ndarray,
        keys: np.ndarray,
        seqs: np.ndarray,
        out: ColumnarOutput,
    ) -> None:
        """Elements of windows the watermark passed (within the allowed lateness): each fires its pane."""
        if self.plan.keeps_elements:
            self._add_late_elements(values, element, start, cleanup, keys, seqs, out)
            return
        form = self.plan.form
        assert form is not None
        decoded = self.plan.input_type.decode(values.take(pa.array(element)))
        size = self.plan.size
        fired_keys: list[Any] = []
        starts: list[int] = []
        ends: list[int] = []
        accumulators: list[tuple[Any, ...]] = []
        fired_seqs: list[int | None] = []
        infos: list[tuple[int, str, bool]] = []
        watermark = self.watermark
        for value, e, s, c in zip(decoded, element.tolist(), start.tolist(), cleanup.tolist(), strict=True):
            table = self._late_table(s, c, keys)
            assert isinstance(table, PaneTable)
            (row,) = table.rows_of(keys[e : e + 1]).tolist()
            acc = form.add(value, table.get(row))
            table.put(row, acc)
            if table.fired is not None:  # an element's own firing, outside an advance (pane_info's rule)
                index = int(table.fired[row])
                timing = pane_timing(java_add(s, size - 1), watermark, watermark, PaneTiming.LATE if index else None)
                infos.append((index, timing.value, watermark == LONG_MAX))
                if watermark != LONG_MAX:
                    table.record_firings(row)
            fired_keys.append(keys[e])
            starts.append(s)
            ends.append(java_add(s, size))
            accumulators.append(acc)
            fired_seqs.append(int(seqs[e]))
        fired = np.array(fired_keys, dtype=keys.dtype)
        info = None
        if infos:
            indices, timings, lasts = zip(*infos, strict=True)
            info = PaneColumns(np.array(indices, np.int64), np.array(timings, dtype=object), np.array(lasts, bool))
        out.panes.append(Panes.of(self.plan, fired, starts, ends, accumulators, fired_seqs, info))

    def _late_table(self, start: int, cleanup: int, keys: np.ndarray) -> Table:
        """The panes of the window at ``start``, which the watermark passed (made when it has none), with its
        cleanup timer at ``cleanup``."""
        table = self.windows.get(start)
        if table is None:
            table = self.windows[start] = self.table.empty(self.plan, keys.dtype)
        if cleanup != LONG_MAX:
            self._schedule(cleanup, CLEANUP, start)
        return table

    def _add_late_elements(
        self,
        values: pa.StructArray,
        element: np.ndarray,
        start: np.ndarray,
        cleanup: np.ndarray,
        keys: np.ndarray,
        seqs: np.ndarray,
        out: ColumnarOutput,
    ) -> None:
        """:meth:`_add_one_by_one` for a window that keeps elements: each element fires its pane, all of it."""
        for e, s, c in zip(element.tolist(), start.tolist(), cleanup.tolist(), strict=True):
            table = self._late_table(s, c, keys)
            assert isinstance(table, ElementTable)
            table.add(values.slice(e, 1), keys[e : e + 1])
            self._evaluate([(s, table.panes(keys[e]))], int(seqs[e]), out)

    # -- state -------------------------------------------------------------------------------------------------

    def timer_count(self) -> int:
        """Pending timers (firing and cleanup)."""
        return len(self.timers)

    def open_panes(self) -> int:
        return sum(len(table) for table in self.windows.values())

    def snapshot_state(self) -> bytes:
        """The whole state (for :meth:`restore_state`); the next :meth:`snapshot_changes` start from here."""
        self._dropped = set()
        for table in self.windows.values():
            table.clean()
        windows = {start: table.state() for start, table in self.windows.items()}
        state = (windows, self.watermark, self.counters.late_dropped, *self._keyed(snapshot=True))
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def _keyed(self, snapshot: bool) -> tuple[Any, ...]:
        """A ``ProcessWindowFunction``'s keyed state (its snapshot, or its changes), the last item of the
        operator's snapshots and changes (nothing for other functions)."""
        if self.calls is None:
            return ()
        return (self.calls.snapshot() if snapshot else self.calls.changes(),)

    def snapshot_changes(self) -> bytes:
        """What changed since the last :meth:`snapshot_state` or :meth:`snapshot_changes`: the panes written
        (their accumulators now) and the windows dropped."""
        written = {}
        for start, table in self.windows.items():
            changed = table.changes()
            if changed is not None:
                written[start] = changed
        dropped = sorted(self._dropped)
        self._dropped = set()
        changes = (written, dropped, self.watermark, self.counters.late_dropped, *self._keyed(snapshot=False))
        return pickle.dumps(changes, protocol=pickle.HIGHEST_PROTOCOL)

    def rescale_snapshots(self, snapshots: Sequence[bytes], owner: Owner, count: int) -> list[bytes]:
        """``count`` snapshots holding the panes of ``snapshots`` (full ones), each key's at its ``owner``
        (``panes.operators.rescaling``): a window's rows split by key, the late records dropped counted once."""
        parts: list[dict[int, list[Any]]] = [{} for _ in range(count)]
        marks, late, keyed = [], 0, []
        for blob in snapshots:
            windows, watermark, dropped, *rest = pickle.loads(blob)
            keyed.extend(rest)
            marks.append(watermark)
            late += dropped
            for start, state in windows.items():
                keys = state[0]
                owners = owner.of_keys(pa.array(key_list(keys))) if len(keys) else np.empty(0, np.int64)
                for index in np.unique(owners).tolist():
                    part = self.table.state_rows(state, np.flatnonzero(owners == index))
                    parts[index].setdefault(start, []).append(part)
        watermark = min(marks, default=LONG_MIN)
        keyed_parts = PaneCalls.rescaled(keyed, owner, count) if self.calls is not None else None
        blobs = []
        for index, windows_of in enumerate(parts):
            merged = {start: self.table.merged(pieces) for start, pieces in windows_of.items()}
            state = (
                merged,
                watermark,
                late if index == 0 else 0,
                *(() if keyed_parts is None else (keyed_parts[index],)),
            )
            blobs.append(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))
        return blobs

    def restore_state(self, snapshot: bytes, changes: Sequence[bytes] = ()) -> None:
        """The state of a :meth:`snapshot_state` followed by the :meth:`snapshot_changes` taken after it."""
        windows, self.watermark, self.counters.late_dropped, *keyed = pickle.loads(snapshot)
        keyed_changes = []
        plan = self.plan
        self.windows = {start: self.table.of_state(plan, state) for start, state in windows.items()}
        for change in changes:
            written, dropped, self.watermark, self.counters.late_dropped, *keyed_change = pickle.loads(change)
            keyed_changes.extend(keyed_change)
            for start in dropped:
                self.windows.pop(start, None)
            for start, state in written.items():
                table = self.windows.get(start)
                if table is None:
                    self.windows[start] = table = self.table.of_state(plan, state)
                else:
                    table.write(state)
        for table in self.windows.values():
            table.clean()
        if self.calls is not None:
            self.calls.restore(keyed[0] if keyed else None, keyed_changes)
        self.timers, self.scheduled = [], set()
        size, lateness = plan.size, plan.lateness
        for start in self.windows:
            self._schedule_window(start, cleanup_time(java_add(start, size - 1), lateness))
