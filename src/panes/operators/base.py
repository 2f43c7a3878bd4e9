"""The operator base classes (Flink's ``AbstractStreamOperator`` and ``OneInputStreamOperator``).

A runner (the harness, the local runner, the Spark runner) hosts an operator through this contract:
``setup(output, clock)``, optionally ``restore_state(bytes)``, ``open()``; then, for each input element,
``set_key_context_element(record)`` + ``process_element(record)``; ``process_watermark(watermark)``, which
fires event-time timers and then forwards the watermark; ``advance_processing_time(now)``; and
``snapshot_state() -> bytes`` between elements. Keyed operators keep state in a heap backend and timers
in named internal timer services, all of which snapshot together.
"""

from __future__ import annotations

import pickle
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Protocol

from panes.elements import StreamRecord, Watermark, WatermarkStatus
from panes.state.backend import HeapKeyedStateBackend
from panes.tags import OutputTag
from panes.time import LONG_MIN
from panes.timers.clock import ManualProcessingTimeService, ProcessingTimeService
from panes.timers.service import InternalTimerService, Triggerable

KeySelector = Callable[[Any], Any]


class Output(Protocol):
    """Where an operator writes: main records, side-output records, watermarks and watermark status."""

    def collect(self, record: StreamRecord[Any]) -> None: ...

    def collect_side(self, tag: OutputTag[Any], record: StreamRecord[Any]) -> None: ...

    def emit_watermark(self, watermark: Watermark) -> None: ...

    def emit_watermark_status(self, status: WatermarkStatus) -> None: ...


class CollectingOutput:
    """An output that keeps everything: ``elements`` (records and watermarks in order) and ``side``."""

    def __init__(self) -> None:
        self.elements: list[StreamRecord[Any] | Watermark | WatermarkStatus] = []
        self.side: dict[OutputTag[Any], list[StreamRecord[Any]]] = {}

    def collect(self, record: StreamRecord[Any]) -> None:
        self.elements.append(record)

    def collect_side(self, tag: OutputTag[Any], record: StreamRecord[Any]) -> None:
        self.side.setdefault(tag, []).append(record)

    def emit_watermark(self, watermark: Watermark) -> None:
        self.elements.append(watermark)

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        self.elements.append(status)


class TimestampedCollector:
    """Emits user results with a fixed timestamp (a window's max timestamp, a timer's time, ...)."""

    __slots__ = ("_output", "timestamp")

    def __init__(self, output: Output) -> None:
        self._output = output
        self.timestamp: int | None = None

    def collect(self, value: Any) -> None:
        self._output.collect(StreamRecord(value, self.timestamp))

    def collect_all(self, values: Any) -> None:
        """Emit each of ``values`` (an iterable, or ``None`` for nothing)."""
        if values is None:
            return
        output = self._output
        timestamp = self.timestamp
        for value in values:
            output.collect(StreamRecord(value, timestamp))


class AbstractStreamOperator(ABC):
    """Lifecycle, output, processing-time clock and, when keyed, state and timers of an operator."""

    def __init__(self, key_selector: KeySelector | None = None) -> None:
        self.key_selector = key_selector
        self.output: Output = CollectingOutput()
        self.processing_time_service: ProcessingTimeService = ManualProcessingTimeService()
        self.backend = HeapKeyedStateBackend()
        self._timer_services: dict[str, InternalTimerService] = {}
        self._restored: dict[str, Any] | None = None

    # -- lifecycle --------------------------------------------------------------------------------------

    def setup(self, output: Output, processing_time_service: ProcessingTimeService | None = None) -> None:
        self.output = output
        if processing_time_service is not None:
            self.processing_time_service = processing_time_service

    def open(self) -> None:
        """Called once before the first element, after ``setup`` and any ``restore_state``."""

    def finish(self) -> None:
        """Called at the end of a bounded input, after the final watermark."""

    def close(self) -> None:
        """Release resources."""

    # -- keys, timers ------------------------------------------------------------------------------------

    def set_key_context_element(self, record: StreamRecord[Any]) -> None:
        """Make the key of ``record`` current (keyed operators only)."""
        if self.key_selector is not None:
            self.backend.current_key = self.key_selector(record.value)

    def get_current_key(self) -> Any:
        return self.backend.current_key

    def set_current_key(self, key: Any) -> None:
        self.backend.current_key = key

    def get_internal_timer_service(self, name: str, triggerable: Triggerable) -> InternalTimerService:
        """The timer service ``name`` (created on first use, restored from a snapshot when there is one)."""
        service = self._timer_services.get(name)
        if service is None:
            service = InternalTimerService(
                self.get_current_key, self.set_current_key, triggerable, self.processing_time_service
            )
            restored = (self._restored or {}).get("timers", {}).get(name)
            if restored is not None:
                service.restore(restored)
            self._timer_services[name] = service
        return service

    # -- time ----------------------------------------------------------------------------------------------

    def process_watermark(self, watermark: Watermark) -> None:
        """Fire the event-time timers up to ``watermark``, then forward it."""
        for service in self._timer_services.values():
            service.advance_watermark(watermark.timestamp)
        self.output.emit_watermark(watermark)

    def process_watermark_status(self, status: WatermarkStatus) -> None:
        self.output.emit_watermark_status(status)

    def advance_processing_time(self, now: int) -> None:
        """Fire the processing-time timers at or before ``now`` (the runner has moved its clock to ``now``)."""
        for service in self._timer_services.values():
            service.advance_processing_time(now)

    def next_processing_time_timer(self) -> int | None:
        """The earliest pending processing-time timer, for runners that schedule wake-ups."""
        times = [t for s in self._timer_services.values() if (t := s.next_processing_time_timer()) is not None]
        return min(times) if times else None

    def current_watermark(self) -> int:
        services = list(self._timer_services.values())
        return services[0].current_watermark if services else LONG_MIN

    # -- snapshots -------------------------------------------------------------------------------------------

    def snapshot_extra(self) -> Any:
        """Operator-specific state to include in snapshots (override with :meth:`restore_extra`)."""
        return None

    def restore_extra(self, data: Any) -> None:
        """Restore what :meth:`snapshot_extra` returned."""

    def snapshot_state(self) -> bytes:
        """All keyed state, timers and operator extras as bytes (values and keys must be picklable)."""
        data = {
            "keyed_state": self.backend.snapshot(),
            "timers": {name: service.snapshot() for name, service in self._timer_services.items()},
            "extra": self.snapshot_extra(),
        }
        return pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)

    def restore_state(self, snapshot: bytes) -> None:
        """Restore a :meth:`snapshot_state` before ``open()``."""
        data = pickle.loads(snapshot)
        self._restored = data
        self.backend.restore(data["keyed_state"])
        for name, service in self._timer_services.items():
            if name in data["timers"]:
                service.restore(data["timers"][name])
        self.restore_extra(data["extra"])



class OneInputStreamOperator(AbstractStreamOperator):
    @abstractmethod
    def process_element(self, record: StreamRecord[Any]) -> None: ...
