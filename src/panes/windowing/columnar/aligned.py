"""Tumbling and sliding event-time windows over batches of columns, with the window operator's rules.

State is one dict per window start (key -> accumulator) and one timer per window: ``FIRE`` at its
``max_timestamp()``, ``CLEANUP`` at ``max_timestamp() + allowed lateness``. Timers follow from the windows and
the watermark, so snapshots hold only the windows; :meth:`ColumnarAlignedWindows.changes` holds only the
panes written and the windows dropped since the last snapshot. For a batch of elements at the
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
from typing import Any

import numpy as np
import pyarrow as pa

from panes.operators.metrics import OperatorCounters
from panes.time import LONG_MAX, LONG_MIN, java_add
from panes.windowing.cleanup import cleanup_time
from panes.windowing.columnar.accumulate import accumulate
from panes.windowing.columnar.output import ColumnarOutput, Panes
from panes.windowing.columnar.plan import ColumnarWindow

FIRE = 0
CLEANUP = 1


def key_codes(values: pa.StructArray, key: int) -> tuple[np.ndarray, list[Any]]:
    """Each element's key as an index into the list of distinct keys (in first-seen order)."""
    encoded = values.field(key).dictionary_encode()
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), encoded.dictionary.to_pylist()


class ColumnarAlignedWindows:
    """The columnar operator of a tumbling or sliding event-time window (see the module docstring)."""

    def __init__(self, plan: ColumnarWindow) -> None:
        if plan.kind != "aligned":
            raise ValueError(f"ColumnarAlignedWindows runs tumbling and sliding windows, not {plan.kind}")
        self.plan = plan
        self.windows: dict[int, dict[Any, tuple[Any, ...]]] = {}
        self.timers: list[tuple[int, int, int]] = []
        self.scheduled: set[tuple[int, int, int]] = set()
        self.watermark = LONG_MIN
        self.counters = OperatorCounters()
        """``late_dropped`` (kept in snapshots) and ``late_out`` (the host counts what passes in and out:
        ``ColumnarHost``)."""
        self._written: set[tuple[int, Any]] = set()
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
        self.watermark = watermark
        size = self.plan.size
        while self.timers and self.timers[0][0] <= watermark:
            entry = heapq.heappop(self.timers)
            self.scheduled.discard(entry)
            _, kind, start = entry
            if kind == CLEANUP:
                self.windows.pop(start, None)
                self._dropped.add(start)
                continue
            panes = self.windows.get(start)
            if panes:
                count = len(panes)
                end = java_add(start, size)
                out.panes.append(
                    Panes(list(panes), [start] * count, [end] * count, list(panes.values()), [None] * count)
                )
        return out

    # -- elements --------------------------------------------------------------------------------------------

    def process(self, values: pa.StructArray, timestamps: np.ndarray, seqs: np.ndarray) -> ColumnarOutput:
        """Add a batch of elements (in their order) at the current watermark."""
        out = ColumnarOutput()
        count = len(values)
        if count == 0:
            return out
        plan = self.plan
        watermark, lateness, size, slide = self.watermark, plan.lateness, plan.size, plan.slide
        # int64 arithmetic wraps around as Java's long does (TimeWindow.getWindowStartWithOffset, the sliding
        # assigner's start > timestamp - size); a start that wrapped around below LONG_MIN is dropped, as the
        # sliding assigner does in panes (window_starts); a tumbling window is always the element's
        last = timestamps - np.mod(timestamps - plan.offset, slide)
        elements, starts = [], []
        for j in range(-(-size // slide)):
            start = last - j * slide
            contains = start <= last if plan.tumbling else (start > timestamps - size) & (start <= last)
            inside = np.flatnonzero(contains)
            elements.append(inside)
            starts.append(start[inside])
        element = np.concatenate(elements)
        start = np.concatenate(starts)
        order = np.argsort(element, kind="stable")  # element by element, each one's windows latest first
        element, start = element[order], start[order]
        max_ts = start + (size - 1)
        cleanup = np.where(max_ts > LONG_MAX - lateness, LONG_MAX, max_ts + lateness)
        live = cleanup > watermark
        # skipped by all its windows (or it has none), and itself late: timestamp + lateness <= watermark (which
        # follows from the former unless a window's end wrapped around the long range)
        skipped = np.bincount(element[live], minlength=count) == 0
        late = np.flatnonzero(skipped & (timestamps + lateness <= watermark))
        if late.size:
            out.late.append(late)
            if plan.late_tag is None:
                self.counters.late_dropped += int(late.size)
            else:
                self.counters.late_out += int(late.size)
        codes, keys = key_codes(values, plan.key)
        pending = live & (max_ts > watermark)
        if pending.any():
            self._add_pending(values, element[pending], start[pending], cleanup[pending], codes, keys)
        allowed = live & (max_ts <= watermark)
        if allowed.any():
            self._add_one_by_one(values, element[allowed], start[allowed], cleanup[allowed], codes, keys, seqs, out)
        return out

    def _add_pending(
        self,
        values: pa.StructArray,
        element: np.ndarray,
        start: np.ndarray,
        cleanup: np.ndarray,
        codes: np.ndarray,
        keys: list[Any],
    ) -> None:
        slide = self.plan.slide
        low, high = int(start.min()), int(start.max())
        if high - low <= LONG_MAX:
            offsets = (start - low) // slide
        else:  # starts at both ends of the long range (windows that wrapped around): number them instead
            offsets = np.unique(start, return_inverse=True)[1].reshape(-1)
        pane = offsets * len(keys) + codes[element]
        _, first, groups = np.unique(pane, return_index=True, return_inverse=True)
        pane_starts = start[first].tolist()
        pane_keys = [keys[c] for c in codes[element[first]].tolist()]
        pane_cleanups = cleanup[first].tolist()
        windows = self.windows
        initial = [windows.get(s, {}).get(k) for s, k in zip(pane_starts, pane_keys, strict=True)]
        updated = accumulate(self.plan.parts, values.take(pa.array(element)), groups, initial)
        self._written.update(zip(pane_starts, pane_keys, strict=True))
        for s, k, c, acc in zip(pane_starts, pane_keys, pane_cleanups, updated, strict=True):
            window = windows.get(s)
            if window is None:
                window = windows[s] = {}
                self._schedule_window(s, c)
            window[k] = acc

    def _add_one_by_one(
        self,
        values: pa.StructArray,
        element: np.ndarray,
        start: np.ndarray,
        cleanup: np.ndarray,
        codes: np.ndarray,
        keys: list[Any],
        seqs: np.ndarray,
        out: ColumnarOutput,
    ) -> None:
        """Elements of windows the watermark passed (within the allowed lateness): each fires its pane."""
        form = self.plan.form
        decoded = self.plan.input_type.decode(values.take(pa.array(element)))
        size = self.plan.size
        for value, e, s, c in zip(decoded, element.tolist(), start.tolist(), cleanup.tolist(), strict=True):
            key = keys[codes[e]]
            window = self.windows.setdefault(s, {})
            acc = window.get(key)
            acc = form.add(value, form.create_accumulator() if acc is None else acc)
            window[key] = acc
            self._written.add((s, key))
            if c != LONG_MAX:
                self._schedule(c, CLEANUP, s)
            out.panes.append(Panes([key], [s], [java_add(s, size)], [acc], [int(seqs[e])]))

    # -- state -------------------------------------------------------------------------------------------------

    def timer_count(self) -> int:
        """Pending timers (firing and cleanup)."""
        return len(self.timers)

    def open_panes(self) -> int:
        return sum(len(window) for window in self.windows.values())

    def snapshot(self) -> Any:
        """The whole state as plain data (for :meth:`restore`); the next :meth:`changes` start from here."""
        self._written, self._dropped = set(), set()
        return (self.windows, self.watermark, self.counters.late_dropped)

    def changes(self) -> Any:
        """What changed since the last :meth:`snapshot` or :meth:`changes`: the panes written (their current
        accumulators) and the windows dropped."""
        windows = self.windows
        written = {}
        for start, key in self._written:
            window = windows.get(start)
            if window is not None and key in window:
                written[(start, key)] = window[key]
        dropped = list(self._dropped)
        self._written, self._dropped = set(), set()
        return (written, dropped, self.watermark, self.counters.late_dropped)

    def restore(self, snapshot: Any, changes: list[Any] | tuple[Any, ...] = ()) -> None:
        """The state of a :meth:`snapshot` followed by the :meth:`changes` taken after it."""
        windows, self.watermark, self.counters.late_dropped = snapshot
        self.windows = {start: dict(window) for start, window in windows.items()}
        for written, dropped, self.watermark, self.counters.late_dropped in changes:
            for start in dropped:
                self.windows.pop(start, None)
            for (start, key), acc in written.items():
                self.windows.setdefault(start, {})[key] = acc
        self.timers, self.scheduled = [], set()
        size, lateness = self.plan.size, self.plan.lateness
        for start in self.windows:
            self._schedule_window(start, cleanup_time(java_add(start, size - 1), lateness))
