"""Test doubles and inspection helpers shared by the core tests.

Flink's window-operator tests drive the operator with Mockito mocks of ``WindowAssigner``, ``Trigger`` and
the window function, and count keyed-state entries and timers through the test harness. These are the
Python counterparts: scriptable assigners and triggers that record how the operator calls them, a window
function that records every pane it is handed, and counters over the operator's state and timers.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from panes.state.descriptors import ValueStateDescriptor
from panes.testing import WindowOperatorHarness
from panes.windowing import (
    Evictor,
    MergingWindowAssigner,
    ProcessWindowFunction,
    Trigger,
    TriggerContext,
    TriggerResult,
    WindowAssigner,
    WindowContext,
)
from panes.windowing.assigners.base import MergeCallback, WindowAssignerContext
from panes.windowing.operator import WindowOperator
from panes.windowing.pane_info import PANE_STATE
from panes.windowing.triggers.base import OnMergeContext

STRING_STATE = ValueStateDescriptor("string-state")
"""A trigger-side value state, as Flink's contract tests use (``"string-state"``)."""


# -- assigners ---------------------------------------------------------------------------------------------


class _Script:
    """What a scripted assigner answers. The window operator keeps a (shallow) copy of its assigner, so the
    answers live in this shared object and the test's assigner and the operator's copy see the same."""

    def __init__(self, windows: Iterable[Any]) -> None:
        self.windows = list(windows)
        self.merge_plan: tuple[Collection[Any], Any] | None = None


class _Scripted:
    _script: _Script

    @property
    def windows(self) -> list[Any]:
        return self._script.windows

    @windows.setter
    def windows(self, windows: Iterable[Any]) -> None:
        self._script.windows = list(windows)

    @property
    def merge_plan(self) -> tuple[Collection[Any], Any] | None:
        return self._script.merge_plan

    @merge_plan.setter
    def merge_plan(self, plan: tuple[Collection[Any], Any] | None) -> None:
        self._script.merge_plan = plan


class FixedAssigner(_Scripted, WindowAssigner[Any, Any]):
    """Assigns every element to ``windows`` (change the attribute between elements); records its calls."""

    def __init__(self, windows: Iterable[Any] = (), *, event_time: bool = True) -> None:
        self._script = _Script(windows)
        self.event_time = event_time
        self.calls: list[tuple[Any, int]] = []

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> list[Any]:
        self.calls.append((element, timestamp))
        return list(self.windows)

    def get_default_trigger(self) -> Trigger[Any, Any]:
        return ScriptedTrigger()

    def is_event_time(self) -> bool:
        return self.event_time


class ScriptedMergingAssigner(_Scripted, MergingWindowAssigner[Any, Any]):
    """A merging assigner whose merges are scripted: ``merge_plan`` is ``(to_be_merged, result)`` or ``None``.

    ``merge_windows`` records the windows it was offered and reports the plan to the callback when every
    window of the plan is among them (so a plan only applies to the element it was written for).
    """

    def __init__(self, windows: Iterable[Any] = (), *, event_time: bool = True) -> None:
        self._script = _Script(windows)
        self.event_time = event_time
        self.offered: list[list[Any]] = []

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> list[Any]:
        return list(self.windows)

    def merge_windows(self, windows: Iterable[Any], callback: MergeCallback) -> None:
        offered = list(windows)
        self.offered.append(offered)
        if self.merge_plan is not None and all(w in offered for w in self.merge_plan[0]):
            callback(self.merge_plan[0], self.merge_plan[1])

    def get_default_trigger(self) -> Trigger[Any, Any]:
        return ScriptedTrigger()

    def is_event_time(self) -> bool:
        return self.event_time


# -- triggers ----------------------------------------------------------------------------------------------

ElementHook = Callable[[Any, int, Any, TriggerContext], TriggerResult]
TimeHook = Callable[[int, Any, TriggerContext], TriggerResult]


@dataclass
class TriggerCalls:
    on_element: list[tuple[Any, int, Any]] = field(default_factory=list)
    on_event_time: list[tuple[int, Any]] = field(default_factory=list)
    on_processing_time: list[tuple[int, Any]] = field(default_factory=list)
    on_merge: list[Any] = field(default_factory=list)
    clear: list[Any] = field(default_factory=list)


class ScriptedTrigger(Trigger[Any, Any]):
    """A trigger whose answers are plain attributes (``CONTINUE`` by default) or hooks; it records calls.

    Like a Mockito mock of ``Trigger``: ``clear`` does nothing unless ``clear_hook`` is set, so timers and
    state it created stay behind (which the operator must cope with).
    """

    def __init__(self, *, can_merge: bool = True) -> None:
        self.calls = TriggerCalls()
        self.element_result = TriggerResult.CONTINUE
        self.event_time_result = TriggerResult.CONTINUE
        self.processing_time_result = TriggerResult.CONTINUE
        self.element_hook: ElementHook | None = None
        self.event_time_hook: TimeHook | None = None
        self.processing_time_hook: TimeHook | None = None
        self.merge_hook: Callable[[Any, OnMergeContext], None] | None = None
        self.clear_hook: Callable[[Any, TriggerContext], None] | None = None
        self._can_merge = can_merge

    def on_element(self, element: Any, timestamp: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        self.calls.on_element.append((element, timestamp, window))
        if self.element_hook is not None:
            return self.element_hook(element, timestamp, window, ctx)
        return self.element_result

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        self.calls.on_event_time.append((time, window))
        if self.event_time_hook is not None:
            return self.event_time_hook(time, window, ctx)
        return self.event_time_result

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        self.calls.on_processing_time.append((time, window))
        if self.processing_time_hook is not None:
            return self.processing_time_hook(time, window, ctx)
        return self.processing_time_result

    def can_merge(self) -> bool:
        return self._can_merge

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        self.calls.on_merge.append(window)
        if self.merge_hook is not None:
            self.merge_hook(window, ctx)

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        self.calls.clear.append(window)
        if self.clear_hook is not None:
            self.clear_hook(window, ctx)


# -- window functions ----------------------------------------------------------------------------------------


@dataclass
class Pane:
    key: Any
    window: Any
    elements: list[Any]


class RecordingFunction(ProcessWindowFunction[Any, Any, Any, Any]):
    """Records each evaluated pane and each ``clear``; emits what ``emit(key, window, elements)`` returns
    (nothing by default). ``on_process``/``on_clear`` hooks see the context."""

    def __init__(self, emit: Callable[[Any, Any, list[Any]], Iterable[Any]] | None = None) -> None:
        self.panes: list[Pane] = []
        self.cleared: list[Any] = []
        self.emit = emit
        self.on_process: Callable[[WindowContext[Any]], None] | None = None
        self.on_clear: Callable[[WindowContext[Any]], None] | None = None
        self.opened = 0
        self.closed = 0

    def open(self, runtime_context: Any) -> None:
        self.opened += 1

    def close(self) -> None:
        self.closed += 1

    def process(self, key: Any, context: WindowContext[Any], elements: Iterable[Any]) -> Iterable[Any] | None:
        values = list(elements)
        self.panes.append(Pane(key, context.window(), values))
        if self.on_process is not None:
            self.on_process(context)
        if self.emit is None:
            return None
        return self.emit(key, context.window(), values)

    def clear(self, context: WindowContext[Any]) -> None:
        self.cleared.append(context.window())
        if self.on_clear is not None:
            self.on_clear(context)


def identity(value: Any) -> Any:
    return value


def first(value: Any) -> Any:
    return value[0]


# -- inspection --------------------------------------------------------------------------------------------


def operator_of(harness: WindowOperatorHarness) -> WindowOperator:
    harness.open()
    return harness.window_operator


def num_keyed_state_entries(harness: WindowOperatorHarness) -> int:
    """Flink's ``numKeyedStateEntries()``: entries of every keyed state Flink's window operator keeps, every key
    and namespace (not panes' pane info, ``pane_info.PANE_STATE``, which Flink does not have: see
    :func:`num_pane_info_entries`)."""
    backend = operator_of(harness).backend
    return sum(1 for name in backend.state_names() if name != PANE_STATE.name for _ in backend.entries(name))


def num_pane_info_entries(harness: WindowOperatorHarness) -> int:
    """Windows whose firings the operator counts (``pane_info``): one per window that fired and is not cleaned up."""
    backend = operator_of(harness).backend
    return sum(1 for name in backend.state_names() if name == PANE_STATE.name for _ in backend.entries(name))


def num_event_time_timers(harness: WindowOperatorHarness, window: Any = None) -> int:
    timers = operator_of(harness).timer_service.event_time_timers
    return sum(1 for t in timers if window is None or t.namespace == window)


def num_processing_time_timers(harness: WindowOperatorHarness, window: Any = None) -> int:
    timers = operator_of(harness).timer_service.processing_time_timers
    return sum(1 for t in timers if window is None or t.namespace == window)


def window_contents(harness: WindowOperatorHarness) -> dict[tuple[Any, Any], Any]:
    """``{(key, window): contents}`` of the ``window-contents`` state."""
    backend = operator_of(harness).backend
    return {(key, ns): value for key, ns, value in backend.entries("window-contents")}


def records(harness: WindowOperatorHarness) -> list[tuple[Any, int | None]]:
    """``(value, timestamp)`` of every main-output record, in emission order."""
    return [(r.value, r.timestamp) for r in harness.extract_output_records()]


class NoOpEvictor(Evictor[Any, Any]):
    """An evictor that keeps everything (to run the plain-operator contract on the evicting operator)."""

    def __init__(self) -> None:
        self.before: list[tuple[list[Any], int, Any]] = []
        self.after: list[tuple[list[Any], int, Any]] = []

    def evict_before(self, elements: list[Any], size: int, window: Any, evictor_context: Any) -> None:
        self.before.append(([e.value for e in elements], size, window))

    def evict_after(self, elements: list[Any], size: int, window: Any, evictor_context: Any) -> None:
        self.after.append(([e.value for e in elements], size, window))


def by_watermark(harness: WindowOperatorHarness) -> list[tuple[list[tuple[Any, int | None]], int | None]]:
    """The output cut at each watermark: ``[(sorted records before it, watermark), ...]``; records after
    the last watermark come with ``None``. Flink's tests compare outputs this way (records sorted,
    watermarks in place), since the order of results of one watermark across keys is an implementation
    detail of the timer queue."""
    from panes.elements import StreamRecord, Watermark

    segments: list[tuple[list[tuple[Any, int | None]], int | None]] = []
    pending: list[tuple[Any, int | None]] = []
    for element in harness.get_output():
        if isinstance(element, StreamRecord):
            pending.append((element.value, element.timestamp))
        elif isinstance(element, Watermark):
            segments.append((sorted(pending, key=repr), element.timestamp))
            pending = []
    if pending:
        segments.append((sorted(pending, key=repr), None))
    return segments
