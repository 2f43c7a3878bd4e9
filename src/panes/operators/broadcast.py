"""Broadcast operators: a (keyed or non-keyed) stream connected with a broadcast stream (Flink's
``CoBroadcastWithKeyedOperator`` and ``CoBroadcastWithNonKeyedOperator``).

Input 1 is the non-broadcast stream, input 2 the broadcast stream, whose every element reaches every parallel
instance. Each instance keeps its own broadcast states (one map per descriptor given to ``broadcast(...)``),
written only while processing a broadcast element and snapshotted with the operator. Results carry the
element's timestamp; results of an event-time timer carry the timer's time, of a processing-time timer none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from panes.elements import StreamRecord
from panes.functions.broadcast import (
    BroadcastProcessFunction,
    KeyedBroadcastContext,
    KeyedBroadcastOnTimerContext,
    KeyedBroadcastProcessFunction,
)
from panes.functions.stream import TimeDomain, TimerService
from panes.operators.base import TimestampedCollector
from panes.operators.keyed import USER_TIMERS, KeyedTimerService, TimerCallContext
from panes.operators.keys import KeySelector
from panes.operators.two_input import TwoInputStreamOperator
from panes.state.backend import NO_KEY, VOID_NAMESPACE
from panes.state.broadcast import HeapBroadcastState, ReadOnlyBroadcastStateView
from panes.state.descriptors import MapStateDescriptor
from panes.tags import OutputTag
from panes.timers.heap import InternalTimer

MISSING_STATE = (
    "The requested state does not exist. Check for typos in your state descriptor, or specify the state "
    "descriptor in the datastream.broadcast(...) call if you forgot to register it."
)


def check_broadcast_descriptors(descriptors: Sequence[Any]) -> tuple[MapStateDescriptor, ...]:
    """The descriptors of ``broadcast(...)``: at least one, each a ``MapStateDescriptor``, names distinct."""
    if not descriptors:
        raise ValueError("broadcast state needs at least one MapStateDescriptor: broadcast(MapStateDescriptor(...))")
    names: set[str] = set()
    for descriptor in descriptors:
        if not isinstance(descriptor, MapStateDescriptor):
            raise TypeError(f"broadcast state is described by a MapStateDescriptor, got {type(descriptor).__name__}")
        if descriptor.name in names:
            raise ValueError(f"two broadcast state descriptors are named {descriptor.name!r}: give each its own name")
        names.add(descriptor.name)
    return tuple(descriptors)


class _BroadcastHost(TwoInputStreamOperator):
    """What both broadcast operators share: the broadcast states, their snapshots, and the contexts' basics."""

    function: Any
    has_broadcast_input = True
    """Input 2 is a broadcast stream (BATCH execution reads it first: ``panes.operators.sorted_input``)."""

    def __init__(
        self, function: Any, descriptors: Sequence[MapStateDescriptor], key_selector: KeySelector | None = None
    ) -> None:
        super().__init__(key_selector, None)
        self.function = function
        self.broadcast_states = {d.name: HeapBroadcastState(d.name, self._broadcast_changed) for d in descriptors}
        self._read_only = {name: ReadOnlyBroadcastStateView(state) for name, state in self.broadcast_states.items()}
        self._broadcast_dirty = False
        self.current_timestamp: int | None = None

    def _broadcast_changed(self) -> None:
        self._broadcast_dirty = True

    def broadcast_state(self, descriptor: Any, writable: bool) -> Any:
        name = getattr(descriptor, "name", None)
        if not isinstance(descriptor, MapStateDescriptor) or name not in self.broadcast_states:
            raise ValueError(MISSING_STATE)
        return self.broadcast_states[name] if writable else self._read_only[name]

    def side_output(self, tag: OutputTag[Any], value: Any) -> None:
        if tag is None:
            raise ValueError("OutputTag must not be None.")
        self.output.collect_side(tag, StreamRecord(value, self.current_timestamp))

    def open(self) -> None:
        self.collector = TimestampedCollector(self.output)
        self.function.open(self.runtime_context())

    def close(self) -> None:
        self.function.close()

    def _call(self, method: Callable[[Any, Any], Any], record: StreamRecord[Any], context: Any) -> None:
        self.collector.timestamp = record.timestamp
        self.current_timestamp = record.timestamp
        self.collector.collect_all(method(record.value, context))

    # -- snapshots: the broadcast states travel with the operator's extras ------------------------------------

    def snapshot_extra(self) -> Any:
        extra = dict(super().snapshot_extra())
        extra["broadcast"] = {name: dict(state.entries) for name, state in self.broadcast_states.items()}
        return extra

    def restore_extra(self, data: Any) -> None:
        super().restore_extra(data)
        for name, entries in (data or {}).get("broadcast", {}).items():
            state = self.broadcast_states.get(name)
            if state is not None:
                state.entries = dict(entries)

    def extra_changes(self) -> Any:
        """The watermarks, and the broadcast states only when they changed since the last snapshot or call."""
        extra = self.snapshot_extra()
        if not self._broadcast_dirty:
            del extra["broadcast"]
        self._broadcast_dirty = False
        return extra

    @staticmethod
    def apply_extra_changes(extra: Any, changes: Any) -> Any:
        merged = dict(extra or {})
        merged.update(changes or {})
        return merged

    def forget_changes(self) -> None:
        super().forget_changes()
        self._broadcast_dirty = False


class _Context(TimerCallContext, KeyedBroadcastContext, KeyedBroadcastOnTimerContext):
    """The context of either side (``writable`` says which); the keyed parts work on keyed operators only."""

    _operator: _BroadcastHost

    def __init__(
        self,
        operator: _BroadcastHost,
        writable: bool,
        timers: TimerService | None,
        watermarks: TimerService | None = None,
    ) -> None:
        self._operator = operator
        self._writable = writable
        self._timers = timers
        self._watermarks = watermarks or timers
        """Where ``current_watermark`` reads (the keyed operator's timer service, on either side)."""
        self.domain: TimeDomain | None = None

    def timestamp(self) -> int | None:
        return self._operator.current_timestamp

    def current_processing_time(self) -> int:
        return self._operator.current_processing_time()

    def current_watermark(self) -> int:
        """The timer service's watermark on a keyed operator (as Flink's ``currentWatermark()`` reads it: so a
        timer firing at the end of a key's input in BATCH execution reads ``LONG_MAX``), else the operator's."""
        if self._watermarks is not None:
            return self._watermarks.current_watermark()
        return self._operator.current_watermark()

    def output(self, output_tag: OutputTag[Any], value: Any) -> None:
        self._operator.side_output(output_tag, value)

    def get_broadcast_state(self, state_descriptor: Any) -> Any:
        return self._operator.broadcast_state(state_descriptor, self._writable)

    def apply_to_keyed_state(self, state_descriptor: Any, function: Callable[[Any, Any], None]) -> None:
        if self._operator.key_selector is None:
            raise AttributeError("apply_to_keyed_state needs a keyed stream (KeyedBroadcastProcessFunction)")
        self._operator.backend.apply_to_all_keys(VOID_NAMESPACE, state_descriptor, function)

    def timer_service(self) -> TimerService:
        if self._timers is None:
            raise AttributeError("timers are only available on the keyed side of a KeyedBroadcastProcessFunction")
        return self._timers


class CoBroadcastWithNonKeyedOperator(_BroadcastHost):
    """Hosts a ``BroadcastProcessFunction``."""

    def __init__(self, function: BroadcastProcessFunction[Any, Any, Any], descriptors: Sequence[MapStateDescriptor]):
        super().__init__(function, descriptors)

    def open(self) -> None:
        super().open()
        self.read_only_context = _Context(self, False, None)
        self.broadcast_context = _Context(self, True, None)

    def process_element1(self, record: StreamRecord[Any]) -> None:
        self._call(self.function.process_element, record, self.read_only_context)

    def process_element2(self, record: StreamRecord[Any]) -> None:
        self._call(self.function.process_broadcast_element, record, self.broadcast_context)


class CoBroadcastWithKeyedOperator(_BroadcastHost):
    """Hosts a ``KeyedBroadcastProcessFunction``: keyed state and timers on input 1, as ``KeyedProcessOperator``."""

    def __init__(
        self,
        function: KeyedBroadcastProcessFunction[Any, Any, Any, Any],
        descriptors: Sequence[MapStateDescriptor],
        key_selector: KeySelector,
    ) -> None:
        super().__init__(function, descriptors, key_selector)

    def open(self) -> None:
        owner = f"{type(self.function).__name__} (on_timer) of {self.task_name}"
        self.timer_service = self.get_internal_timer_service(USER_TIMERS, self, owner)
        timers = KeyedTimerService(self.timer_service)
        self.read_only_context = _Context(self, False, timers)
        self.broadcast_context = _Context(self, True, None, timers)
        super().open()

    def process_element1(self, record: StreamRecord[Any]) -> None:
        self._call(self.function.process_element, record, self.read_only_context)

    def process_element2(self, record: StreamRecord[Any]) -> None:
        # the broadcast side has no current key: keyed state is reached through apply_to_keyed_state only
        self.backend.current_key = NO_KEY
        self._call(self.function.process_broadcast_element, record, self.broadcast_context)

    def report_failure(self, record: StreamRecord[Any], error: Exception) -> None:
        if self.backend.current_key is NO_KEY:
            self.backend.current_key = None  # a broadcast element's failure names no key
        super().report_failure(record, error)

    def on_event_time(self, timer: InternalTimer) -> None:
        self._on_timer(timer, TimeDomain.EVENT_TIME, timer.timestamp)

    def on_processing_time(self, timer: InternalTimer) -> None:
        self._on_timer(timer, TimeDomain.PROCESSING_TIME, None)

    def _on_timer(self, timer: InternalTimer, domain: TimeDomain, output_timestamp: int | None) -> None:
        self.collector.timestamp = output_timestamp
        self.current_timestamp = timer.timestamp
        context = self.read_only_context
        context.domain = domain
        try:
            self.collector.collect_all(self.function.on_timer(timer.timestamp, context))
        finally:
            context.domain = None
