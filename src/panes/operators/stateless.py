"""Operators of the stateless transformations: map, flat_map, filter and (non-keyed) process.

Results keep the input element's timestamp, as in Flink (``StreamMap``, ``StreamFlatMap``,
``StreamFilter``, ``ProcessOperator``).
"""

from __future__ import annotations

from typing import Any

from panes.elements import StreamRecord
from panes.errors import UnsupportedOperationError
from panes.functions.stream import (
    FilterFunction,
    FlatMapFunction,
    MapFunction,
    ProcessContext,
    ProcessFunction,
    TimerService,
)
from panes.operators.base import OneInputStreamOperator, TimestampedCollector
from panes.tags import OutputTag


class _UdfOperator(OneInputStreamOperator):
    """An operator around one user function, opened and closed with the operator."""

    def __init__(self, function: Any, key_selector: Any = None) -> None:
        super().__init__(key_selector)
        self.function = function

    def open(self) -> None:
        self.collector = TimestampedCollector(self.output)
        self.function.open(self.runtime_context())

    def close(self) -> None:
        self.function.close()


class StreamMap(_UdfOperator):
    function: MapFunction[Any, Any]

    def process_element(self, record: StreamRecord[Any]) -> None:
        self.output.collect(StreamRecord(self.function.map(record.value), record.timestamp))


class StreamFlatMap(_UdfOperator):
    function: FlatMapFunction[Any, Any]

    def process_element(self, record: StreamRecord[Any]) -> None:
        self.collector.timestamp = record.timestamp
        self.collector.collect_all(self.function.flat_map(record.value))


class StreamFilter(_UdfOperator):
    function: FilterFunction[Any]

    def process_element(self, record: StreamRecord[Any]) -> None:
        if self.function.filter(record.value):
            self.output.collect(record)


class _NoTimersService(TimerService):
    """Time of a non-keyed operator: readable, but timers need a keyed stream (as in Flink)."""

    def __init__(self, operator: OneInputStreamOperator) -> None:
        self._operator = operator

    def current_processing_time(self) -> int:
        return self._operator.processing_time_service.get_current_processing_time()

    def current_watermark(self) -> int:
        return self._operator.current_watermark()

    def _refuse(self) -> None:
        raise UnsupportedOperationError("Setting timers is only supported on a keyed streams.")

    def register_processing_time_timer(self, timestamp: int) -> None:
        self._refuse()

    def register_event_time_timer(self, timestamp: int) -> None:
        self._refuse()

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self._refuse()

    def delete_event_time_timer(self, timestamp: int) -> None:
        self._refuse()


class _ProcessContext(ProcessContext):
    def __init__(self, operator: ProcessOperator) -> None:
        self._operator = operator
        self._timers = _NoTimersService(operator)
        self.record: StreamRecord[Any] | None = None

    def timestamp(self) -> int | None:
        return None if self.record is None else self.record.timestamp

    def timer_service(self) -> TimerService:
        return self._timers

    def output(self, output_tag: OutputTag[Any], value: Any) -> None:
        if output_tag is None:
            raise ValueError("OutputTag must not be None.")
        self._operator.output.collect_side(output_tag, StreamRecord(value, self.timestamp()))


class ProcessOperator(_UdfOperator):
    """Hosts a ``ProcessFunction`` on a non-keyed stream."""

    function: ProcessFunction[Any, Any]

    def open(self) -> None:
        super().open()
        self.context = _ProcessContext(self)

    def process_element(self, record: StreamRecord[Any]) -> None:
        self.collector.timestamp = record.timestamp
        self.context.record = record
        self.collector.collect_all(self.function.process_element(record.value, self.context))
        self.context.record = None
