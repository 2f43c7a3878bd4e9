"""Operator test harnesses: drive one operator with elements, watermarks and processing time.

Like Flink's ``OneInputStreamOperatorTestHarness``: the output queue keeps records *and* watermarks in
emission order (a watermark appears after the results of the timers it fired), side outputs are kept per
tag, processing time only moves when the test says so, and ``snapshot()``/``restore()`` carry all operator
state (keyed state, timers, the current watermark) to a fresh harness.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from panes.elements import StreamRecord, Watermark, WatermarkStatus
from panes.functions.base import AggregateFunction, ReduceFunction
from panes.operators.base import AbstractStreamOperator, CollectingOutput, OneInputStreamOperator
from panes.tags import OutputTag
from panes.time import DurationLike
from panes.timers.clock import ManualProcessingTimeService
from panes.watermarks.per_key import PerKeyWatermarks
from panes.windowing.assigners.base import WindowAssigner
from panes.windowing.evictors import Evictor
from panes.windowing.internal_functions import WindowFunctionSpec, aggregate_spec, process_spec, reduce_spec
from panes.windowing.operator import EvictingWindowOperator, WindowOperator
from panes.windowing.triggers.base import Trigger

OperatorT = TypeVar("OperatorT", bound=AbstractStreamOperator)


class OperatorHarness(Generic[OperatorT]):
    """What every harness shares: hosts ``operator`` in process with a manual processing-time clock starting at
    ``processing_time``, opens it on first use, collects its output, moves processing time, and snapshots and
    restores it. The subclasses feed its inputs."""

    def __init__(self, operator: OperatorT, processing_time: int = 0) -> None:
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
        """``value`` as a record: itself when it is a ``StreamRecord`` (``timestamp`` ignored)."""
        return value if isinstance(value, StreamRecord) else StreamRecord(value, timestamp)

    @staticmethod
    def _watermark(watermark: int | Watermark) -> Watermark:
        return watermark if isinstance(watermark, Watermark) else Watermark(watermark)

    def set_processing_time(self, now: int) -> None:
        """Move processing time to ``now`` and fire every processing-time timer at or before it."""
        self.open()
        self.clock.set_current_time(now)
        self.operator.advance_processing_time(now)

    def get_output(self) -> list[StreamRecord[Any] | Watermark | WatermarkStatus]:
        """Records and watermarks in emission order (a copy)."""
        return list(self._output.elements)

    def extract_output_values(self) -> list[Any]:
        """The values of the output records, in order (watermarks left out)."""
        return [record.value for record in self.extract_output_records()]

    def extract_output_records(self) -> list[StreamRecord[Any]]:
        return [e for e in self._output.elements if isinstance(e, StreamRecord)]

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


class OneInputOperatorHarness(OperatorHarness[OneInputStreamOperator]):
    """Feeds a one-input operator (see :class:`OperatorHarness`)."""

    def process_element(self, value: Any, timestamp: int | None = None) -> None:
        """Feed one element; ``value`` may be a ``StreamRecord`` (then ``timestamp`` is ignored)."""
        self.open()
        self.operator.process_record(self._record(value, timestamp))

    def process_watermark(self, watermark: int | Watermark) -> None:
        self.open()
        self.operator.process_watermark(self._watermark(watermark))


def window_function_spec(function: Any = None, *, reduce: Any = None, aggregate: Any = None) -> WindowFunctionSpec:
    """The window state and function for the ways Flink's ``WindowedStream`` can be evaluated.

    - ``aggregate=agg`` (or ``function`` an ``AggregateFunction``): incremental aggregate, then ``function``;
    - ``reduce=fn`` (or ``function`` a ``ReduceFunction``): incremental reduce, then ``function``;
    - otherwise ``function`` (a ``ProcessWindowFunction``, ``WindowFunction`` or callable
      ``(key, context, elements)``) sees every element.
    """
    if isinstance(function, WindowFunctionSpec):
        return function
    if isinstance(function, AggregateFunction):
        return aggregate_spec(function)
    if isinstance(function, ReduceFunction):
        return reduce_spec(function)
    if aggregate is not None and reduce is not None:
        raise ValueError("pass either reduce= or aggregate=, not both")
    if aggregate is not None:
        return aggregate_spec(aggregate, function)
    if reduce is not None:
        return reduce_spec(reduce, function)
    if function is None:
        raise ValueError("a window needs a function: function=, reduce= or aggregate=")
    return process_spec(function)


class WindowOperatorHarness(OneInputOperatorHarness):
    """A harness around a :class:`WindowOperator` (or, with ``evictor``, an ``EvictingWindowOperator``); with
    ``key_time``, each key has its own event time (``panes.watermarks.per_key``)."""

    def __init__(
        self,
        assigner: WindowAssigner[Any, Any],
        function: Any = None,
        *,
        key_selector: Callable[[Any], Any],
        reduce: ReduceFunction[Any] | Callable[[Any, Any], Any] | None = None,
        aggregate: AggregateFunction[Any, Any, Any] | None = None,
        trigger: Trigger[Any, Any] | None = None,
        evictor: Evictor[Any, Any] | None = None,
        allowed_lateness: DurationLike = 0,
        late_data_tag: OutputTag[Any] | None = None,
        processing_time: int = 0,
        accumulation: str = "accumulating",
        key_time: PerKeyWatermarks | None = None,
    ) -> None:
        spec = window_function_spec(function, reduce=reduce, aggregate=aggregate)
        operator: WindowOperator
        arguments = (trigger, allowed_lateness, late_data_tag, accumulation, key_time)
        if evictor is not None:
            operator = EvictingWindowOperator(assigner, spec, key_selector, evictor, *arguments)
        else:
            operator = WindowOperator(assigner, spec, key_selector, *arguments)
        super().__init__(operator, processing_time)

    @property
    def window_operator(self) -> WindowOperator:
        operator = self.operator
        assert isinstance(operator, WindowOperator)
        return operator

    @property
    def num_late_records_dropped(self) -> int:
        return self.window_operator.num_late_records_dropped
