"""``IntervalJoinOperator``: the keyed two-input operator of ``KeyedStream.interval_join`` (Flink's operator
of the same name).

It joins a left element ``l`` and a right element ``r`` of the same key when
``l.ts + lower <= r.ts <= l.ts + upper`` (either bound exclusive on request; an exclusive bound is moved one
millisecond inwards once, at construction, as Flink does). Each side's elements wait in keyed map state by
timestamp (``LEFT_BUFFER`` and ``RIGHT_BUFFER``: timestamp -> elements in arrival order). An arriving element
is dropped (or sent to its side's late-data output) when its timestamp is below the current watermark;
otherwise it is buffered, joined with every buffered element of the other side in its interval (in the
other buffer's timestamp order of arrival), and an event-time cleanup timer is registered for it:

- a left element at ``t`` can be joined until the watermark reaches ``t + upper`` (``t`` when ``upper <= 0``);
- a right element at ``t`` until ``t - lower`` (``t`` when ``lower >= 0``).

When the timer fires, the elements of that timestamp leave their buffer. Each pair goes to
``ProcessJoinFunction.process_element(left, right, ctx)``; its results carry the larger of the two
timestamps. Bounds, cleanup times and comparisons use Java's ``long`` arithmetic. Elements need timestamps
(event time only); one without (or at ``LONG_MIN``) is a bad record.
"""

from __future__ import annotations

from typing import Any

from panes.elements import StreamRecord
from panes.errors import BadRecordError
from panes.functions.join import ProcessJoinContext, ProcessJoinFunction
from panes.operators.base import TimestampedCollector
from panes.operators.keys import KeySelector
from panes.operators.two_input import TwoInputStreamOperator
from panes.state.backend import VOID_NAMESPACE
from panes.state.descriptors import MapStateDescriptor
from panes.tags import OutputTag
from panes.time import LONG_MIN, java_add, java_sub
from panes.timers.heap import InternalTimer

LEFT_BUFFER = MapStateDescriptor("LEFT_BUFFER")
RIGHT_BUFFER = MapStateDescriptor("RIGHT_BUFFER")
CLEANUP_TIMER_NAME = "CLEANUP_TIMER"
CLEANUP_LEFT = "CLEANUP_LEFT"
CLEANUP_RIGHT = "CLEANUP_RIGHT"


def check_bounds(lower_bound: int, upper_bound: int) -> None:
    """Flink's condition on the bounds (before exclusivity moves them): ``lower_bound <= upper_bound``."""
    if lower_bound > upper_bound:
        raise ValueError(
            f"lowerBound <= upperBound must be fulfilled: the interval join's lower bound ({lower_bound} ms) is "
            f"above its upper bound ({upper_bound} ms); pass between(lower, upper) with lower <= upper"
        )


class _Context(ProcessJoinContext):
    """The pair being joined: both timestamps, the result timestamp, side outputs."""

    __slots__ = ("_operator", "left_timestamp", "result_timestamp", "right_timestamp")

    def __init__(self, operator: IntervalJoinOperator) -> None:
        self._operator = operator
        self.left_timestamp = LONG_MIN
        self.right_timestamp = LONG_MIN
        self.result_timestamp = LONG_MIN

    def get_left_timestamp(self) -> int:
        return self.left_timestamp

    def get_right_timestamp(self) -> int:
        return self.right_timestamp

    def get_timestamp(self) -> int:
        return self.result_timestamp

    def output(self, output_tag: OutputTag[Any], value: Any) -> None:
        if output_tag is None:
            raise ValueError("OutputTag must not be None.")
        self._operator.output.collect_side(output_tag, StreamRecord(value, self.result_timestamp))


class IntervalJoinOperator(TwoInputStreamOperator):
    """Joins the two keyed inputs over ``[lower_bound, upper_bound]`` relative to the left element's timestamp.

    ``lower_bound <= upper_bound`` is required (``ValueError`` otherwise); ``lower_inclusive`` and
    ``upper_inclusive`` default to True. Late elements (timestamp below the watermark) go to
    ``left_late_tag`` / ``right_late_tag`` when given, else are dropped.
    """

    def __init__(
        self,
        lower_bound: int,
        upper_bound: int,
        function: ProcessJoinFunction[Any, Any, Any],
        key_selector1: KeySelector,
        key_selector2: KeySelector,
        lower_inclusive: bool = True,
        upper_inclusive: bool = True,
        left_late_tag: OutputTag[Any] | None = None,
        right_late_tag: OutputTag[Any] | None = None,
    ) -> None:
        super().__init__(key_selector1, key_selector2)
        check_bounds(lower_bound, upper_bound)
        self.lower_bound = lower_bound if lower_inclusive else java_add(lower_bound, 1)
        self.upper_bound = upper_bound if upper_inclusive else java_sub(upper_bound, 1)
        self.function = function
        self.left_late_tag = left_late_tag
        self.right_late_tag = right_late_tag

    def open(self) -> None:
        self.collector = TimestampedCollector(self.output)
        self.context = _Context(self)
        owner = f"the cleanup timers of {self.task_name}"
        self.timer_service = self.get_internal_timer_service(CLEANUP_TIMER_NAME, self, owner)
        self.left_buffer = self.backend.get_partitioned_state(VOID_NAMESPACE, LEFT_BUFFER)
        self.right_buffer = self.backend.get_partitioned_state(VOID_NAMESPACE, RIGHT_BUFFER)
        self.function.open(self.runtime_context())

    def close(self) -> None:
        self.function.close()

    # -- elements ------------------------------------------------------------------------------------------

    def process_element1(self, record: StreamRecord[Any]) -> None:
        self._process(record, True, self.lower_bound, self.upper_bound)

    def process_element2(self, record: StreamRecord[Any]) -> None:
        self._process(record, False, java_sub(0, self.upper_bound), java_sub(0, self.lower_bound))

    def late_output_tags(self) -> tuple[OutputTag[Any], ...]:
        return tuple(tag for tag in (self.left_late_tag, self.right_late_tag) if tag is not None)

    def _process(self, record: StreamRecord[Any], is_left: bool, relative_lower: int, relative_upper: int) -> None:
        value = record.value
        timestamp = record.timestamp
        if timestamp is None or timestamp == LONG_MIN:
            raise BadRecordError(
                "an element of an interval join has no timestamp: interval joins work in event time; assign "
                "timestamps (assign_timestamps_and_watermarks) to both inputs"
            )
        if timestamp < self.timer_service.current_watermark:
            tag = self.left_late_tag if is_left else self.right_late_tag
            if tag is not None:
                self.output.collect_side(tag, StreamRecord(value, timestamp))
            else:
                self.counters.late_dropped += 1
            return
        ours, other = (self.left_buffer, self.right_buffer) if is_left else (self.right_buffer, self.left_buffer)
        bucket = ours.get(timestamp)
        ours.put(timestamp, [value] if bucket is None else [*bucket, value])
        low = java_add(timestamp, relative_lower)
        high = java_add(timestamp, relative_upper)
        # the other side's buffer in ascending timestamp order, as Flink's RocksDB state backend iterates it
        for other_timestamp, elements in sorted(other.items(), key=lambda item: item[0]):
            if other_timestamp < low or other_timestamp > high:
                continue
            for element in elements:
                if is_left:
                    self._collect(value, element, timestamp, other_timestamp)
                else:
                    self._collect(element, value, other_timestamp, timestamp)
        cleanup_time = java_add(timestamp, relative_upper) if relative_upper > 0 else timestamp
        self.timer_service.register_event_time_timer(CLEANUP_LEFT if is_left else CLEANUP_RIGHT, cleanup_time)

    def _collect(self, left: Any, right: Any, left_timestamp: int, right_timestamp: int) -> None:
        result_timestamp = max(left_timestamp, right_timestamp)
        context = self.context
        context.left_timestamp = left_timestamp
        context.right_timestamp = right_timestamp
        context.result_timestamp = result_timestamp
        self.collector.timestamp = result_timestamp
        self.collector.collect_all(self.function.process_element(left, right, context))

    # -- timers ---------------------------------------------------------------------------------------------

    def on_event_time(self, timer: InternalTimer) -> None:
        if timer.namespace == CLEANUP_LEFT:
            upper = self.upper_bound
            self.left_buffer.remove(timer.timestamp if upper <= 0 else java_sub(timer.timestamp, upper))
        else:
            lower = self.lower_bound
            self.right_buffer.remove(java_add(timer.timestamp, lower) if lower <= 0 else timer.timestamp)

    def on_processing_time(self, timer: InternalTimer) -> None:
        """Interval joins register no processing-time timers."""

    # -- inspection (tests) --------------------------------------------------------------------------------

    def buffered_timestamps(self, key: Any, left: bool) -> list[int]:
        """The timestamps ``key`` holds in the left (or right) buffer, ascending (for tests and inspection)."""
        previous = self.backend.current_key
        self.backend.current_key = key
        try:
            return sorted((self.left_buffer if left else self.right_buffer).keys())
        finally:
            self.backend.current_key = previous
