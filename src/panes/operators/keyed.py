"""Keyed operators: ``KeyedProcessOperator`` (state + timers), ``StreamGroupedReduceOperator`` (rolling reduce) and
``BatchGroupedReduceOperator`` (the reduce of BATCH execution: one final result per key).

Timers registered by a keyed process function live in the ``"user-timers"`` service, namespace-less,
de-duplicated per (key, time). Results of an event-time timer carry the timer's time as timestamp, results
of a processing-time timer carry none (Flink's ``KeyedProcessOperator``).
"""

from __future__ import annotations

from typing import Any

from panes.elements import StreamRecord
from panes.functions.base import ReduceFunction
from panes.functions.stream import KeyedProcessFunction, OnTimerContext, TimeDomain, TimerService
from panes.operators.base import AbstractStreamOperator, OneInputStreamOperator, TimestampedCollector
from panes.operators.keys import KeySelector
from panes.state.backend import VOID_NAMESPACE
from panes.state.descriptors import ValueStateDescriptor
from panes.tags import OutputTag
from panes.time import LONG_MAX
from panes.timers.heap import InternalTimer
from panes.timers.service import InternalTimerService
from panes.watermarks.per_key import PerKeyWatermarks, check_per_key_watermarks

USER_TIMERS = "user-timers"


class KeyedTimerService(TimerService):
    """The ``TimerService`` a keyed function sees: timers of the current key (Flink's ``SimpleTimerService``)."""

    def __init__(self, service: InternalTimerService) -> None:
        self._service = service

    def current_processing_time(self) -> int:
        return self._service.current_processing_time()

    def current_watermark(self) -> int:
        return self._service.current_watermark

    def register_processing_time_timer(self, timestamp: int) -> None:
        self._service.register_processing_time_timer(VOID_NAMESPACE, timestamp)

    def register_event_time_timer(self, timestamp: int) -> None:
        self._service.register_event_time_timer(VOID_NAMESPACE, timestamp)

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self._service.delete_processing_time_timer(VOID_NAMESPACE, timestamp)

    def delete_event_time_timer(self, timestamp: int) -> None:
        self._service.delete_event_time_timer(VOID_NAMESPACE, timestamp)


class TimerCallContext:
    """What the contexts of keyed functions share: the current key (from ``_operator``) and the time domain of
    the timer being fired (``domain``, set by the operator around ``on_timer`` only)."""

    _operator: Any
    domain: TimeDomain | None

    def get_current_key(self) -> Any:
        return self._operator.get_current_key()

    def time_domain(self) -> TimeDomain:
        if self.domain is None:
            raise RuntimeError("time_domain() is only available in on_timer")
        return self.domain


class KeyedContext(TimerCallContext, OnTimerContext):
    """Context of a keyed process call: the element's (or timer's) timestamp, key, timers, side outputs."""

    def __init__(self, operator: OneInputStreamOperator | Any, timers: TimerService) -> None:
        self._operator = operator
        self._timers = timers
        self.current_timestamp: int | None = None
        self.domain: TimeDomain | None = None

    def timestamp(self) -> int | None:
        return self.current_timestamp

    def timer_service(self) -> TimerService:
        return self._timers

    def output(self, output_tag: OutputTag[Any], value: Any) -> None:
        if output_tag is None:
            raise ValueError("OutputTag must not be None.")
        self._operator.output.collect_side(output_tag, StreamRecord(value, self.current_timestamp))


class KeyedFunctionHost(AbstractStreamOperator):
    """What the keyed process operators share: the user function's lifecycle, its context and timers, and the
    ``on_timer`` calls (event-time results carry the timer's time, processing-time results no timestamp)."""

    function: Any

    def open(self) -> None:
        self.collector = TimestampedCollector(self.output)
        owner = f"{type(self.function).__name__} (on_timer) of {self.task_name}"
        self.timer_service = self.get_internal_timer_service(USER_TIMERS, self, owner)
        self.context = KeyedContext(self, KeyedTimerService(self.timer_service))
        self.function.open(self.runtime_context())

    def close(self) -> None:
        self.function.close()

    def _call(self, method: Any, record: StreamRecord[Any]) -> None:
        """Call ``method(value, ctx)`` for ``record`` and emit its results with the record's timestamp."""
        self.collector.timestamp = record.timestamp
        self.context.current_timestamp = record.timestamp
        self.context.domain = None
        self.collector.collect_all(method(record.value, self.context))

    def on_event_time(self, timer: InternalTimer) -> None:
        self._on_timer(timer, TimeDomain.EVENT_TIME, timer.timestamp)

    def on_processing_time(self, timer: InternalTimer) -> None:
        self._on_timer(timer, TimeDomain.PROCESSING_TIME, None)

    def _on_timer(self, timer: InternalTimer, domain: TimeDomain, output_timestamp: int | None) -> None:
        self.collector.timestamp = output_timestamp
        context = self.context
        context.current_timestamp = timer.timestamp
        context.domain = domain
        self.collector.collect_all(self.function.on_timer(timer.timestamp, context))
        context.domain = None


class KeyedProcessOperator(KeyedFunctionHost, OneInputStreamOperator):
    """Hosts a ``KeyedProcessFunction``: keyed state through its runtime context, timers through ``ctx``; with
    ``key_time``, each key's event-time timers and ``current_watermark()`` follow the key's own time
    (``panes.watermarks.per_key``), moved on after each of its elements is processed."""

    def __init__(
        self,
        function: KeyedProcessFunction[Any, Any, Any],
        key_selector: KeySelector,
        key_time: PerKeyWatermarks | None = None,
    ) -> None:
        super().__init__(key_selector)
        self.function = function
        if key_time is not None:
            self.key_time = check_per_key_watermarks(key_time)

    def process_element(self, record: StreamRecord[Any]) -> None:
        self._call(self.function.process_element, record)


class StreamGroupedReduceOperator(OneInputStreamOperator):
    """``KeyedStream.reduce``: a rolling reduce per key that emits every intermediate result with the input's
    timestamp (the first element of a key is emitted as it is)."""

    STATE = ValueStateDescriptor("_op_state")

    def __init__(self, reduce_function: ReduceFunction[Any], key_selector: KeySelector) -> None:
        super().__init__(key_selector)
        self.reduce_function = reduce_function

    def open(self) -> None:
        self.state = self.backend.get_partitioned_state(VOID_NAMESPACE, self.STATE)
        self.reduce_function.open(self.runtime_context())

    def close(self) -> None:
        self.reduce_function.close()

    def process_element(self, record: StreamRecord[Any]) -> None:
        current = self.state.value()
        value = record.value if current is None else self.reduce_function.reduce(current, record.value)
        self.state.update(value)
        self.output.collect(StreamRecord(value, record.timestamp))


class BatchGroupedReduceOperator(KeyedFunctionHost, OneInputStreamOperator):
    """``KeyedStream.reduce`` in BATCH execution (Flink's ``BatchGroupedReduceOperator``): the elements of a key
    are reduced in state and only the final value is emitted, with timestamp ``LONG_MAX``, when the key's input
    ends (an event-time timer at ``LONG_MAX``, registered by the key's first element)."""

    STATE = StreamGroupedReduceOperator.STATE

    def __init__(self, reduce_function: ReduceFunction[Any], key_selector: KeySelector) -> None:
        super().__init__(key_selector)
        self.function = reduce_function

    def open(self) -> None:
        self.state = self.backend.get_partitioned_state(VOID_NAMESPACE, self.STATE)
        owner = f"{type(self.function).__name__} of {self.task_name}"
        self.timer_service = self.get_internal_timer_service("end-key-timers", self, owner)
        self.function.open(self.runtime_context())

    def process_element(self, record: StreamRecord[Any]) -> None:
        current = self.state.value()
        if current is None:
            self.timer_service.register_event_time_timer(VOID_NAMESPACE, LONG_MAX)
            value = record.value
        else:
            value = self.function.reduce(current, record.value)
        self.state.update(value)

    def on_event_time(self, timer: InternalTimer) -> None:
        current = self.state.value()
        if current is not None:
            self.output.collect(StreamRecord(current, LONG_MAX))
            self.state.clear()

    def on_processing_time(self, timer: InternalTimer) -> None:
        return None
