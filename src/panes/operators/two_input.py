"""Two-input operators (``connect``): the watermark of the pair is the minimum of the two inputs.

As Flink's ``CombinedWatermarkStatus``: an idle input does not hold the combined watermark back; when both
are idle the operator is idle; the combined watermark only moves forward.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from panes.elements import StreamRecord, Watermark, WatermarkStatus
from panes.functions.stream import (
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedCoProcessFunction,
)
from panes.operators.base import AbstractStreamOperator, TimestampedCollector
from panes.operators.keyed import KeyedFunctionHost
from panes.operators.keys import KeySelector, extract_key
from panes.operators.stateless import _NoTimersService, _ProcessContext
from panes.time import LONG_MIN


class CombinedWatermarkStatus:
    """The watermark and idleness of several inputs combined: min over the non-idle inputs."""

    def __init__(self, inputs: int) -> None:
        self.watermarks = [LONG_MIN] * inputs
        self.idle = [False] * inputs
        self.combined = LONG_MIN

    def is_idle(self) -> bool:
        return all(self.idle)

    def _update(self) -> bool:
        active = [w for w, idle in zip(self.watermarks, self.idle, strict=True) if not idle]
        if not active:
            return False
        minimum = min(active)
        if minimum > self.combined:
            self.combined = minimum
            return True
        return False

    def update_watermark(self, index: int, timestamp: int) -> bool:
        """Record input ``index``'s watermark; True when the combined watermark advanced."""
        self.watermarks[index] = max(self.watermarks[index], timestamp)
        return self._update()

    def update_status(self, index: int, idle: bool) -> bool:
        """Record input ``index``'s idleness; True when the combined watermark advanced."""
        self.idle[index] = idle
        return self._update()


class TwoInputStreamOperator(AbstractStreamOperator):
    """Base of operators with two inputs; keyed when both key selectors are given."""

    def __init__(self, key_selector1: KeySelector | None = None, key_selector2: KeySelector | None = None) -> None:
        super().__init__(key_selector1)
        self.key_selector2 = key_selector2
        self._combined = CombinedWatermarkStatus(2)

    def set_key_context_element1(self, record: StreamRecord[Any]) -> None:
        if self.key_selector is not None:
            self.backend.current_key = extract_key(self.key_selector, record.value)

    def set_key_context_element2(self, record: StreamRecord[Any]) -> None:
        if self.key_selector2 is not None:
            self.backend.current_key = extract_key(self.key_selector2, record.value)

    def process_record1(self, record: StreamRecord[Any]) -> None:
        """Key and process a record of the first input (failures as in ``process_record``)."""
        self.counters.records_in += 1
        try:
            self.set_key_context_element1(record)
            if self.backend.record_cleanups:
                self.backend.run_record_cleanups()
            self.process_element1(record)
        except Exception as error:
            self.report_failure(record, error)

    def process_record2(self, record: StreamRecord[Any]) -> None:
        """Key and process a record of the second input (failures as in ``process_record``)."""
        self.counters.records_in += 1
        try:
            self.set_key_context_element2(record)
            if self.backend.record_cleanups:
                self.backend.run_record_cleanups()
            self.process_element2(record)
        except Exception as error:
            self.report_failure(record, error)

    @abstractmethod
    def process_element1(self, record: StreamRecord[Any]) -> None: ...

    @abstractmethod
    def process_element2(self, record: StreamRecord[Any]) -> None: ...

    def _watermark_of_input(self, index: int, watermark: Watermark) -> None:
        if self._combined.update_watermark(index, watermark.timestamp):
            self.process_watermark(Watermark(self._combined.combined))

    def process_watermark1(self, watermark: Watermark) -> None:
        self._watermark_of_input(0, watermark)

    def process_watermark2(self, watermark: Watermark) -> None:
        self._watermark_of_input(1, watermark)

    def _status_of_input(self, index: int, status: WatermarkStatus) -> None:
        was_idle = self._combined.is_idle()
        if self._combined.update_status(index, status.is_idle()):
            self.process_watermark(Watermark(self._combined.combined))
        if was_idle != self._combined.is_idle():
            self.output.emit_watermark_status(status)

    def process_watermark_status1(self, status: WatermarkStatus) -> None:
        self._status_of_input(0, status)

    def process_watermark_status2(self, status: WatermarkStatus) -> None:
        self._status_of_input(1, status)

    def snapshot_extra(self) -> Any:
        return {"watermarks": list(self._combined.watermarks), "combined": self._combined.combined}

    def restore_extra(self, data: Any) -> None:
        if data:
            self._combined.watermarks = list(data["watermarks"])
            self._combined.combined = data["combined"]


class CoStreamMap(TwoInputStreamOperator):
    """Hosts a ``CoMapFunction``: one result per element of either input; keyed state when keyed."""

    def __init__(
        self, function: CoMapFunction[Any, Any, Any], key_selector1: Any = None, key_selector2: Any = None
    ) -> None:
        super().__init__(key_selector1, key_selector2)
        self.function = function

    def open(self) -> None:
        self.function.open(self.runtime_context())

    def close(self) -> None:
        self.function.close()

    def process_element1(self, record: StreamRecord[Any]) -> None:
        self.output.collect(StreamRecord(self.function.map1(record.value), record.timestamp))

    def process_element2(self, record: StreamRecord[Any]) -> None:
        self.output.collect(StreamRecord(self.function.map2(record.value), record.timestamp))


class CoStreamFlatMap(TwoInputStreamOperator):
    """Hosts a ``CoFlatMapFunction``: any number of results per element; keyed state when keyed."""

    def __init__(
        self, function: CoFlatMapFunction[Any, Any, Any], key_selector1: Any = None, key_selector2: Any = None
    ) -> None:
        super().__init__(key_selector1, key_selector2)
        self.function = function

    def open(self) -> None:
        self.collector = TimestampedCollector(self.output)
        self.function.open(self.runtime_context())

    def close(self) -> None:
        self.function.close()

    def process_element1(self, record: StreamRecord[Any]) -> None:
        self.collector.timestamp = record.timestamp
        self.collector.collect_all(self.function.flat_map1(record.value))

    def process_element2(self, record: StreamRecord[Any]) -> None:
        self.collector.timestamp = record.timestamp
        self.collector.collect_all(self.function.flat_map2(record.value))


class CoProcessOperator(TwoInputStreamOperator):
    """Hosts a ``CoProcessFunction`` on two non-keyed inputs (no timers)."""

    def __init__(
        self, function: CoProcessFunction[Any, Any, Any], key_selector1: Any = None, key_selector2: Any = None
    ) -> None:
        if key_selector1 is not None or key_selector2 is not None:
            raise ValueError("CoProcessOperator hosts non-keyed inputs; keyed inputs use KeyedCoProcessOperator")
        super().__init__()
        self.function = function

    def open(self) -> None:
        self.collector = TimestampedCollector(self.output)
        self.context = _ProcessContext(self)  # type: ignore[arg-type]
        self.context._timers = _NoTimersService(self)  # type: ignore[arg-type]
        self.function.open(self.runtime_context())

    def close(self) -> None:
        self.function.close()

    def process_element1(self, record: StreamRecord[Any]) -> None:
        self.collector.timestamp = record.timestamp
        self.context.record = record
        self.collector.collect_all(self.function.process_element1(record.value, self.context))

    def process_element2(self, record: StreamRecord[Any]) -> None:
        self.collector.timestamp = record.timestamp
        self.context.record = record
        self.collector.collect_all(self.function.process_element2(record.value, self.context))


class KeyedCoProcessOperator(KeyedFunctionHost, TwoInputStreamOperator):
    """Hosts a ``KeyedCoProcessFunction`` (or a ``CoProcessFunction``, as Java's legacy keyed co-process operator
    does): both inputs keyed alike, shared keyed state and timers."""

    def __init__(
        self,
        function: KeyedCoProcessFunction[Any, Any, Any, Any] | CoProcessFunction[Any, Any, Any],
        key_selector1: KeySelector,
        key_selector2: KeySelector,
    ) -> None:
        super().__init__(key_selector1, key_selector2)
        self.function = function

    def process_element1(self, record: StreamRecord[Any]) -> None:
        self._call(self.function.process_element1, record)

    def process_element2(self, record: StreamRecord[Any]) -> None:
        self._call(self.function.process_element2, record)
