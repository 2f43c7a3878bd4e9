"""Event-time session windows (fixed gap) over batches of columns, with the merging window operator's rules.

State is each key's sessions (sorted, disjoint: ``[start, end, accumulator]``, the window ``[start, end)``)
and a heap of timers, ``FIRE`` at a session's ``max_timestamp()`` and ``CLEANUP`` at ``max_timestamp() +
allowed lateness``; a timer whose session has since merged or grown is stale and skipped. Without allowed
lateness both fall at the same time and one ``FIRE`` timer does both (as Flink's timer set keeps
one timer for the two): the session fires and is cleaned up at once (the cleanup changes no other session, so
the firings and their order are the same as with a cleanup timer after them). Timers follow from
the sessions and the watermark, so snapshots hold only the sessions, and
:meth:`ColumnarSessions.changes` only those of the keys touched since the last snapshot. Two windows merge
when they intersect or touch, as Flink's ``TimeWindow.intersects``.

For a batch at the watermark ``W``, the elements of keys none of whose elements' own windows
``[ts, ts + gap)`` have ended (``ts + gap - 1 > W``) cannot be late nor fire anything: they are grouped with
numpy (sorted by time, a new group wherever the gap between neighbours exceeds ``gap``), each group is
aggregated in element order, then merged with the key's sessions. The elements of the other keys go one
by one in arrival order, exactly as the window operator takes them: merged into the sessions they touch,
late when their window is alone and past cleanup, firing at once when the merged session already ended.

Float sums of sessions that merge several earlier sessions at once may differ in the last bits from
element-by-element evaluation (the accumulators are added in another order); counts, integer sums, minima
and maxima are exact.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import pickle
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from panes.operators.metrics import OperatorCounters
from panes.operators.rescaling import Owner, split_keyed
from panes.state.changes import Changes, apply_delta
from panes.time import LONG_MAX, LONG_MIN, java_add
from panes.windowing.columnar.accumulate import accumulate
from panes.windowing.columnar.aligned import CLEANUP, FIRE
from panes.windowing.columnar.output import ColumnarOutput, Panes
from panes.windowing.columnar.plan import ColumnarWindow
from panes.windowing.rules import cleanup_time, has_ended, have_ended, is_element_late, is_window_late
from panes.windowing.windows import intersect


def key_codes(values: pa.StructArray, key: int) -> tuple[np.ndarray, list[Any]]:
    """Each element's key as an index into the list of distinct keys (in first-seen order)."""
    encoded = values.field(key).dictionary_encode()
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), encoded.dictionary.to_pylist()


Timer = tuple[int, int, int, Any, int]
"""``(time, kind, order, session, start)``: ``FIRE`` or ``CLEANUP`` of the session that started at ``start``
(stale once the session merged, grew or went), ``order`` breaking ties in the order timers were set."""

Session = list[Any]
"""``[start, end, accumulator, key]``: the window ``[start, end)``, its accumulator (``None`` once merged
into another session or cleaned up) and its key (so a timer finds both)."""


class ColumnarSessions:
    """The columnar operator of an event-time session window with a fixed gap (see the module docstring)."""

    def __init__(self, plan: ColumnarWindow) -> None:
        if plan.kind != "session":
            raise ValueError(f"ColumnarSessions runs session windows, not {plan.kind}")
        self.plan = plan
        self.sessions: dict[Any, list[Session]] = {}
        self.timers: list[Timer] = []
        """A heap; with no allowed lateness a firing timer also cleans up."""
        self._cleans_on_fire = plan.lateness == 0
        self._order = itertools.count()
        self.watermark = LONG_MIN
        self.counters = OperatorCounters()
        """``late_dropped`` (kept in snapshots) and ``late_out`` (the host counts what passes in and out:
        ``ColumnarHost``)."""
        self._touched = Changes()

    # -- sessions of one key -----------------------------------------------------------------------------------

    def _cleanup(self, end: int) -> int:
        return cleanup_time(java_add(end, -1), self.plan.lateness)

    def _merge(self, key: Any, start: int, end: int, acc: tuple[Any, ...] | None) -> Session:
        """Merge the window ``[start, end)`` holding ``acc`` (``None``: empty) into ``key``'s sessions."""
        form = self.plan.form
        assert form is not None
        self._touched.replaced(key)
        sessions = self.sessions.get(key)
        if not sessions:  # the key's first open session: nothing to merge with
            session = [start, end, acc, key]
            self.sessions[key] = [session]
            self._schedule(session)
            return session
        # Flink's sweep over the windows sorted by start (TimeWindow.merge_windows), of which only the run that
        # takes the new window changes: the key's sessions did not merge with each other, so the sweep reaches
        # the new window with the session before it alone, and the run goes on while the next one intersects
        low = high = bisect.bisect_right(sessions, start, key=lambda s: s[0])
        cover_start, cover_end = start, end
        if low > 0 and intersect(sessions[low - 1][0], sessions[low - 1][1], start, end):
            low -= 1
            cover_start, cover_end = sessions[low][0], max(sessions[low][1], end)
        while high < len(sessions) and intersect(cover_start, cover_end, sessions[high][0], sessions[high][1]):
            cover_end = max(cover_end, sessions[high][1])
            high += 1
        touched = sessions[low:high]
        merged = acc
        for session in touched:
            merged = session[2] if merged is None else form.merge(session[2], merged)
        start, end = cover_start, cover_end
        for old in touched:
            old[2] = None  # merged away: its timers are stale
        session = [start, end, merged, key]
        sessions[low:high] = [session]
        self._schedule(session)
        return session

    def _schedule(self, session: Session) -> None:
        start, end = session[0], session[1]
        max_ts = java_add(end, -1)
        fires = not has_ended(max_ts, self.watermark)
        if fires:
            heapq.heappush(self.timers, (max_ts, FIRE, next(self._order), session, start))
        if fires and self._cleans_on_fire:
            return  # the firing timer cleans up
        cleanup = self._cleanup(end)
        if cleanup != LONG_MAX:
            heapq.heappush(self.timers, (cleanup, CLEANUP, next(self._order), session, start))

    # -- time ---------------------------------------------------------------------------------------------------

    def next_timer(self) -> int | None:
        while self.timers and not self._valid(self.timers[0]):
            heapq.heappop(self.timers)
        return self.timers[0][0] if self.timers else None

    def _due(self, watermark: int) -> list[Timer]:
        """The timers at or before ``watermark``, taken off the heap in its order: popped one by one while
        they are few next to the heap, else all at once (the rest rebuilt into a heap, the due ones sorted)."""
        timers = self.timers
        due: list[Timer] = []
        while timers and timers[0][0] <= watermark:
            if len(due) * 16 > len(timers):
                rest: list[Timer] = []
                for timer in timers:
                    (due if timer[0] <= watermark else rest).append(timer)
                due.sort()
                heapq.heapify(rest)
                self.timers = rest
                return due
            due.append(heapq.heappop(timers))
        return due

    def _valid(self, timer: Timer) -> bool:
        time, kind, _, session, start = timer
        if session[0] != start or session[2] is None:
            return False
        return (java_add(session[1], -1) if kind == FIRE else self._cleanup(session[1])) == time

    def _clean(self, session: Session) -> None:
        key = session[3]
        sessions = self.sessions.get(key, [])
        self._touched.replaced(key)
        sessions[:] = [s for s in sessions if s is not session]
        if not sessions:
            self.sessions.pop(key, None)
        session[2] = None

    def advance(self, watermark: int) -> ColumnarOutput:
        """Move to ``watermark`` (when ahead), firing and cleaning the sessions whose time it reached."""
        out = ColumnarOutput()
        if watermark <= self.watermark:
            return out
        self.watermark = watermark
        # in firing order, one chunk: results leave as one batch of columns
        keys: list[Any] = []
        starts: list[int] = []
        ends: list[int] = []
        accumulators: list[tuple[Any, ...]] = []
        valid, cleans_on_fire = self._valid, self._cleans_on_fire
        for timer in self._due(watermark):
            if not valid(timer):
                continue
            session = timer[3]
            if timer[1] == FIRE:
                keys.append(session[3])
                starts.append(session[0])
                ends.append(session[1])
                accumulators.append(session[2])
                if cleans_on_fire:
                    self._clean(session)  # no allowed lateness: the firing timer cleans up
            else:
                self._clean(session)
        if keys:
            out.panes.append(Panes.of(self.plan, keys, starts, ends, accumulators, [None] * len(keys)))
        return out

    # -- elements ---------------------------------------------------------------------------------------------

    def process(self, values: pa.StructArray, timestamps: np.ndarray, seqs: np.ndarray) -> ColumnarOutput:
        """Add a batch of elements (in their order) at the current watermark."""
        out = ColumnarOutput()
        count = len(values)
        if count == 0:
            return out
        gap = self.plan.gap
        codes, keys = key_codes(values, self.plan.key)
        # element by element: keys with an element whose window ended, or whose end wraps around past
        # Long.MAX_VALUE (grouping by gaps between timestamps would merge what Flink's rule keeps apart)
        ended = have_ended(timestamps + (gap - 1), self.watermark) | (timestamps > LONG_MAX - gap)
        one_by_one = np.isin(codes, np.unique(codes[ended])) if ended.any() else np.zeros(count, dtype=bool)
        grouped = np.flatnonzero(~one_by_one)
        if grouped.size:
            self._add_groups(values, timestamps, codes, keys, grouped)
        if one_by_one.any():
            self._add_one_by_one(values, timestamps, seqs, codes, keys, np.flatnonzero(one_by_one), out)
        return out

    def _add_groups(
        self, values: pa.StructArray, timestamps: np.ndarray, codes: np.ndarray, keys: list[Any], rows: np.ndarray
    ) -> None:
        gap = self.plan.gap
        code, ts = codes[rows], timestamps[rows]
        order = np.lexsort((ts, code))
        sorted_code, sorted_ts = code[order], ts[order]
        breaks = np.ones(len(order), dtype=bool)
        breaks[1:] = (sorted_code[1:] != sorted_code[:-1]) | (sorted_ts[1:] - sorted_ts[:-1] > gap)
        group_sorted = np.cumsum(breaks) - 1
        groups = np.empty(len(order), dtype=np.int64)
        groups[order] = group_sorted
        firsts = np.flatnonzero(breaks)
        lasts = np.append(firsts[1:] - 1, len(order) - 1)
        accs = accumulate(self.plan.parts, values.take(pa.array(rows)), groups, [None] * len(firsts))
        group_keys = [keys[c] for c in sorted_code[firsts].tolist()]
        group_starts = sorted_ts[firsts].tolist()
        ends = sorted_ts[lasts] + gap  # no wrap: elements whose window end wraps go one by one
        # a group of a key with no open session becomes that session; with no allowed lateness and its end not
        # reached, one firing timer is all it schedules: those timers join the heap together
        fresh = ~have_ended(ends - 1, self.watermark) if self._cleans_on_fire else np.zeros(len(ends), dtype=bool)
        sessions_of, merge, counter = self.sessions, self._merge, self._order
        timers: list[Timer] = []
        self._touched.replaced_all(group_keys)
        for key, start, end, acc, alone in zip(
            group_keys, group_starts, ends.tolist(), accs, fresh.tolist(), strict=True
        ):
            if alone and not sessions_of.get(key):
                session = [start, end, acc, key]
                sessions_of[key] = [session]
                timers.append((end - 1, FIRE, next(counter), session, start))
            else:
                merge(key, start, end, acc)
        self._push_timers(timers)

    def _push_timers(self, timers: list[Timer]) -> None:
        """Add ``timers`` to the heap: one by one when few, else appended and the heap rebuilt (linear)."""
        if len(timers) * 8 < len(self.timers):
            for timer in timers:
                heapq.heappush(self.timers, timer)
        else:
            self.timers.extend(timers)
            heapq.heapify(self.timers)

    def _add_one_by_one(
        self,
        values: pa.StructArray,
        timestamps: np.ndarray,
        seqs: np.ndarray,
        codes: np.ndarray,
        keys: list[Any],
        rows: np.ndarray,
        out: ColumnarOutput,
    ) -> None:
        form, gap, watermark = self.plan.form, self.plan.gap, self.watermark
        assert form is not None
        decoded = self.plan.input_type.decode(values.take(pa.array(rows)))
        late = []
        for row, value in zip(rows.tolist(), decoded, strict=True):
            key = keys[codes[row]]
            ts = int(timestamps[row])
            sessions = self.sessions.get(key, [])
            end = java_add(ts, gap)
            touching = any(intersect(s[0], s[1], ts, end) for s in sessions)
            if not touching and is_window_late(self._cleanup(end), watermark):
                # a late window; the element is late unless its window's end wrapped around the long range
                if is_element_late(ts, self.plan.lateness, watermark):
                    late.append(row)
                continue
            session = self._merge(key, ts, end, None)
            session[2] = form.add(value, form.create_accumulator() if session[2] is None else session[2])
            if has_ended(java_add(session[1], -1), watermark):
                out.panes.append(Panes.of(self.plan, [key], [session[0]], [session[1]], [session[2]], [int(seqs[row])]))
        if late:
            out.late.append(np.array(late, dtype=np.int64))
            if self.plan.late_tag is None:
                self.counters.late_dropped += len(late)
            else:
                self.counters.late_out += len(late)

    # -- state -------------------------------------------------------------------------------------------------

    def timer_count(self) -> int:
        """Pending timers (firing and cleanup; timers of sessions that merged or grew since are not counted)."""
        return sum(1 for timer in self.timers if self._valid(timer))

    def open_panes(self) -> int:
        return sum(len(s) for s in self.sessions.values())

    def snapshot_state(self) -> bytes:
        """The whole state (for :meth:`restore_state`); the next :meth:`snapshot_changes` start from here."""
        self._touched = Changes()
        state = (self.sessions, self.watermark, self.counters.late_dropped)
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def snapshot_changes(self) -> bytes:
        """What changed since the last :meth:`snapshot_state` or :meth:`snapshot_changes`: the sessions of the
        keys touched."""
        changes = (self._touched.take(self.sessions), self.watermark, self.counters.late_dropped)
        return pickle.dumps(changes, protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def rescale_snapshots(cls, snapshots: Sequence[bytes], owner: Owner, count: int) -> list[bytes]:
        """``count`` snapshots holding the sessions of ``snapshots`` (full ones), each key's at its ``owner``
        (``panes.operators.rescaling``), the late records dropped counted once."""
        parts: list[dict[Any, list[Session]]] = [{} for _ in range(count)]
        marks, late = [], 0
        for blob in snapshots:
            sessions, watermark, dropped = pickle.loads(blob)
            marks.append(watermark)
            late += dropped
            for index, piece in enumerate(split_keyed(sessions, lambda key: key, owner, count)):
                parts[index].update(piece)
        watermark = min(marks, default=LONG_MIN)
        return [
            pickle.dumps((part, watermark, late if index == 0 else 0), protocol=pickle.HIGHEST_PROTOCOL)
            for index, part in enumerate(parts)
        ]

    def restore_state(self, snapshot: bytes, changes: Sequence[bytes] = ()) -> None:
        """The state of a :meth:`snapshot_state` followed by the :meth:`snapshot_changes` taken after it."""
        sessions, self.watermark, self.counters.late_dropped = pickle.loads(snapshot)
        self.sessions = dict(sessions)
        for change in changes:
            delta, self.watermark, self.counters.late_dropped = pickle.loads(change)
            apply_delta(self.sessions, delta)
        self.timers = []
        self._order = itertools.count()
        for key_sessions in self.sessions.values():
            for session in key_sessions:
                self._schedule(session)
