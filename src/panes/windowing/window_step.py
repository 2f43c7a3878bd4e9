"""What the element-by-element window operators share: the base of the general ``WindowOperator``
(``operator.py``, Flink's operator) and of the lean ``AlignedWindowOperator`` (``aligned.py``), siblings that
apply the same event-time rules (``panes.windowing.rules``) and differ only in how they keep panes and timers.

:class:`WindowStep` holds what is not about triggers or pane storage: the window's configuration, checked as
Flink checks it when the job is built (:func:`validate_window_configuration`); the window function with the
context it sees (:class:`WindowFunctionContext`); the emission of a pane (results carry the window's
``max_timestamp()``, each firing gets its pane info, a retracting window's rows retract its previous ones); the
closing times around an advance of the watermark or of processing time (pane info); the late-element counter;
and what a snapshot and a rescaling keep of them (the assigner's stagger offset, the late count).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from panes.elements import StreamRecord, Watermark
from panes.errors import UnsupportedOperationError
from panes.operators.base import OneInputStreamOperator, TimestampedCollector
from panes.operators.keys import KeySelector
from panes.operators.rescaling import Owner
from panes.state.api import KeyedStateStore
from panes.state.backend import VOID_NAMESPACE
from panes.state.store import MergingWindowStateStore, NamespacedStateStore
from panes.tags import OutputTag
from panes.time import LONG_MIN, DurationLike, duration_ms
from panes.timers.heap import InternalTimer
from panes.windowing.accumulation import LAST_RESULTS, check_mode, with_retractions
from panes.windowing.assigners.base import MergingWindowAssigner, WindowAssigner
from panes.windowing.functions import WindowContext
from panes.windowing.internal_functions import WindowFunctionSpec
from panes.windowing.pane_info import PANE_STATE, PaneInfo, next_pane
from panes.windowing.rules import cleanup_time
from panes.windowing.triggers.base import Trigger
from panes.windowing.windows import GlobalWindow, TimeWindow

WINDOW_TIMERS = "window-timers"


_WHAT_TO_CHANGE = {
    TimeWindow: (
        "window with a time-window assigner (tumbling, sliding or session windows), or use a trigger that works "
        "on any window (CountTrigger, ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger, DeltaTrigger "
        "or your own)"
    ),
    GlobalWindow: "window with GlobalWindows, or use another trigger",
}


def check_window_type(assigner: WindowAssigner[Any, Any], trigger: Trigger[Any, Any]) -> None:
    """Raise ``TypeError`` when ``trigger`` needs a class of window (``required_window_type()``) that
    ``assigner`` does not make (``window_type()``); nothing when either is unknown (``None``).

    Flink types these triggers with their window class (``EventTimeTrigger`` is a ``Trigger<Object,
    TimeWindow>``): a job that puts one on other windows (``GlobalWindows``, count windows) does not compile in
    Java and fails with a ``ClassCastException`` at the first element otherwise.
    """
    needed = trigger.required_window_type()
    made = assigner.window_type()
    if needed is None or made is None or issubclass(made, needed):
        return
    hint = _WHAT_TO_CHANGE.get(needed, f"window with an assigner of {needed.__name__}s, or use another trigger")
    count_windows = " (count windows are GlobalWindows)" if made is GlobalWindow else ""
    raise TypeError(
        f"{trigger!r} needs {needed.__name__} windows (it reads their end, max_timestamp()), but {assigner!r} "
        f"makes {made.__name__} windows{count_windows}; Flink fails such a job. To fix it, {hint}."
    )


def validate_window_configuration(
    assigner: WindowAssigner[Any, Any], trigger: Trigger[Any, Any], allowed_lateness: DurationLike
) -> int:
    """Flink's construction-time checks; returns the allowed lateness in ms.

    Raises ``ValueError`` for a negative lateness, ``UnsupportedOperationError`` for a merging assigner
    with a trigger that cannot merge, and ``TypeError`` for a trigger that needs another class of window than
    the assigner makes (:func:`check_window_type`).
    """
    if not isinstance(assigner, WindowAssigner):
        raise TypeError(f"expected a WindowAssigner, got {type(assigner).__name__}")
    if not isinstance(trigger, Trigger):
        raise TypeError(f"expected a Trigger, got {type(trigger).__name__}")
    lateness = duration_ms(allowed_lateness, name="allowed_lateness")
    if lateness < 0:
        raise ValueError(f"The allowed lateness cannot be negative (got {lateness} ms).")
    check_window_type(assigner, trigger)
    if isinstance(assigner, MergingWindowAssigner) and not trigger.can_merge():
        raise UnsupportedOperationError(
            "A merging window assigner cannot be used with a trigger that does not support merging "
            f"({trigger!r}); pick a trigger whose can_merge() is True."
        )
    return lateness


class WindowInWork:
    """The key and window an operator is working on (for the window function's key and failure reports); the
    general operator's trigger context is one."""

    __slots__ = ("key", "window")

    def __init__(self) -> None:
        self.key: Any = None
        self.window: Any = None


class WindowFunctionContext(WindowContext[Any]):
    """What window functions and evictors see: the window, time, state and side outputs."""

    __slots__ = ("_global", "_operator", "_pane", "_window")

    def __init__(self, operator: WindowStep) -> None:
        self._operator = operator
        self._window: Any = None
        self._pane: PaneInfo | Callable[[], PaneInfo] | None = None
        """The pane info of the firing in progress, or what works it out when the function asks for it."""
        self._global = NamespacedStateStore(operator.backend, VOID_NAMESPACE)

    def pane(self) -> PaneInfo:
        pane = self._pane
        if pane is None:
            raise UnsupportedOperationError("pane() is known while a pane fires (in process), not in clear()")
        if not isinstance(pane, PaneInfo):
            pane = self._pane = pane()
        return pane

    def window(self) -> Any:
        return self._window

    def current_processing_time(self) -> int:
        return self._operator.timer_service.current_processing_time()

    def current_watermark(self) -> int:
        return self._operator.timer_service.current_watermark

    # the evictor context of Flink has the same two clocks under trigger-style names
    def get_current_processing_time(self) -> int:
        return self.current_processing_time()

    def get_current_watermark(self) -> int:
        return self.current_watermark()

    def window_state(self) -> KeyedStateStore:
        if self._operator.is_merging:
            return MergingWindowStateStore()
        return NamespacedStateStore(self._operator.backend, self._window)

    def global_state(self) -> KeyedStateStore:
        return self._global

    def output(self, output_tag: OutputTag[Any], value: Any) -> None:
        if output_tag is None:
            raise ValueError("OutputTag must not be None.")
        self._operator.output.collect_side(output_tag, StreamRecord(value, self._window.max_timestamp()))


class WindowStep(OneInputStreamOperator):
    """See the module docstring. Subclasses keep panes and timers, call :meth:`_emit_window_contents` to fire a
    pane, and set ``_firing_time`` and ``_cleaning`` around a timer's firing (pane info)."""

    def __init__(
        self,
        assigner: WindowAssigner[Any, Any],
        spec: WindowFunctionSpec,
        key_selector: KeySelector,
        trigger: Trigger[Any, Any] | None = None,
        allowed_lateness: DurationLike = 0,
        late_data_tag: OutputTag[Any] | None = None,
        accumulation: str = "accumulating",
    ) -> None:
        super().__init__(key_selector)
        check_mode(accumulation)
        self.accumulation = accumulation
        if not isinstance(assigner, WindowAssigner):
            raise TypeError(f"expected a WindowAssigner, got {type(assigner).__name__}")
        trigger = trigger if trigger is not None else assigner.get_default_trigger()
        self.allowed_lateness = validate_window_configuration(assigner, trigger, allowed_lateness)
        if late_data_tag is not None and not isinstance(late_data_tag, OutputTag):
            raise TypeError(f"late_data_tag must be an OutputTag, got {type(late_data_tag).__name__}")
        self.assigner = copy.copy(assigner)  # each operator instance keeps its own stagger offset
        self.trigger = trigger
        self.spec = spec
        self.late_data_tag = late_data_tag
        self.is_event_time = assigner.is_event_time()
        self.is_merging = isinstance(assigner, MergingWindowAssigner)

    @property
    def num_late_records_dropped(self) -> int:
        """Late elements dropped because there is no late-data side output (Flink's ``numLateRecordsDropped``;
        the ``late_dropped`` counter)."""
        return self.counters.late_dropped

    @num_late_records_dropped.setter
    def num_late_records_dropped(self, value: int) -> None:
        self.counters.late_dropped = value

    # when a pane fires (pane info, and the observer's firings): the closing time (watermark or processing time)
    # before the advance in progress, the time of the timer of the window's clock being handled and whether it
    # cleans the window up; class attributes while nothing is in progress
    _closing_before: int | None = None
    _firing_time: int | None = None
    _cleaning: bool = False
    _processing_time_seen: int = LONG_MIN
    """The processing time of the last advance (the clock may have moved on before the operator hears of it)."""

    def _closing_times(self) -> tuple[int, int]:
        """The closing time of the firing in progress (a timer of the window's clock fires as that clock passes
        its time) and the closing time before the advance it is part of (the same outside an advance)."""
        timers = self.timer_service
        closing = timers.current_watermark if self.is_event_time else timers.current_processing_time()
        time = closing if self._firing_time is None else self._firing_time
        if timers.pass_before is not None and self.is_event_time:  # event time per key: the key's own before
            return time, timers.pass_before
        before = closing if self._closing_before is None else self._closing_before
        return time, before

    # -- lifecycle ---------------------------------------------------------------------------------------

    def open(self) -> None:
        owner = f"the trigger {self.trigger!r} of {self.task_name}"
        self.timer_service = self.get_internal_timer_service(WINDOW_TIMERS, self, owner)
        self.collector = TimestampedCollector(self.output)
        self.trigger_context = self._window_in_work()
        self.process_context = WindowFunctionContext(self)
        self._pane_state = self.backend.get_partitioned_state(None, PANE_STATE)
        runtime_context = self.runtime_context()
        for function in self.spec.function.open_functions():
            function.open(runtime_context)

    def _window_in_work(self) -> Any:
        """The holder of the key and window in work (the general operator's is its trigger context)."""
        return WindowInWork()

    def close(self) -> None:
        for function in self.spec.function.open_functions():
            function.close()

    def snapshot_extra(self) -> Any:
        return {"stagger_offset": getattr(self.assigner, "stagger_offset", None), "late": self.num_late_records_dropped}

    @classmethod
    def rescale_extra(cls, extras: list[Any], owner: Owner, count: int) -> list[Any]:
        """The stagger offset is the same everywhere; the late records dropped so far are counted once (by the
        first new instance)."""
        first = next((extra for extra in extras if extra), None)
        if first is None:
            return [None] * count
        late = sum((extra or {}).get("late", 0) for extra in extras)
        return [{**first, "late": late if index == 0 else 0} for index in range(count)]

    def restore_extra(self, data: Any) -> None:
        if data is None:
            return
        if data.get("stagger_offset") is not None:
            self.assigner.stagger_offset = data["stagger_offset"]  # type: ignore[attr-defined]
        self.num_late_records_dropped = data.get("late", 0)

    def failure_window(self) -> Any:
        """The window whose pane the operator is working on."""
        return self.trigger_context.window

    def get_current_processing_time(self) -> int:
        """The assigner context: processing time for processing-time assigners and stagger."""
        return self.timer_service.current_processing_time()

    def on_event_time(self, timer: InternalTimer) -> None:
        """A timer of the operator's timer service (the general operator's triggers register them)."""

    def on_processing_time(self, timer: InternalTimer) -> None:
        """A timer of the operator's timer service (the general operator's triggers register them)."""

    # -- emission -------------------------------------------------------------------------------------------------

    def _emit_window_contents(self, window: Any, contents: Any) -> None:
        self._pane_emitter(window)(contents)

    def _pane_emitter(self, window: Any) -> Callable[[Any], None]:
        """What emits a pane of ``window`` firing now, given its contents, while the pane's key is the current
        one: the window function's results with the window's ``max_timestamp()`` and the firing's pane info.
        Panes of several keys firing at one time for one window share it (what is the same for all of them is
        worked out once)."""
        collector, context, results = self.collector, self.process_context, self._results
        collect_all = collector.collect_all
        max_timestamp = window.max_timestamp()
        pane_now = self._pane_info(window)

        def emit(contents: Any) -> None:
            collector.timestamp = max_timestamp
            context._window = window
            context._pane = pane_now()
            try:
                collect_all(results(window, context, contents))
            finally:
                context._pane = None

        return emit

    def _results(self, window: Any, context: WindowFunctionContext, contents: Any) -> Any:
        """The window function's results for ``contents`` (a retracting window's with its retractions first)."""
        results = self.spec.function.process(self.trigger_context.key, context, contents)
        if self.accumulation != "retracting":
            return results
        return with_retractions(self.backend.get_partitioned_state(window, LAST_RESULTS), results)

    def _closes(self, window: Any) -> bool:
        """Whether the firing of ``window`` in progress is its cleanup timer's, or comes in the advance of event
        time that reaches the window's cleanup time (``max_timestamp + allowed lateness``; ``LONG_MAX`` at the
        end of the input): either way the window is cleaned up before any element can reach it again."""
        if self._cleaning:
            return True
        if not self.is_event_time:
            return False
        cleanup = cleanup_time(window.max_timestamp(), self.allowed_lateness)
        return self.timer_service.current_watermark >= cleanup

    def _fires_again(self, window: Any) -> bool:
        """Whether a timer of ``window`` of the current key may still fire it before it is cleaned up (asked when
        :meth:`_closes`). The general operator's triggers register timers of their own (it counts them); here
        only the window's end and cleanup time have one, and the end's has fired."""
        return False

    def _next_pane(self, window: Any) -> PaneInfo | Callable[[], PaneInfo]:
        """The pane info of the firing of ``window`` in progress (``pane_info``), recorded in the window's state
        of the current key; for the window's last firing, which records nothing, what works it out if the
        function asks for it."""
        return self._pane_info(window)()

    def _pane_info(self, window: Any) -> Callable[[], PaneInfo | Callable[[], PaneInfo]]:
        """:meth:`_next_pane` for firings of ``window`` at the time in progress, each called while its key is the
        current one (what is the same for all of them is worked out once). A firing is the window's last when
        it :meth:`_closes` the window and no timer of its key :meth:`_fires_again` it."""
        time, before = self._closing_times()
        state = self._pane_state
        max_timestamp = window.max_timestamp()
        closes = self._closes(window)
        quiet = self.timer_service.quiet_pass

        def last_pane() -> PaneInfo:
            state.set_current_namespace(window)
            return next_pane(state, max_timestamp, time, before, True, quiet)

        def pane() -> PaneInfo | Callable[[], PaneInfo]:
            if closes and (self._cleaning or not self._fires_again(window)):
                return last_pane
            state.set_current_namespace(window)
            return next_pane(state, max_timestamp, time, before, False, quiet)

        return pane

    # -- the closing time before an advance (pane info) ------------------------------------------------------

    def process_watermark(self, watermark: Watermark) -> None:
        if self.key_time is not None:  # each key's time before the advance is the key-time service's pass_before
            super().process_watermark(watermark)
            return
        if self.is_event_time:
            self._closing_before = self.timer_service.current_watermark
        try:
            super().process_watermark(watermark)
        finally:
            self.__dict__.pop("_closing_before", None)

    def advance_processing_time(self, now: int) -> None:
        previous, self._processing_time_seen = self._processing_time_seen, now
        if not self.is_event_time:
            self._closing_before = previous
        try:
            super().advance_processing_time(now)
        finally:
            self.__dict__.pop("_closing_before", None)

    def end_key(self) -> None:
        # BATCH execution: each key's time goes from LONG_MIN to LONG_MAX at once
        self._closing_before = LONG_MIN
        try:
            super().end_key()
        finally:
            self.__dict__.pop("_closing_before", None)
