r"""A lean window operator for the most common configuration, with the window operator's exact rules.

``AlignedWindowOperator`` handles tumbling and sliding event-time windows (aligned, no stagger) with the
default ``EventTimeTrigger``, no evictor, and any window function, allowed lateness and late-data tag. It
keeps each pane as a plain accumulator in a dict keyed by ``(key, window start)``, the keys of each window's
open panes, and two timers per *window* (not per pane) in one heap: ``FIRE`` at its ``max_timestamp()`` (while
the watermark is before it) and ``CLEANUP`` at ``max_timestamp() + allowed lateness``. Timers follow from the
windows and the watermark, so snapshots hold only the panes. This avoids trigger contexts, state objects and
the general timer service per element.

It is a sibling of the general :class:`~panes.windowing.operator.WindowOperator` (both subclass
:class:`~panes.windowing.window_step.WindowStep`: the configuration, the function and how a pane is emitted)
and applies the same rules (``panes.windowing.rules``) for this configuration: late windows
are skipped, an element skipped by all its windows is late when ``timestamp + lateness <= watermark``, a
window whose end the watermark already passed fires at once, otherwise it fires when the watermark reaches
``max_timestamp``, and it is cleaned up at ``max_timestamp + lateness``. What may differ is only the order in
which panes *of different keys* that fire at the same watermark leave (Flink's timer heap orders ties by its
own structure; here a window's panes fire in the order their keys first reached it). Runners that do not
promise Flink's emission order across keys (the Spark runner) use it; tests prove the results equal.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from panes.elements import StreamRecord, Watermark
from panes.operators.keys import KeySelector, extract_key, extract_keys
from panes.operators.rescaling import Owner, split_keyed
from panes.state.changes import Changes, apply_delta
from panes.tags import OutputTag
from panes.time import LONG_MAX, LONG_MIN, DurationLike, java_add
from panes.windowing.assigners.base import MissingTimestampError, WindowAssigner
from panes.windowing.assigners.sliding import SlidingEventTimeWindows, element_window_starts, window_starts
from panes.windowing.assigners.stagger import WindowStagger
from panes.windowing.assigners.tumbling import TumblingEventTimeWindows
from panes.windowing.internal_functions import WindowFunctionSpec
from panes.windowing.rules import (
    cleanup_time,
    cleanup_times,
    elements_late,
    has_ended,
    is_element_late,
    is_window_late,
    windows_late,
)
from panes.windowing.triggers.base import Trigger
from panes.windowing.triggers.event_time import EventTimeTrigger
from panes.windowing.window_step import WindowStep
from panes.windowing.windows import TimeWindow

FIRE = 1
CLEANUP = 2


def supports(assigner: WindowAssigner[Any, Any], trigger: Trigger[Any, Any] | None, evictor: Any) -> bool:
    """Whether :class:`AlignedWindowOperator` can run this configuration."""
    if evictor is not None:
        return False
    if trigger is not None and type(trigger) is not EventTimeTrigger:
        return False
    if type(assigner) is TumblingEventTimeWindows:
        return assigner.stagger is WindowStagger.ALIGNED
    return type(assigner) is SlidingEventTimeWindows


class AlignedWindowOperator(WindowStep):
    """See the module docstring. Raises ``ValueError`` for a configuration :func:`supports` refuses."""

    def __init__(
        self,
        assigner: WindowAssigner[Any, Any],
        spec: WindowFunctionSpec,
        key_selector: KeySelector,
        trigger: Trigger[Any, Any] | None = None,
        allowed_lateness: DurationLike = 0,
        late_data_tag: OutputTag[Any] | None = None,
    ) -> None:
        if not supports(assigner, trigger, None):
            raise ValueError(f"AlignedWindowOperator cannot run {assigner!r} with {trigger!r}")
        super().__init__(assigner, spec, key_selector, trigger, allowed_lateness, late_data_tag)
        self._tumbling = isinstance(assigner, TumblingEventTimeWindows)
        if isinstance(assigner, TumblingEventTimeWindows):
            self._size, self._slide, self._offset = assigner.size, assigner.size, assigner.global_offset
        else:
            assert isinstance(assigner, SlidingEventTimeWindows)
            self._size, self._slide, self._offset = assigner.size, assigner.slide, assigner.offset
        kind = spec.kind
        self._create: Callable[[], Any] | None
        if kind == "aggregate":
            assert spec.aggregate is not None
            aggregate = spec.aggregate
            self._create = aggregate.create_accumulator
            self._add: Any = aggregate.add
            self._result: Any = aggregate.get_result
        elif kind == "reduce":
            assert spec.reduce is not None
            reduce = spec.reduce.reduce
            self._create = None
            self._add = lambda value, acc: reduce(acc, value)
            self._result = None
        else:
            self._create = list  # a list pane: ``_add_to_pane`` appends to it
            self._add = None
            self._result = None
        self._panes: dict[tuple[Any, int], Any] = {}
        self._windows: dict[int, dict[Any, bool]] = {}
        """Per window start, the keys of its open panes, in the order they first reached it, each with whether
        its pane fired (a pane that has not waits for the window's ``FIRE`` timer)."""
        self._timers: list[tuple[int, int]] = []
        self._pending: dict[tuple[int, int], int] = {}
        """The timers in the heap: ``(time, window start)`` -> ``FIRE`` and/or ``CLEANUP``."""
        self._pane_changes: Changes | None = None
        self._clears_nothing = spec.function.clears_nothing()

    def set_observer(self, observer: Any) -> None:
        """Refused: this operator has no observation points (observe the general :class:`WindowOperator`,
        which the local runner hosts)."""
        if observer is not None:
            raise TypeError(
                "AlignedWindowOperator cannot be observed; observe a WindowOperator (WindowSpec.create_operator(), "
                "the one the local runner hosts)"
            )

    # -- elements ---------------------------------------------------------------------------------------------

    def process_element(self, record: StreamRecord[Any]) -> None:
        timestamp = record.timestamp
        if timestamp is None:
            raise MissingTimestampError()
        key = self.backend.current_key
        watermark = self.timer_service.current_watermark
        lateness = self.allowed_lateness
        size = self._size
        if self._tumbling:
            starts = [TimeWindow.get_window_start_with_offset(timestamp, self._offset, size)]
        else:
            starts = window_starts(timestamp, size, self._slide, self._offset)
        skipped = True
        for start in starts:
            max_timestamp = java_add(start, size - 1)
            cleanup = cleanup_time(max_timestamp, lateness)
            if is_window_late(cleanup, watermark):
                continue
            skipped = False
            self._add_to_pane(key, record.value, start, max_timestamp, cleanup, watermark)
        if skipped and is_element_late(timestamp, lateness, watermark):
            self._late(record)

    def process_elements(
        self, values: Sequence[Any], timestamps: Sequence[int | None], seqs: Sequence[int], at: Callable[[int], None]
    ) -> None:
        """What :meth:`process_record` does for each of ``values`` (at ``timestamps``) in order, calling
        ``at(seqs[i])`` before element ``i`` (a host numbers what an element emits by it); the elements' windows
        and lateness are worked out for all of them at once (the watermark does not move in between)."""
        if None in timestamps or self.backend.record_cleanups:  # missing timestamps are reported one by one
            for value, timestamp, seq in zip(values, timestamps, seqs, strict=True):
                at(seq)
                self.process_record(StreamRecord(value, timestamp))
            return
        watermark = self.timer_service.current_watermark
        lateness = self.allowed_lateness
        times = np.fromiter(timestamps, dtype=np.int64, count=len(timestamps))
        element, start = element_window_starts(times, self._size, self._slide, self._offset, self._tumbling)
        max_timestamp = start + (self._size - 1)
        cleanup = cleanup_times(max_timestamp, lateness)
        live = np.flatnonzero(~windows_late(cleanup, watermark))
        late = (np.bincount(element[live], minlength=len(times)) == 0) & elements_late(times, lateness, watermark)
        # each element's live windows: pairs ``[firsts[i], firsts[i + 1])`` of the lists below
        firsts = np.searchsorted(element[live], np.arange(len(times) + 1)).tolist()
        starts, ends, cleanups = start[live].tolist(), max_timestamp[live].tolist(), cleanup[live].tolist()
        key_selector, backend, counters, add = self.key_selector, self.backend, self.counters, self._add_to_pane
        assert key_selector is not None
        keys = extract_keys(key_selector, values)
        for index, (value, seq, is_late) in enumerate(zip(values, seqs, late.tolist(), strict=True)):
            at(seq)
            counters.records_in += 1
            try:
                key = backend.current_key = extract_key(key_selector, value) if keys is None else keys[index]
                for pair in range(firsts[index], firsts[index + 1]):
                    add(key, value, starts[pair], ends[pair], cleanups[pair], watermark)
                if is_late:
                    self._late(StreamRecord(value, timestamps[index]))
            except Exception as error:
                self.report_failure(StreamRecord(value, timestamps[index]), error)

    def _add_to_pane(self, key: Any, value: Any, start: int, max_timestamp: int, cleanup: int, watermark: int) -> None:
        """Add ``value`` to the pane of ``key`` in the window at ``start`` (not late at ``watermark``): its
        timers, and its firing when the window ended."""
        slot = (key, start)
        acc = self._panes.get(slot)
        changes = self._pane_changes
        try:
            if acc is None:
                if self._create is None:
                    acc = value
                elif self._create is list:
                    acc = [value]
                else:
                    acc = self._add(value, self._create())
                if changes is not None:
                    changes.replaced(slot)
            elif self._create is list:
                if changes is not None:
                    changes.appended(slot, len(acc))
                acc.append(value)
            else:
                if changes is not None:
                    changes.replaced(slot)
                acc = self._add(value, acc)
        except Exception:
            self.trigger_context.window = TimeWindow(start, start + self._size)  # the pane in work, for the report
            raise
        self._panes[slot] = acc
        keys = self._windows.get(start)
        if keys is None:
            keys = self._windows[start] = {}
            if cleanup != LONG_MAX:
                self._schedule(cleanup, start, CLEANUP)
        # as EventTimeTrigger does for every element: a window whose end the watermark passed fires at once,
        # others when the watermark reaches their end (again, after a watermark that went back)
        if has_ended(max_timestamp, watermark):
            keys[key] = True
            self._fire(key, start, acc)
        elif keys.get(key) is not False:
            keys[key] = False
            if not self._pending.get((max_timestamp, start), 0) & FIRE:  # not scheduled for another key yet
                self._schedule(max_timestamp, start, FIRE)

    def _late(self, record: StreamRecord[Any]) -> None:
        """``record`` is late: to the late-data output, or counted as dropped."""
        if self.late_data_tag is not None:
            self.output.collect_side(self.late_data_tag, record)
        else:
            self.num_late_records_dropped += 1

    def _schedule(self, time: int, start: int, kind: int) -> None:
        slot = (time, start)
        flags = self._pending.get(slot)
        if flags is None:
            heapq.heappush(self._timers, slot)
            self._pending[slot] = kind
        else:
            self._pending[slot] = flags | kind

    def _fire(self, key: Any, start: int, acc: Any) -> None:
        """Evaluate the pane ``(key, start)`` holding ``acc`` (when it raises, its window stays the one in work
        for the failure report). A pane whose contents are ``None`` (a reduce that returned ``None``, an
        ``AggregateFunction`` whose ``get_result`` did) fires nothing, as in ``WindowOperator`` and Flink."""
        window = self._enter(key, start)
        contents = acc if self._result is None else self._result(acc)
        if contents is not None:
            self._emit_window_contents(window, contents)
        self.trigger_context.window = None

    def _enter(self, key: Any, start: int, window: TimeWindow | None = None) -> TimeWindow:
        """Make ``key`` and the window starting at ``start`` (``window``, when made already) the ones in work
        (failure reports name them)."""
        if window is None:
            window = TimeWindow.of_size(start, self._size)
        self.backend.current_key = key
        self.trigger_context.key = key
        self.trigger_context.window = window
        return window

    # -- time --------------------------------------------------------------------------------------------------

    def process_watermark(self, watermark: Watermark) -> None:
        self._closing_before = self._watermark
        try:
            self._advance(watermark.timestamp)
        finally:
            self.__dict__.pop("_closing_before", None)
        self.output.emit_watermark(watermark)

    def end_key(self) -> None:
        """BATCH execution: the current key's input ended; its panes fire and are cleaned as at ``LONG_MAX``
        (only this key's timers are pending), then the watermark is ``LONG_MIN`` again for the next key."""
        self._closing_before = LONG_MIN
        try:
            self._advance(LONG_MAX)
        finally:
            self.__dict__.pop("_closing_before", None)
        self._watermark = LONG_MIN
        self.timer_service.current_watermark = LONG_MIN

    def _advance(self, time: int) -> None:
        """Fire and clean what is due at watermark ``time``: window by window in timer order, each window's
        panes in the order their keys first reached it."""
        self._watermark = time
        self.timer_service.current_watermark = time
        timers = self._timers
        while timers and timers[0][0] <= time:
            slot = heapq.heappop(timers)
            flags = self._pending.pop(slot)
            at, start = slot
            keys = self._windows.get(start)
            if not keys:
                continue
            if flags & CLEANUP:
                del self._windows[start]
            window = TimeWindow.of_size(start, self._size)
            max_timestamp = window.max_timestamp()
            self._firing_time = max_timestamp if flags & FIRE else cleanup_time(max_timestamp, self.allowed_lateness)
            self._cleaning = bool(flags & CLEANUP)
            try:
                self._on_timers(keys, start, window, flags, at)
            finally:
                self.__dict__.pop("_firing_time", None)
                self.__dict__.pop("_cleaning", None)

    def _on_timers(self, keys: dict[Any, bool], start: int, window: TimeWindow, flags: int, at: int) -> None:
        """The timers ``flags`` of the window at ``start`` (``window``), due at ``at``, for each of its panes
        (``keys``, in order): fire the pane (unless it fired for this window end already) and/or clean it up
        (even when firing raised); a failure is reported for its pane and the next pane goes on."""
        panes, changes, backend, enter = self._panes, self._pane_changes, self.backend, self._enter
        result, emit, pane_state = self._result, self._pane_emitter(window), self._pane_state
        clear_function = not self._clears_nothing
        for key, fired in list(keys.items()):
            kind = flags & ~FIRE if fired else flags
            if not kind:
                continue
            slot = (key, start)
            try:
                try:
                    if kind & FIRE:
                        keys[key] = True
                        if slot in panes:
                            acc = panes[slot]
                            enter(key, start, window)
                            contents = acc if result is None else result(acc)
                            if contents is not None:  # as in _fire
                                emit(contents)
                finally:
                    if kind & CLEANUP:
                        panes.pop(slot, None)
                        if changes is not None:
                            changes.replaced(slot)
                        backend.current_key = key
                        pane_state.set_current_namespace(window)
                        pane_state.clear()
                        if clear_function:
                            self.process_context._window = window
                            self.spec.function.clear(self.process_context)
            except Exception as error:
                enter(key, start, window)
                self.report_failure(StreamRecord(None, at), error)
            self.trigger_context.window = None

    def next_event_time_timer(self) -> int | None:
        return self._timers[0][0] if self._timers else None

    # -- snapshots ----------------------------------------------------------------------------------------------

    def state_entries(self) -> int:
        return len(self._panes) + super().state_entries()

    def open_panes(self) -> int:
        return len(self._panes)

    def timer_count(self) -> int:
        return len(self._timers)

    def snapshot_extra(self) -> Any:
        extra = super().snapshot_extra()
        return {**extra, "panes": self._panes}

    def restore_extra(self, data: Any) -> None:
        super().restore_extra(data)
        if data and "panes" in data:
            self._panes = dict(data["panes"])

    def restore_state(self, snapshot: bytes, changes: Sequence[bytes] = ()) -> None:
        """As every operator restores, then the windows of the panes and their timers at the restored watermark
        (a pane whose window's end it passed has fired)."""
        super().restore_state(snapshot, changes)
        self._windows, self._timers, self._pending = {}, [], {}
        watermark, lateness = self._watermark, self.allowed_lateness
        for key, start in self._panes:
            max_timestamp = java_add(start, self._size - 1)
            keys = self._windows.get(start)
            if keys is None:
                keys = self._windows[start] = {}
                cleanup = cleanup_time(max_timestamp, lateness)
                if cleanup != LONG_MAX:
                    self._schedule(cleanup, start, CLEANUP)
            ended = has_ended(max_timestamp, watermark)
            keys[key] = ended
            if not ended:
                self._schedule(max_timestamp, start, FIRE)

    @classmethod
    def rescale_extra(cls, extras: list[Any], owner: Owner, count: int) -> list[Any]:
        """The window operator's extras, with the panes (by ``(key, start)``) of each key at its new instance
        (timers follow from the panes)."""
        base = super().rescale_extra(extras, owner, count)
        parts = [{**(extra or {}), "panes": {}} for extra in base]
        for extra in extras:
            if not extra or "panes" not in extra:
                continue
            for part, panes in zip(parts, split_keyed(extra["panes"], lambda slot: slot[0], owner, count), strict=True):
                part["panes"].update(panes)
        return parts

    def track_changes(self) -> None:
        super().track_changes()
        self._pane_changes = Changes()

    def forget_changes(self) -> None:
        super().forget_changes()
        if self._pane_changes is not None:
            self._pane_changes = Changes()

    def extra_changes(self) -> Any:
        extra = super().snapshot_extra()
        if self._pane_changes is None:
            return {**extra, "panes": self._panes, "full": True}
        return {**extra, "panes": self._pane_changes.take(self._panes)}

    @staticmethod
    def apply_extra_changes(extra: Any, changes: Any) -> Any:
        if changes.get("full"):
            return changes
        panes = dict(extra["panes"])
        apply_delta(panes, changes["panes"])
        return {**changes, "panes": panes}
