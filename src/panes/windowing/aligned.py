r"""A lean window operator for the most common configuration, with the window operator's exact rules.

``AlignedWindowOperator`` handles tumbling and sliding event-time windows (aligned, no stagger) with the
default ``EventTimeTrigger``, no evictor, and any window function, allowed lateness and late-data tag. It
keeps each pane as a plain accumulator in a dict keyed by ``(key, window start)`` and its timers in one heap,
instead of going through trigger contexts, state objects and the general timer service per element.

It is a sibling of the general :class:`~panes.windowing.operator.WindowOperator` (both subclass
:class:`~panes.windowing.window_step.WindowStep`: the configuration, the function and how a pane is emitted)
and applies the same rules (``panes.windowing.rules``) for this configuration: late windows
are skipped, an element skipped by all its windows is late when ``timestamp + lateness <= watermark``, a
window whose end the watermark already passed fires at once, otherwise it fires when the watermark reaches
``max_timestamp``, and it is cleaned up at ``max_timestamp + lateness``. What may differ is only the order in
which panes *of different keys* that fire at the same watermark leave (Flink's timer heap orders ties by its
own structure). Runners that do not promise Flink's emission order across keys (the Spark runner) use it;
tests prove the results equal.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from panes.elements import StreamRecord, Watermark
from panes.operators.keys import KeySelector
from panes.operators.rescaling import Owner, split_keyed
from panes.state.changes import Changes, apply_delta
from panes.tags import OutputTag
from panes.time import LONG_MAX, LONG_MIN, DurationLike, java_add
from panes.windowing.assigners.base import MissingTimestampError, WindowAssigner
from panes.windowing.assigners.sliding import SlidingEventTimeWindows, window_starts
from panes.windowing.assigners.stagger import WindowStagger
from panes.windowing.assigners.tumbling import TumblingEventTimeWindows
from panes.windowing.internal_functions import WindowFunctionSpec
from panes.windowing.rules import cleanup_time, has_ended, is_element_late, is_window_late
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
            self._create = list
            self._add = lambda value, acc: (acc.append(value), acc)[1]
            self._result = None
        self._panes: dict[tuple[Any, int], Any] = {}
        self._timers: list[tuple[int, int, Any, int]] = []
        self._pending: dict[tuple[int, Any, int], int] = {}
        self._order = 0
        self._pane_changes: Changes | None = None
        self._timer_changes: Changes | None = None

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
        panes = self._panes
        value = record.value
        for start in starts:
            max_timestamp = java_add(start, size - 1)
            cleanup = cleanup_time(max_timestamp, lateness)
            if is_window_late(cleanup, watermark):
                continue
            skipped = False
            slot = (key, start)
            acc = panes.get(slot)
            changes = self._pane_changes
            try:
                if acc is None:
                    acc = value if self._create is None else self._add(value, self._create())
                    if changes is not None:
                        changes.replaced(slot)
                else:
                    if changes is not None:
                        if self._create is list:
                            changes.appended(slot, len(acc))
                        else:
                            changes.replaced(slot)
                    acc = self._add(value, acc)
            except Exception:
                self.trigger_context.window = TimeWindow(start, start + size)  # the pane in work, for the report
                raise
            panes[slot] = acc
            # as EventTimeTrigger and the window operator do for every element (timers are de-duplicated;
            # a watermark that went back makes an already fired window fire again)
            try:
                if has_ended(max_timestamp, watermark):
                    self._fire(key, start, acc)
                else:
                    self._schedule(max_timestamp, key, start, FIRE)
            finally:
                # a firing that raised (the element goes to the error output) still leaves the pane cleaned up
                if cleanup != LONG_MAX:
                    self._schedule(cleanup, key, start, CLEANUP)
        if skipped and is_element_late(timestamp, lateness, watermark):
            if self.late_data_tag is not None:
                self.output.collect_side(self.late_data_tag, record)
            else:
                self.num_late_records_dropped += 1

    def _schedule(self, time: int, key: Any, start: int, kind: int) -> None:
        slot = (time, key, start)
        flags = self._pending.get(slot)
        if flags is None:
            self._order += 1
            heapq.heappush(self._timers, (time, self._order, key, start))
            self._pending[slot] = kind
        elif flags | kind != flags:
            self._pending[slot] = flags | kind
        else:
            return
        if self._timer_changes is not None:
            self._timer_changes.replaced(slot)

    def _fire(self, key: Any, start: int, acc: Any) -> None:
        """Evaluate the pane ``(key, start)`` holding ``acc`` (when it raises, the window stays the one in work
        for the failure report)."""
        window = self._enter(key, start)
        contents = acc if self._result is None else self._result(acc)
        self._emit_window_contents(window, contents)
        self.trigger_context.window = None

    def _enter(self, key: Any, start: int) -> TimeWindow:
        """Make ``key`` and the window starting at ``start`` the ones in work (failure reports name them)."""
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
        """Fire and clean what is due at watermark ``time``."""
        self._watermark = time
        self.timer_service.current_watermark = time
        timers = self._timers
        while timers and timers[0][0] <= time:
            at, _, key, start = heapq.heappop(timers)
            flags = self._pending.pop((at, key, start))
            if self._timer_changes is not None:
                self._timer_changes.replaced((at, key, start))
            try:
                self._on_timer_flags(key, start, flags)
            except Exception as error:
                self._enter(key, start)
                self.report_failure(StreamRecord(None, at), error)
            self.trigger_context.window = None

    def _on_timer_flags(self, key: Any, start: int, flags: int) -> None:
        """A timer of the pane ``(key, start)``: fire it and/or clean it up (even when firing raised)."""
        slot = (key, start)
        window = TimeWindow.of_size(start, self._size)
        self._firing_time = (
            window.max_timestamp() if flags & FIRE else cleanup_time(window.max_timestamp(), self.allowed_lateness)
        )
        self._cleaning = bool(flags & CLEANUP)
        try:
            if flags & FIRE and slot in self._panes:
                self._fire(key, start, self._panes[slot])
        finally:
            self.__dict__.pop("_firing_time", None)
            self.__dict__.pop("_cleaning", None)
            if flags & CLEANUP:
                self._panes.pop(slot, None)
                if self._pane_changes is not None:
                    self._pane_changes.replaced(slot)
                self.backend.current_key = key
                self._pane_state.set_current_namespace(window)
                self._pane_state.clear()
                self.process_context._window = window
                self.spec.function.clear(self.process_context)

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
        return {**extra, "panes": self._panes, "pending": self._pending}

    def restore_extra(self, data: Any) -> None:
        super().restore_extra(data)
        if data and "panes" in data:
            self._panes = dict(data["panes"])
            self._pending = dict(data["pending"])
            # the timers in the order they were scheduled (the pending dict keeps it)
            self._timers = [(time, order, key, start) for order, (time, key, start) in enumerate(self._pending)]
            heapq.heapify(self._timers)
            self._order = len(self._timers)

    @classmethod
    def rescale_extra(cls, extras: list[Any], owner: Owner, count: int) -> list[Any]:
        """The window operator's extras, with the panes (by ``(key, start)``) and pending timers (by ``(time, key,
        start)``) of each key at its new instance."""
        base = super().rescale_extra(extras, owner, count)
        parts = [{**(extra or {}), "panes": {}, "pending": {}} for extra in base]
        for extra in extras:
            if not extra or "panes" not in extra:
                continue
            for part, panes in zip(parts, split_keyed(extra["panes"], lambda slot: slot[0], owner, count), strict=True):
                part["panes"].update(panes)
            pending = split_keyed(extra["pending"], lambda slot: slot[1], owner, count)
            for part, timers in zip(parts, pending, strict=True):
                part["pending"].update(timers)
        return parts

    def track_changes(self) -> None:
        super().track_changes()
        self._pane_changes = Changes()
        self._timer_changes = Changes()

    def forget_changes(self) -> None:
        super().forget_changes()
        if self._pane_changes is not None and self._timer_changes is not None:
            self._pane_changes, self._timer_changes = Changes(), Changes()

    def extra_changes(self) -> Any:
        extra = super().snapshot_extra()
        if self._pane_changes is None or self._timer_changes is None:
            return {**extra, "panes": self._panes, "pending": self._pending, "full": True}
        panes = self._pane_changes.take(self._panes)
        pending = self._timer_changes.take(self._pending)
        return {**extra, "panes": panes, "pending": pending}

    @staticmethod
    def apply_extra_changes(extra: Any, changes: Any) -> Any:
        if changes.get("full"):
            return changes
        panes, pending = dict(extra["panes"]), dict(extra["pending"])
        apply_delta(panes, changes["panes"])
        apply_delta(pending, changes["pending"])
        return {**changes, "panes": panes, "pending": pending}
