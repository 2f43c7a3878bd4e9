"""A harness for two-input operators (Flink's ``TwoInputStreamOperatorTestHarness``): feed elements and
watermarks to either input, move processing time, read the output queue and side outputs, snapshot and
restore into a fresh harness."""

from __future__ import annotations

from typing import Any

from panes.elements import StreamRecord, Watermark, WatermarkStatus
from panes.operators.base import CollectingOutput
from panes.operators.two_input import TwoInputStreamOperator
from panes.tags import OutputTag
from panes.timers.clock import ManualProcessingTimeService


class TwoInputOperatorHarness:
    """Hosts ``operator`` in process with a manual processing-time clock starting at ``processing_time``."""

    def __init__(self, operator: TwoInputStreamOperator, processing_time: int = 0) -> None:
        self.operator = operator
        self.clock = ManualProcessingTimeService(processing_time)
        self._output = CollectingOutput()
        operator.setup(self._output, self.clock)
        self._opened = False

    def open(self) -> None:
        """Open the operator (done automatically by the first element, watermark or time change)."""
        if not self._opened:
            self.operator.open()
            self._opened = True

    @staticmethod
    def _record(value: Any, timestamp: int | None) -> StreamRecord[Any]:
        return value if isinstance(value, StreamRecord) else StreamRecord(value, timestamp)

    def process_element1(self, value: Any, timestamp: int | None = None) -> None:
        self.open()
        self.operator.process_record1(self._record(value, timestamp))

    def process_element2(self, value: Any, timestamp: int | None = None) -> None:
        self.open()
        self.operator.process_record2(self._record(value, timestamp))

    def process_watermark1(self, watermark: int) -> None:
        self.open()
        self.operator.process_watermark1(Watermark(watermark))

    def process_watermark2(self, watermark: int) -> None:
        self.open()
        self.operator.process_watermark2(Watermark(watermark))

    def set_processing_time(self, now: int) -> None:
        """Move processing time to ``now`` and fire every processing-time timer at or before it."""
        self.open()
        self.clock.set_current_time(now)
        self.operator.advance_processing_time(now)

    def get_output(self) -> list[StreamRecord[Any] | Watermark | WatermarkStatus]:
        """Records and watermarks in emission order (a copy)."""
        return list(self._output.elements)

    def extract_output_values(self) -> list[Any]:
        return [e.value for e in self._output.elements if isinstance(e, StreamRecord)]

    def get_side_output(self, tag: OutputTag[Any]) -> list[StreamRecord[Any]]:
        return list(self._output.side.get(tag, []))

    def snapshot(self) -> bytes:
        self.open()
        return self.operator.snapshot_state()

    def restore(self, snapshot: bytes) -> None:
        """Restore ``snapshot`` into this (not yet opened) harness's operator."""
        if self._opened:
            raise RuntimeError("restore() must be called before the harness is opened")
        self.operator.restore_state(snapshot)

    def close(self) -> None:
        if self._opened:
            self.operator.close()
