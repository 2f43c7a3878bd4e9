"""The window operator: Flink's ``WindowOperator`` and ``EvictingWindowOperator``, written once for every runner.

It is Flink's operator for every configuration; the lean operators for the common ones (``aligned.py``, and
``columnar/`` on Spark) apply the same event-time rules, which are written once in ``panes.windowing.rules``
(scalar and vectorised forms side by side). What it does:

- Each element is assigned to windows. A window is *late* when ``cleanup_time(window) <= watermark``, where
  ``cleanup_time = max_timestamp + allowed_lateness`` (``LONG_MAX`` on overflow) for
  event-time assigners and ``max_timestamp`` otherwise; late windows are skipped. An element skipped by all
  its windows is a late element when its ``timestamp + allowed_lateness <= watermark``: it goes to the
  late-data side output when one is set, else it is counted in ``num_late_records_dropped``. (Both sums are
  Java ``long`` sums. With window bounds that wrapped around the long range, as Flink's do, an element can be
  skipped by its windows without being late: then it is dropped without a trace, as in Flink.)
- The element is added to the window's state and the trigger decides: FIRE evaluates the pane (results carry
  ``window.max_timestamp()``), PURGE clears its contents. A cleanup timer at ``cleanup_time`` is registered
  (none when it is ``LONG_MAX``); when it fires, all state of the window, trigger state included, is dropped.
- Merging assigners (sessions) merge windows through :class:`MergingWindowSet`, merging trigger state
  (``Trigger.on_merge``) and contents, and deleting the merged windows' cleanup timers.
- With an evictor, the pane keeps every element with its timestamp and the evictor runs before and/or after
  the function at each firing.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from panes.elements import StreamRecord, Watermark
from panes.errors import UnsupportedOperationError
from panes.operators.keys import KeySelector
from panes.state.backend import VOID_NAMESPACE
from panes.state.descriptors import ListStateDescriptor, StateDescriptor
from panes.tags import OutputTag
from panes.time import LONG_MAX, LONG_MIN, DurationLike, java_add
from panes.timers.heap import InternalTimer
from panes.timers.service import InternalTimerService
from panes.watermarks.per_key import PerKeyWatermarks, check_per_key_watermarks
from panes.windowing.accumulation import LAST_RESULTS
from panes.windowing.assigners.base import WindowAssigner
from panes.windowing.evictors import Evictor, TimestampedValue
from panes.windowing.internal_functions import WindowFunctionSpec
from panes.windowing.merging_window_set import MergingWindowSet
from panes.windowing.observer import WindowObserver
from panes.windowing.pane_info import PANE_STATE
from panes.windowing.rules import cleanup_time, is_element_late, is_window_late
from panes.windowing.triggers.base import OnMergeContext, Trigger, TriggerResult
from panes.windowing.window_step import WindowStep

MERGING_WINDOW_SET = ListStateDescriptor("merging-window-set")


class _TriggerContext(OnMergeContext):
    """The trigger's view of the operator, re-pointed at a (key, window) before each call."""

    __slots__ = ("_backend", "_timers", "key", "merged_windows", "window")

    def __init__(self, operator: WindowOperator) -> None:
        self._timers: InternalTimerService = operator.timer_service
        self._backend = operator.backend
        self.key: Any = None
        self.window: Any = None
        self.merged_windows: Collection[Any] | None = None

    def get_current_processing_time(self) -> int:
        return self._timers.current_processing_time()

    def get_current_watermark(self) -> int:
        return self._timers.current_watermark

    def register_processing_time_timer(self, time: int) -> None:
        self._timers.register_processing_time_timer(self.window, time)

    def register_event_time_timer(self, time: int) -> None:
        self._timers.register_event_time_timer(self.window, time)

    def delete_processing_time_timer(self, time: int) -> None:
        self._timers.delete_processing_time_timer(self.window, time)

    def delete_event_time_timer(self, time: int) -> None:
        self._timers.delete_event_time_timer(self.window, time)

    def get_partitioned_state(self, state_descriptor: StateDescriptor) -> Any:
        return self._backend.get_partitioned_state(self.window, state_descriptor)

    def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
        if self.merged_windows:
            self._backend.merge_namespaces(state_descriptor, self.window, self.merged_windows)


class WindowOperator(WindowStep):
    """Flink's keyed window operator (see the module docstring for the rules it applies).

    ``spec`` is the window state and function (``process_spec``/``reduce_spec``/``aggregate_spec``);
    ``key_selector`` maps an element to its key (``window_all`` uses a constant key); with ``key_time`` each key
    has its own event time (``panes.watermarks.per_key``), moved on after each of its elements.
    """

    def __init__(
        self,
        assigner: WindowAssigner[Any, Any],
        spec: WindowFunctionSpec,
        key_selector: KeySelector,
        trigger: Trigger[Any, Any] | None = None,
        allowed_lateness: DurationLike = 0,
        late_data_tag: OutputTag[Any] | None = None,
        accumulation: str = "accumulating",
        key_time: PerKeyWatermarks | None = None,
    ) -> None:
        super().__init__(assigner, spec, key_selector, trigger, allowed_lateness, late_data_tag, accumulation)
        if key_time is not None:
            self.key_time = check_per_key_watermarks(key_time)

    def element_seen(self, record: StreamRecord[Any]) -> None:
        """The key's time moves on by the element's timestamp (also when processing it failed: the key's clock
        saw it); an observer hears the key's new time."""
        super().element_seen(record)
        if self.observer is not None:
            key = self.backend.current_key
            self.observer.key_time(key, self.timer_service.watermark_of(key))  # type: ignore[attr-defined]

    def open_panes(self) -> int:
        """Panes (key and window) holding contents."""
        return self.backend.entry_count(self._contents_descriptor().name)

    # -- observation ----------------------------------------------------------------------------------------

    # No observer: a class attribute, so that an unobserved operator has exactly the instance attributes it had
    # before observers existed (CPython shares an instance dict's keys between the instances of a class only up
    # to 30 attributes; beyond, every attribute access on the operator gets slower). What observation needs
    # lives on observed instances only.
    observer: WindowObserver | None = None

    def set_observer(self, observer: WindowObserver | None) -> None:
        """Tell ``observer`` what this operator does from now on (``None``: stop). See
        ``panes.windowing.observer``; an operator without an observer pays one ``None`` check per element, per
        firing and per timer, and nothing per watermark (the observed watermark and processing-time paths are
        installed on this instance only)."""
        if observer is not None and not isinstance(observer, WindowObserver):
            raise TypeError(f"expected a WindowObserver, got {type(observer).__name__}")
        if observer is None:
            for name in ("observer", "process_watermark", "advance_processing_time"):
                self.__dict__.pop(name, None)
            return
        self.observer = observer
        self.process_watermark = self._observed_process_watermark  # type: ignore[method-assign]
        self.advance_processing_time = self._observed_advance_processing_time  # type: ignore[method-assign]

    def _observed_process_watermark(self, watermark: Watermark) -> None:
        assert self.observer is not None
        self.observer.watermark(self.timer_service.current_watermark, watermark.timestamp)
        type(self).process_watermark(self, watermark)

    def _observed_advance_processing_time(self, now: int) -> None:
        assert self.observer is not None
        if self._processing_time_seen != now:
            self.observer.processing_time(self._processing_time_seen, now)
        type(self).advance_processing_time(self, now)

    def _observe_firing(self, observer: WindowObserver, window: Any) -> None:
        timers = self.timer_service
        time, before = self._closing_times()
        observer.fired(
            self.trigger_context.key, window, time, before, timers.current_watermark, timers.current_processing_time()
        )

    # -- lifecycle ---------------------------------------------------------------------------------------

    def open(self) -> None:
        super().open()
        self.window_state = self.backend.get_partitioned_state(None, self._contents_descriptor())
        self._merging_set_state = self.backend.get_partitioned_state(VOID_NAMESPACE, MERGING_WINDOW_SET)
        self._read_contents = (
            self.window_state.get_internal
            if isinstance(self._contents_descriptor(), ListStateDescriptor)
            else self.window_state.get
        )

    def _window_in_work(self) -> _TriggerContext:
        return _TriggerContext(self)

    def _contents_descriptor(self) -> StateDescriptor:
        return self.spec.state_descriptor

    # -- elements ------------------------------------------------------------------------------------------

    def _state_value(self, record: StreamRecord[Any]) -> Any:
        """What the window state stores for ``record``: its value (its timestamp too when evicting)."""
        return record.value

    def process_element(self, record: StreamRecord[Any]) -> None:
        value = record.value
        timestamp = LONG_MIN if record.timestamp is None else record.timestamp
        key = self.backend.current_key
        ctx = self.trigger_context
        ctx.key = key
        ctx.window = None  # the window in work, for failure reports (failure_window)
        windows = self.assigner.assign_windows(value, timestamp, self)
        state = self.window_state
        skipped = True
        observer = self.observer
        if observer is not None:
            timers = self.timer_service
            observer.element(key, value, record.timestamp, timers.current_watermark, timers.current_processing_time())

        # an element whose adding, trigger or firing raises (it goes to the error output) leaves the windows as
        # they were, merged ones included: the merge is persisted and the window keeps its cleanup timer (``_add``),
        # so no pane is left behind
        if self.is_merging:
            merging = self._merging_window_set()
            try:
                for window in windows:
                    actual = merging.add_window(window, self._merge_function(key))
                    if self._is_window_late(actual):
                        merging.retire_window(actual)
                        continue
                    skipped = False
                    state_window = merging.get_state_window(actual)
                    if state_window is None:
                        raise RuntimeError(f"Window {window!r} is not in in-flight window set.")
                    ctx.key = key
                    ctx.window = actual
                    state.set_current_namespace(state_window)
                    self._add(record, actual, value, timestamp)
            finally:
                self._persist(merging)
        else:
            for window in windows:
                if self._is_window_late(window):
                    continue
                skipped = False
                ctx.window = window
                state.set_current_namespace(window)
                self._add(record, window, value, timestamp)

        if skipped and self._is_element_late(timestamp):
            if observer is not None:
                watermark = self.timer_service.current_watermark
                observer.late(key, value, timestamp, watermark, self.late_data_tag is not None)
            if self.late_data_tag is not None:
                self.output.collect_side(self.late_data_tag, record)
            else:
                self.num_late_records_dropped += 1

    def _add(self, record: StreamRecord[Any], window: Any, value: Any, timestamp: int) -> None:
        """Add ``record`` (``value`` at ``timestamp``) to ``window``'s pane (the window state's current
        namespace), let the trigger act on it, and register the window's cleanup timer (Flink's order). The
        timer is registered when adding, the trigger or a firing raises too (the error goes on to the error
        output): the pane may hold elements, or panes merged into it, and is still cleaned up in time."""
        try:
            self.window_state.add(self._state_value(record))
            if self.observer is not None:
                self.observer.assigned(self.trigger_context.key, window)
            self._on_trigger_result(self.trigger.on_element(value, timestamp, window, self.trigger_context), window)
        finally:
            self._register_cleanup_timer(window)

    def _on_trigger_result(self, result: TriggerResult, window: Any) -> None:
        """Fire and/or purge the pane in the current namespace of the window state (a discarding window purges
        whenever it fires; a retracting one forgets what it emitted when it purges)."""
        if result is TriggerResult.FIRE and self.accumulation == "discarding":
            result = TriggerResult.FIRE_AND_PURGE
        if result.is_fire():
            contents = self._read_contents()
            if contents is not None:
                if self.observer is not None:
                    self._observe_firing(self.observer, window)
                self._emit_window_contents(window, contents)
        if result.is_purge():
            self.window_state.clear()
            if self.accumulation == "retracting":
                self.backend.get_partitioned_state(window, LAST_RESULTS).clear()
            if self.observer is not None:
                self.observer.purged(self.trigger_context.key, window)

    def _merge_function(self, key: Any) -> Any:
        def merge(
            merge_result: Any, merged_windows: list[Any], state_window_result: Any, merged_state_windows: list[Any]
        ) -> None:
            timers = self.timer_service
            if self.is_event_time:
                if java_add(merge_result.max_timestamp(), self.allowed_lateness) <= timers.current_watermark:
                    raise UnsupportedOperationError(
                        "The end timestamp of an event-time window cannot become earlier than the current "
                        f"watermark by merging. Current watermark: {timers.current_watermark} window: {merge_result!r}"
                    )
            else:
                now = timers.current_processing_time()
                if merge_result.max_timestamp() <= now:
                    raise UnsupportedOperationError(
                        "The end timestamp of a processing-time window cannot become earlier than the current "
                        f"processing time by merging. Current processing time: {now} window: {merge_result!r}"
                    )
            if self.observer is not None:
                self.observer.merged(key, merge_result, tuple(merged_windows))
            ctx = self.trigger_context
            ctx.key = key
            ctx.window = merge_result
            ctx.merged_windows = merged_windows
            self.trigger.on_merge(merge_result, ctx)
            ctx.merged_windows = None
            for merged in merged_windows:
                ctx.window = merged
                self.trigger.clear(merged, ctx)
                self._delete_cleanup_timer(merged)
            self.backend.merge_namespaces(self._contents_descriptor(), state_window_result, merged_state_windows)
            self.backend.merge_namespaces(PANE_STATE, merge_result, merged_windows)
            if self.accumulation == "retracting":
                self.backend.merge_namespaces(LAST_RESULTS, merge_result, merged_windows)

        return merge

    # -- timers ----------------------------------------------------------------------------------------------

    def on_event_time(self, timer: InternalTimer) -> None:
        self._on_timer(timer, event_time=True)

    def on_processing_time(self, timer: InternalTimer) -> None:
        self._on_timer(timer, event_time=False)

    def _on_timer(self, timer: InternalTimer, event_time: bool) -> None:
        ctx = self.trigger_context
        ctx.key = timer.key
        ctx.window = window = timer.namespace
        state = self.window_state
        merging: MergingWindowSet | None = None
        if self.is_merging:
            merging = self._merging_window_set()
            state_window = merging.get_state_window(window)
            if state_window is None:
                # a timer of a window that no longer exists (a trigger that did not clean up): nothing to do
                return
            state.set_current_namespace(state_window)
        else:
            state.set_current_namespace(window)
        cleanup = self._cleanup_time(window)
        if event_time == self.is_event_time:
            self._firing_time = timer.timestamp
            self._cleaning = timer.timestamp == cleanup

        try:
            if event_time:
                result = self.trigger.on_event_time(timer.timestamp, window, ctx)
            else:
                result = self.trigger.on_processing_time(timer.timestamp, window, ctx)
            self._on_trigger_result(result, window)
        finally:
            # cleaned up even when the trigger or the window function raised (a failure that goes to the error
            # side output must not leave the pane behind)
            if event_time == self.is_event_time and timer.timestamp == cleanup:
                self._clear_all_state(window, merging)
            if merging is not None:
                self._persist(merging)
            self.__dict__.pop("_firing_time", None)
            self.__dict__.pop("_cleaning", None)

    def _clear_all_state(self, window: Any, merging: MergingWindowSet | None) -> None:
        if self.observer is not None:
            self.observer.cleaned(self.trigger_context.key, window)
        self.window_state.clear()
        self._pane_state.set_current_namespace(window)
        self._pane_state.clear()
        if self.accumulation == "retracting":
            self.backend.get_partitioned_state(window, LAST_RESULTS).clear()
        self.trigger.clear(window, self.trigger_context)
        self.process_context._window = window
        self.spec.function.clear(self.process_context)
        if merging is not None:
            merging.retire_window(window)
            self._persist(merging)

    def _fires_again(self, window: Any) -> bool:
        """Whether the current key has a timer of ``window`` that may fire it: any event-time timer but the
        cleanup timer at ``max_timestamp + allowed lateness`` when the lateness makes that time another than the
        window's end (the end's timer is where triggers fire; a trigger of one's own that registers a timer at
        exactly the cleanup time is not told apart from the cleanup); processing-time timers count only for a
        window never cleaned up (``LONG_MAX``), as BATCH execution fires them after the event-time ones."""
        key = self.trigger_context.key
        cleanup = self._cleanup_time(window)
        timers = self.timer_service
        own = timers.event_time_timers.count_of(key, window)
        if cleanup != window.max_timestamp() and (cleanup, key, window) in timers.event_time_timers:
            own -= 1
        if cleanup == LONG_MAX:
            own += timers.processing_time_timers.count_of(key, window)
        return own > 0

    def _cleanup_time(self, window: Any) -> int:
        if self.is_event_time:
            return cleanup_time(window.max_timestamp(), self.allowed_lateness)
        return int(window.max_timestamp())

    def _register_cleanup_timer(self, window: Any) -> None:
        cleanup = self._cleanup_time(window)
        if cleanup == LONG_MAX:
            return  # no cleanup timer at the end of time
        if self.is_event_time:
            self.timer_service.register_event_time_timer(window, cleanup)
        else:
            self.timer_service.register_processing_time_timer(window, cleanup)

    def _delete_cleanup_timer(self, window: Any) -> None:
        cleanup = self._cleanup_time(window)
        if cleanup == LONG_MAX:
            return
        if self.is_event_time:
            self.timer_service.delete_event_time_timer(window, cleanup)
        else:
            self.timer_service.delete_processing_time_timer(window, cleanup)

    def _is_window_late(self, window: Any) -> bool:
        return self.is_event_time and is_window_late(self._cleanup_time(window), self.timer_service.current_watermark)

    def _is_element_late(self, timestamp: int) -> bool:
        watermark = self.timer_service.current_watermark
        return self.is_event_time and is_element_late(timestamp, self.allowed_lateness, watermark)

    # -- merging window set ------------------------------------------------------------------------------------

    def _merging_window_set(self) -> MergingWindowSet:
        stored = self._merging_set_state.get_internal() or ()
        return MergingWindowSet(self.assigner, stored)  # type: ignore[arg-type]

    def _persist(self, merging: MergingWindowSet) -> None:
        pairs = merging.persist()
        if pairs is not None:
            self._merging_set_state.update(pairs)
            merging._initial = merging.mapping.to_dict()


class EvictingWindowOperator(WindowOperator):
    """The window operator with an evictor: panes keep every element with its timestamp; at each firing the
    evictor runs before the function, the function sees the remaining values, the evictor runs after, and
    what is left is the pane's new contents."""

    def __init__(
        self,
        assigner: WindowAssigner[Any, Any],
        spec: WindowFunctionSpec,
        key_selector: KeySelector,
        evictor: Evictor[Any, Any],
        trigger: Trigger[Any, Any] | None = None,
        allowed_lateness: DurationLike = 0,
        late_data_tag: OutputTag[Any] | None = None,
        accumulation: str = "accumulating",
        key_time: PerKeyWatermarks | None = None,
    ) -> None:
        if not isinstance(evictor, Evictor):
            raise TypeError(f"expected an Evictor, got {type(evictor).__name__}")
        super().__init__(
            assigner, spec.for_evictor(), key_selector, trigger, allowed_lateness, late_data_tag, accumulation, key_time
        )
        self.evictor = evictor

    def _state_value(self, record: StreamRecord[Any]) -> Any:
        return (record.value, record.timestamp)

    def _emit_window_contents(self, window: Any, contents: Any) -> None:
        self.collector.timestamp = window.max_timestamp()
        context = self.process_context
        context._window = window
        elements = [TimestampedValue(value, timestamp) for value, timestamp in contents]
        self.evictor.evict_before(elements, len(elements), window, context)
        values = [element.value for element in elements]
        context._pane = self._next_pane(window)
        try:
            self.collector.collect_all(self._results(window, context, values))
        finally:
            context._pane = None
        self.evictor.evict_after(elements, len(elements), window, context)
        self.window_state.update([(element.value, element.timestamp) for element in elements])
