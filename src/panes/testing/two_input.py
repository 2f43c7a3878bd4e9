"""``TwoInputOperatorHarness``: drive a two-input operator (connected streams, interval joins) in a test.

Like Flink's ``KeyedTwoInputStreamOperatorTestHarness``: each input gets its own elements and watermarks (the
operator combines the two watermarks, minimum of both), the output keeps records and watermarks in emission
order, side outputs per tag, processing time moves only when the test says so, and ``snapshot()`` /
``restore()`` carry all operator state to a fresh harness.
"""

from __future__ import annotations

from typing import Any

from panes.elements import Watermark
from panes.operators.two_input import TwoInputStreamOperator
from panes.testing.harness import OperatorHarness


class TwoInputOperatorHarness(OperatorHarness[TwoInputStreamOperator]):
    """Feeds a two-input operator (see :class:`~panes.testing.harness.OperatorHarness`)."""

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
        self.operator.process_watermark1(self._watermark(watermark))

    def process_watermark2(self, watermark: int | Watermark) -> None:
        self.open()
        self.operator.process_watermark2(self._watermark(watermark))
