"""Event-time session windows (fixed gap) over batches of columns, with the merging window operator's rules.

State is every open session as one row of columns, sorted by key id and then start: the key's id (keys are
numbered as they first arrive, through Arrow's hashing, so that finding a key's sessions compares integers;
snapshots hold the keys themselves, as an Arrow column), the window ``[start, end)`` and the accumulator's columns
(``pane_table.new_columns``), held in a :class:`~panes.windowing.columnar.pane_table.PaneTable` whose last
column group is ``[starts, ends]`` (one row per session, so a key has as many rows as open sessions). A key's
sessions are disjoint and do not touch (two windows merge when they intersect or touch, as Flink's
``TimeWindow.intersects``).

Timers follow from the sessions and the watermark, so none are stored: a session has a firing timer at its
``max_timestamp()`` while that is ahead of the watermark (a session made or grown after its end passed fired
at once, as ``EventTimeTrigger`` does, and has none), and a cleanup timer at ``max_timestamp() + allowed
lateness`` (none when that wraps around past ``LONG_MAX``; without allowed lateness the firing timer cleans up,
as Flink's timer set keeps one timer for the two). Moving the watermark from ``W0`` to ``W1`` therefore fires
the sessions with ``W0 < max_timestamp() <= W1``, in the order of their max timestamps, and then drops those
whose cleanup time is ``<= W1``. Snapshots hold the rows, and :meth:`ColumnarSessions.snapshot_changes` the
rows of the keys touched since the last snapshot.

For a batch at the watermark ``W``, the elements of keys none of whose elements' own windows
``[ts, ts + gap)`` have ended (``ts + gap - 1 > W``) cannot be late nor fire anything: they are grouped with
numpy (sorted by key and time, a new group wherever the gap between neighbours exceeds ``gap``), each group's
elements are added to its accumulator in element order, and the groups are merged with the key's sessions
(sorted together by start, a new session wherever a start is after every end before it). The elements of the
other keys go one by one in arrival order, exactly as the window operator takes them: merged into the
sessions they touch, late when their window is alone and past cleanup, firing at once when the merged session
already ended.

Float sums of sessions that merge several earlier sessions at once may differ in the last bits from
element-by-element evaluation (the accumulators are added in another order); counts, integer sums, minima
and maxima are exact.
"""

from __future__ import annotations

import bisect
import pickle
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from panes.operators.metrics import OperatorCounters
from panes.operators.rescaling import Owner
from panes.time import LONG_MAX, LONG_MIN, java_add
from panes.windowing.columnar.output import ColumnarOutput, Panes
from panes.windowing.columnar.pane_table import (
    PaneTable,
    new_columns,
    reduce_runs,
)
from panes.windowing.columnar.plan import ColumnarWindow
from panes.windowing.rules import (
    cleanup_time,
    cleanup_times,
    has_ended,
    have_ended,
    is_element_late,
    is_window_late,
    windows_late,
)
from panes.windowing.windows import intersect, merged_runs

State = tuple[np.ndarray, list[list[np.ndarray]]]
"""Sessions as rows of the table: their key ids and column groups, the last ``[starts, ends]``."""

Stored = tuple[pa.Array, list[list[np.ndarray]]]
"""Sessions as snapshots hold them: their keys (an Arrow column) and column groups."""

Session = list[Any]
"""``[start, end, accumulator]`` of one key's session on the element-by-element path (the accumulator in
Python form, ``panes.functions.aggregates``; ``None`` while it holds nothing)."""


def rows_of_keys(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The rows of ``keys`` (sorted) holding one of ``wanted`` (sorted, distinct), ascending."""
    low = np.searchsorted(keys, wanted, "left")
    counts = np.searchsorted(keys, wanted, "right") - low
    total = int(counts.sum())
    if not total:
        return np.empty(0, dtype=np.int64)
    # range i runs from low[i]; its rows start at output position cumsum(counts)[i] - counts[i]
    return np.repeat(low - (np.cumsum(counts) - counts), counts) + np.arange(total)


def _no_sessions(plan: ColumnarWindow) -> State:
    empty = np.empty(0, dtype=np.int64)
    return empty, [*new_columns(plan, 0), [empty.copy(), empty.copy()]]


def _joined(parts: list[Stored]) -> Stored | None:
    """Stored sessions of distinct keys as one (``None``: none)."""
    if len(parts) <= 1:
        return parts[0] if parts else None
    groups = zip(*(columns for _, columns in parts), strict=True)
    columns = [[np.concatenate(column) for column in zip(*group, strict=True)] for group in groups]
    return pa.concat_arrays([keys for keys, _ in parts]), columns


class ColumnarSessions:
    """The columnar operator of an event-time session window with a fixed gap (see the module docstring)."""

    def __init__(self, plan: ColumnarWindow) -> None:
        if plan.kind != "session":
            raise ValueError(f"ColumnarSessions runs session windows, not {plan.kind}")
        self.plan = plan
        self.table = PaneTable(plan, *_no_sessions(plan))
        """The open sessions (module docstring), their keys as ids (:meth:`_ids`)."""
        self._cleans_on_fire = plan.lateness == 0
        self.watermark = LONG_MIN
        self.counters = OperatorCounters()
        """``late_dropped`` (kept in snapshots) and ``late_out`` (the host counts what passes in and out:
        ``ColumnarHost``)."""
        self._key_type = plan.input_type.arrow_type.field(plan.key).type
        self._keys = pa.array([], self._key_type)
        """Each id's key: key ``i`` at index ``i`` (Arrow finds and takes them, no Python object per key)."""
        self._touched: list[np.ndarray] = []
        """Ids of the keys whose sessions changed since the last snapshot."""

    # -- keys --------------------------------------------------------------------------------------------------

    def _ids(self, column: pa.Array) -> np.ndarray:
        """The id of each element's key, keys not seen before numbered on (Arrow hashes the column's keys and
        looks its distinct ones up among the known ones)."""
        encoded = column.dictionary_encode()
        distinct = encoded.dictionary
        if distinct.type != self._key_type:
            distinct = distinct.cast(self._key_type)
        found = pc.index_in(distinct, value_set=self._keys)
        new = found.is_null().to_numpy(zero_copy_only=False)
        ids = found.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        if new.any():
            ids[new] = len(self._keys) + np.arange(int(new.sum()))
            self._keys = pa.concat_arrays([self._keys, distinct.filter(pa.array(new))])
        found_ids: np.ndarray = ids[encoded.indices.to_numpy(zero_copy_only=False)]
        return found_ids

    def _key_column(self, ids: np.ndarray) -> pa.Array:
        """The keys of ``ids`` as an Arrow column (their type in the input)."""
        return self._keys.take(pa.array(ids, pa.int64()))

    def _forget_gone_keys(self) -> None:
        """Renumber the keys when most ids belong to keys without sessions (called when nothing is touched, so
        that ids live only in the table; renumbering keeps their order)."""
        if len(self._keys) <= 2 * len(self.table) + 1024:
            return
        live = np.unique(self.table.keys)
        self.table.keys = np.searchsorted(live, self.table.keys)
        self._keys = self._keys.take(pa.array(live, pa.int64()))

    # -- the table of sessions -------------------------------------------------------------------------------

    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Every session's start and end."""
        starts, ends = self.table.columns[-1]
        return starts, ends

    def _replace(self, ids: np.ndarray, rows: State) -> None:
        """Make ``rows`` (sorted by key id and start) the sessions of the keys ``ids`` (sorted, distinct;
        ``rows`` holds no other key)."""
        table = self.table
        gone = rows_of_keys(table.keys, ids)
        kept = np.delete(table.keys, gone)
        new_ids, new_columns_ = rows
        at = np.searchsorted(kept, new_ids)
        columns = [
            [np.insert(np.delete(column, gone), at, new) for column, new in zip(fields, news, strict=True)]
            for fields, news in zip(table.columns, new_columns_, strict=True)
        ]
        self.table = PaneTable(self.plan, np.insert(kept, at, new_ids), columns)
        self._touched.append(ids)

    def _drop(self, rows: np.ndarray) -> None:
        """Remove the sessions in ``rows``."""
        table = self.table
        self._touched.append(table.keys[rows])
        columns = [[np.delete(column, rows) for column in fields] for fields in table.columns]
        self.table = PaneTable(self.plan, np.delete(table.keys, rows), columns)

    # -- time ---------------------------------------------------------------------------------------------------

    def _cleanup(self, end: int) -> int:
        return cleanup_time(java_add(end, -1), self.plan.lateness)

    def _timers(self) -> tuple[np.ndarray, np.ndarray]:
        """Each session's firing time (``LONG_MAX``: none pending) and cleanup time (``LONG_MAX``: none)."""
        max_ts = self._bounds()[1] - 1
        fire = np.where(have_ended(max_ts, self.watermark), LONG_MAX, max_ts)
        return fire, cleanup_times(max_ts, self.plan.lateness)

    def next_timer(self) -> int | None:
        fire, cleanup = self._timers()
        due = np.minimum(fire, cleanup)
        due = due[due != LONG_MAX]
        return int(due.min()) if due.size else None

    def advance(self, watermark: int) -> ColumnarOutput:
        """Move to ``watermark`` (when ahead), firing and cleaning the sessions whose time it reached."""
        out = ColumnarOutput()
        if watermark <= self.watermark:
            return out
        before, self.watermark = self.watermark, watermark
        table = self.table
        starts, ends = self._bounds()
        max_ts = ends - 1
        fired = np.flatnonzero(~have_ended(max_ts, before) & have_ended(max_ts, watermark))
        if fired.size:
            fired = fired[np.argsort(max_ts[fired], kind="stable")]  # in firing order, as one chunk
            keys = self._key_column(table.keys[fired])
            out.panes.append(Panes(keys, starts[fired], ends[fired], table.results(fired), np.full(fired.size, -1)))
        cleaned = np.flatnonzero(windows_late(cleanup_times(max_ts, self.plan.lateness), watermark))
        if cleaned.size:
            self._drop(cleaned)
        return out

    # -- elements ---------------------------------------------------------------------------------------------

    def process(self, values: pa.StructArray, timestamps: np.ndarray, seqs: np.ndarray) -> ColumnarOutput:
        """Add a batch of elements (in their order) at the current watermark."""
        out = ColumnarOutput()
        if len(values) == 0:
            return out
        gap = self.plan.gap
        ids = self._ids(values.field(self.plan.key))
        # element by element: keys with an element whose window ended, or whose end wraps around past
        # Long.MAX_VALUE (grouping by gaps between timestamps would merge what Flink's rule keeps apart)
        ended = have_ended(timestamps + (gap - 1), self.watermark) | (timestamps > LONG_MAX - gap)
        one_by_one = np.isin(ids, ids[ended]) if ended.any() else np.zeros(len(ids), dtype=bool)
        grouped = np.flatnonzero(~one_by_one)
        if grouped.size:
            self._add_groups(values.take(pa.array(grouped)), timestamps[grouped], ids[grouped])
        if one_by_one.any():
            self._add_one_by_one(values, timestamps, seqs, ids, np.flatnonzero(one_by_one), out)
        return out

    def _add_groups(self, values: pa.StructArray, timestamps: np.ndarray, ids: np.ndarray) -> None:
        """Elements none of whose windows ended, grouped and merged into their keys' sessions."""
        plan, gap = self.plan, self.plan.gap
        distinct, code = np.unique(ids, return_inverse=True)
        code = code.reshape(-1)
        order = np.lexsort((timestamps, code))
        sorted_code, sorted_ts = code[order], timestamps[order]
        breaks = np.ones(len(order), dtype=bool)
        breaks[1:] = (sorted_code[1:] != sorted_code[:-1]) | (sorted_ts[1:] - sorted_ts[:-1] > gap)
        groups = np.empty(len(order), dtype=np.int64)
        groups[order] = np.cumsum(breaks) - 1
        firsts = np.flatnonzero(breaks)
        lasts = np.append(firsts[1:] - 1, len(order) - 1)
        group_code = sorted_code[firsts]
        bounds = [sorted_ts[firsts], sorted_ts[lasts] + gap]  # no wrap: such elements go one by one
        new = PaneTable(plan, distinct[group_code], [*new_columns(plan, len(firsts)), bounds])
        new.add_to(values, groups)
        table = self.table
        old = rows_of_keys(table.keys, distinct)
        if not old.size:  # no open session of these keys: the groups are their sessions
            self._replace(distinct, (new.keys, new.columns))
            return
        # the keys' sessions and the groups, sorted by key and start, merged by Flink's sweep (no window's end
        # wrapped: groups that would go one by one, and a session whose end wrapped is late unless it touches
        # one that spans the long range)
        both = [
            [np.concatenate([fresh, column[old]]) for fresh, column in zip(a, b, strict=True)]
            for a, b in zip(new.columns, table.columns, strict=True)
        ]
        codes = np.concatenate([group_code, np.searchsorted(distinct, table.keys[old])])
        starts, ends = both[-1]
        order = np.lexsort((starts, codes))
        codes, starts, ends = codes[order], starts[order], ends[order]
        runs = merged_runs(codes, starts, ends)
        accumulators = reduce_runs(plan, [[f[order] for f in fields] for fields in both[:-1]], runs)
        bounds = [starts[runs], np.maximum.reduceat(ends, runs)]
        self._replace(distinct, (distinct[codes[runs]], [*accumulators, bounds]))

    def _add_one_by_one(
        self,
        values: pa.StructArray,
        timestamps: np.ndarray,
        seqs: np.ndarray,
        ids: np.ndarray,
        rows: np.ndarray,
        out: ColumnarOutput,
    ) -> None:
        """Elements ``rows`` (all the elements of their keys) one at a time, as the window operator takes them."""
        plan, gap, watermark = self.plan, self.plan.gap, self.watermark
        form = plan.form
        assert form is not None
        distinct = np.unique(ids[rows])
        sessions = self._python_sessions(distinct)
        decoded = plan.input_type.decode(values.take(pa.array(rows)))
        late = []
        for row, key, value in zip(rows.tolist(), ids[rows].tolist(), decoded, strict=True):
            ts = int(timestamps[row])
            of_key = sessions.setdefault(key, [])
            end = java_add(ts, gap)
            touching = any(intersect(s[0], s[1], ts, end) for s in of_key)
            if not touching and is_window_late(self._cleanup(end), watermark):
                # a late window; the element is late unless its window's end wrapped around the long range
                if is_element_late(ts, plan.lateness, watermark):
                    late.append(row)
                continue
            session = merge_session(of_key, ts, end, form.merge)
            session[2] = form.add(value, form.create_accumulator() if session[2] is None else session[2])
            if has_ended(java_add(session[1], -1), watermark):
                fired = Panes.of(
                    plan, [self._keys[key].as_py()], [session[0]], [session[1]], [session[2]], [int(seqs[row])]
                )
                out.panes.append(fired)
        self._replace(distinct, self._python_rows(distinct, sessions))
        if late:
            out.late.append(np.array(late, dtype=np.int64))
            if plan.late_tag is None:
                self.counters.late_dropped += len(late)
            else:
                self.counters.late_out += len(late)

    def _python_sessions(self, ids: np.ndarray) -> dict[int, list[Session]]:
        """The sessions of the keys ``ids`` (sorted, distinct) in Python form, by key id."""
        table = self.table
        rows = rows_of_keys(table.keys, ids)
        starts, ends = self._bounds()
        found: dict[int, list[Session]] = {}
        for row, key, start, end in zip(
            rows.tolist(), table.keys[rows].tolist(), starts[rows].tolist(), ends[rows].tolist(), strict=True
        ):
            found.setdefault(key, []).append([start, end, table.get(row)])
        return found

    def _python_rows(self, ids: np.ndarray, sessions: dict[int, list[Session]]) -> State:
        """The sessions of the keys ``ids`` (sorted, distinct) from their Python form, as rows."""
        held = [(key, s) for key in ids.tolist() for s in sessions.get(key, [])]
        bounds = [np.array([s[0] for _, s in held], np.int64), np.array([s[1] for _, s in held], np.int64)]
        keys = np.array([key for key, _ in held], dtype=np.int64)
        table = PaneTable(self.plan, keys, [*new_columns(self.plan, len(held)), bounds])
        for row, (_, session) in enumerate(held):
            table.put(row, session[2])
        return table.keys, table.columns

    # -- state -------------------------------------------------------------------------------------------------

    def timer_count(self) -> int:
        """Pending timers: a firing timer while a session's end is ahead, a cleanup timer unless it never comes
        (without allowed lateness, one timer does both)."""
        fire, cleanup = self._timers()
        pending = fire != LONG_MAX
        cleans = cleanup != LONG_MAX
        if self._cleans_on_fire:
            cleans &= ~pending
        return int(pending.sum() + cleans.sum())

    def open_panes(self) -> int:
        return len(self.table)

    def _rows(self, rows: np.ndarray | slice) -> Stored:
        """Sessions ``rows`` with their keys (as an Arrow column), as stored."""
        ids, columns = self.table.state(rows)
        return self._key_column(ids), columns

    def snapshot_state(self) -> bytes:
        """The whole state (for :meth:`restore_state`); the next :meth:`snapshot_changes` start from here."""
        self._touched = []
        self._forget_gone_keys()
        state = (self._rows(slice(None)), self.watermark, self.counters.late_dropped)
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def snapshot_changes(self) -> bytes:
        """What changed since the last :meth:`snapshot_state` or :meth:`snapshot_changes`: the sessions of the
        keys touched, and those of them that have none left."""
        delta = None
        if self._touched:
            ids = np.unique(np.concatenate(self._touched))
            rows = rows_of_keys(self.table.keys, ids)
            delta = (self._key_column(np.setdiff1d(ids, self.table.keys[rows])), self._rows(rows))
        self._touched = []
        self._forget_gone_keys()
        return pickle.dumps((delta, self.watermark, self.counters.late_dropped), protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def rescale_snapshots(cls, snapshots: Sequence[bytes], owner: Owner, count: int) -> list[bytes]:
        """``count`` snapshots holding the sessions of ``snapshots`` (full ones), each key's at its ``owner``
        (``panes.operators.rescaling``), the late records dropped counted once."""
        parts: list[list[Stored]] = [[] for _ in range(count)]
        marks, late = [], 0
        for blob in snapshots:
            (keys, columns), watermark, dropped = pickle.loads(blob)
            marks.append(watermark)
            late += dropped
            owners = owner.of_keys(keys) if len(keys) else np.empty(0, np.int64)
            for index in np.unique(owners).tolist():
                rows = np.flatnonzero(owners == index)
                parts[index].append((keys.take(pa.array(rows)), [[c[rows] for c in fields] for fields in columns]))
        watermark = min(marks, default=LONG_MIN)
        return [
            pickle.dumps((_joined(part), watermark, late if index == 0 else 0), protocol=pickle.HIGHEST_PROTOCOL)
            for index, part in enumerate(parts)
        ]

    def restore_state(self, snapshot: bytes, changes: Sequence[bytes] = ()) -> None:
        """The state of a :meth:`snapshot_state` followed by the :meth:`snapshot_changes` taken after it."""
        stored: Stored | None
        stored, self.watermark, self.counters.late_dropped = pickle.loads(snapshot)
        self._keys = pa.array([], self._key_type)
        self.table = PaneTable(self.plan, *_no_sessions(self.plan))
        if stored is not None:
            self._replace(np.empty(0, np.int64), self._restored(stored))
        for change in changes:
            delta, self.watermark, self.counters.late_dropped = pickle.loads(change)
            if delta is not None:
                gone, stored = delta
                rows = self._restored(stored)
                self._replace(np.union1d(self._ids(gone), rows[0]), rows)
        self._touched = []

    def _restored(self, stored: Stored) -> State:
        """Stored sessions as rows of the table: keys as ids, sorted by id and start."""
        keys, columns = stored
        ids = self._ids(keys)
        rows: State = PaneTable.state_rows((ids, columns), np.lexsort((columns[-1][0], ids)))
        return rows


def merge_session(sessions: list[Session], start: int, end: int, merge: Any) -> Session:
    """Merge the window ``[start, end)`` (empty) into one key's ``sessions`` (sorted, disjoint), as Flink's sweep
    over the windows sorted by start (``TimeWindow.merge_windows``) does: the key's sessions did not merge with
    each other, so only the run that takes the new window changes. The session holding it is returned (its
    accumulator the ``merge`` of those it covers, ``None`` when it covers none)."""
    low = high = bisect.bisect_right(sessions, start, key=lambda s: s[0])
    cover_start, cover_end = start, end
    if low > 0 and intersect(sessions[low - 1][0], sessions[low - 1][1], start, end):
        low -= 1
        cover_start, cover_end = sessions[low][0], max(sessions[low][1], end)
    while high < len(sessions) and intersect(cover_start, cover_end, sessions[high][0], sessions[high][1]):
        cover_end = max(cover_end, sessions[high][1])
        high += 1
    accumulator = None
    for session in sessions[low:high]:
        accumulator = session[2] if accumulator is None else merge(session[2], accumulator)
    merged = [cover_start, cover_end, accumulator]
    sessions[low:high] = [merged]
    return merged
