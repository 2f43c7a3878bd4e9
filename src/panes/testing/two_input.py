"""``TwoInputOperatorHarness``: drive a two-input operator (connected streams, interval joins) in a test.

Like Flink's ``KeyedTwoInputStreamOperatorTestHarness``: each input gets its own elements and watermarks (the
operator combines the two watermarks, minimum of both), the output keeps records and watermarks in emission
order, side outputs per tag, processing time moves only when the test says so, and ``snapshot()`` /
``restore()`` carry all operator state to a fresh harness.
"""

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
        """Feed one element to the first input (``value`` may be a ``StreamRecord``)."""
        self.open()
        self.operator.process_record1(self._record(value, timestamp))

    def process_element2(self, value: Any, timestamp: int | None = None) -> None:
        """Feed one element to the second input (``value`` may be a ``StreamRecord``)."""
        self.open()
        self.operator.process_record2(self._record(value, timestamp))

    def process_watermark1(self, watermark: int | Watermark) -> None:
        self.open()
        self.operator.process_watermark1(watermark if isinstance(watermark, Watermark) else Watermark(watermark))

    def process_watermark2(self, watermark: int | Watermark) -> None:
        self.open()
        self.operator.process_watermark2(watermark if isinstance(watermark, Watermark) else Watermark(watermark))

    def set_processing_time(self, now: int) -> None:
        """Move processing time to ``now`` and fire every processing-time timer at or before it."""
        self.open()
        self.clock.set_current_time(now)
        self.operator.advance_processing_time(now)

    def get_output(self) -> list[StreamRecord[Any] | Watermark | WatermarkStatus]:
        """Records and watermarks in emission order (a copy)."""
        return list(self._output.elements)

    def extract_output_records(self) -> list[StreamRecord[Any]]:
        return [e for e in self._output.elements if isinstance(e, StreamRecord)]

    def extract_output_values(self) -> list[Any]:
        """The values of the output records, in order (watermarks left out)."""
        return [record.value for record in self.extract_output_records()]

    def get_side_output(self, tag: OutputTag[Any]) -> list[StreamRecord[Any]]:
        return list(self._output.side.get(tag, []))

    def clear_output(self) -> None:
        self._output.elements.clear()
        self._output.side.clear()

    def snapshot(self) -> bytes:
        """The operator's whole state as bytes."""
        self.open()
        return self.operator.snapshot_state()

    def restore(self, snapshot: bytes) -> None:
        """Restore a :meth:`snapshot` into this (not yet used) harness."""
        if self._opened:
            raise RuntimeError("restore() must come before the harness is used (it opens on first use)")
        self.operator.restore_state(snapshot)
        self.open()

    def close(self) -> None:
        if self._opened:
            self.operator.close()
