"""Interval joins: ``left.key_by(k).interval_join(right.key_by(k)).between(lower, upper)
[.lower_bound_exclusive()] [.upper_bound_exclusive()] [.side_output_left_late_data(tag)]
[.side_output_right_late_data(tag)] .process(ProcessJoinFunction)``.

A left element ``l`` and a right element ``r`` of the same key are joined when
``l.ts + lower <= r.ts <= l.ts + upper`` (bounds inclusive unless made exclusive); the results carry
``max(l.ts, r.ts)``. Event time only. Elements below the watermark are late: dropped, or sent to their side's
late-data output. It runs as one keyed two-input step (``panes.operators.interval_join``), which every runner
hosts. ``between`` raises ``ValueError`` when ``lower > upper`` (Flink's condition) and
``UnsupportedOperationError`` after ``in_processing_time()`` (as Flink refuses it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from panes.datastream.key_types import check_same_key_types
from panes.datastream.plan import TwoInputTransformation
from panes.errors import UnsupportedOperationError
from panes.functions.join import ProcessJoinFunction, as_process_join_function
from panes.operators.interval_join import IntervalJoinOperator, check_bounds
from panes.tags import OutputTag
from panes.time import DurationLike, duration_ms

if TYPE_CHECKING:
    from panes.datastream.stream import DataStream, KeyedStream


@dataclass(frozen=True)
class IntervalJoinSpec:
    """What an interval join computes (``TwoInputTransformation.spec``); bounds in ms, before exclusivity."""

    lower_bound: int
    upper_bound: int
    lower_inclusive: bool
    upper_inclusive: bool
    left_late_tag: OutputTag[Any] | None
    right_late_tag: OutputTag[Any] | None
    function: ProcessJoinFunction[Any, Any, Any]

    def create_operator(self, key_selector1: Any, key_selector2: Any) -> IntervalJoinOperator:
        from panes.datastream.stream import instance_copy

        return IntervalJoinOperator(
            self.lower_bound,
            self.upper_bound,
            instance_copy(self.function),
            key_selector1,
            key_selector2,
            lower_inclusive=self.lower_inclusive,
            upper_inclusive=self.upper_inclusive,
            left_late_tag=self.left_late_tag,
            right_late_tag=self.right_late_tag,
        )


def _keyed(stream: Any, which: str) -> KeyedStream:
    from panes.datastream.stream import KeyedStream

    if not isinstance(stream, KeyedStream):
        raise TypeError(
            f"an interval join needs two keyed streams: the {which} input is a {type(stream).__name__}; "
            "call key_by(...) on it first"
        )
    return stream


class IntervalJoin:
    """Two keyed streams to join over a time interval; ``between`` sets it."""

    def __init__(self, left: KeyedStream, right: KeyedStream, event_time: bool = True) -> None:
        self.left = _keyed(left, "first")
        self.right = _keyed(right, "second")
        check_same_key_types(self.left.key_type, self.right.key_type, "interval join", UnsupportedOperationError)
        self._event_time = event_time

    def in_event_time(self) -> IntervalJoin:
        """Join in event time (the default and the only time interval joins support)."""
        return IntervalJoin(self.left, self.right, True)

    def in_processing_time(self) -> IntervalJoin:
        """Flink's switch to processing time: ``between`` then refuses it (interval joins need event time)."""
        return IntervalJoin(self.left, self.right, False)

    def between(self, lower_bound: DurationLike, upper_bound: DurationLike) -> IntervalJoined:
        """Join ``r`` with ``l`` when ``l.ts + lower_bound <= r.ts <= l.ts + upper_bound`` (``timedelta`` or int
        ms, either may be negative); ``lower_bound <= upper_bound`` is required."""
        if not self._event_time:
            raise UnsupportedOperationError(
                "Time-bounded stream joins are only supported in event time: remove in_processing_time()"
            )
        lower = duration_ms(lower_bound, name="lower_bound")
        upper = duration_ms(upper_bound, name="upper_bound")
        check_bounds(lower, upper)
        return IntervalJoined(self.left, self.right, lower, upper)


@dataclass(frozen=True)
class _Settings:
    lower_inclusive: bool = True
    upper_inclusive: bool = True
    left_late_tag: OutputTag[Any] | None = None
    right_late_tag: OutputTag[Any] | None = None


class IntervalJoined:
    """An interval join with its bounds; optionally exclusive bounds and late-data outputs; ``process`` ends it."""

    def __init__(
        self, left: KeyedStream, right: KeyedStream, lower_bound: int, upper_bound: int, settings: Any = None
    ) -> None:
        self.left = left
        self.right = right
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self._settings: _Settings = settings if settings is not None else _Settings()

    def _with(self, **changes: Any) -> IntervalJoined:
        return IntervalJoined(
            self.left, self.right, self.lower_bound, self.upper_bound, replace(self._settings, **changes)
        )

    def lower_bound_exclusive(self) -> IntervalJoined:
        """Leave out pairs with ``r.ts == l.ts + lower_bound``."""
        return self._with(lower_inclusive=False)

    def upper_bound_exclusive(self) -> IntervalJoined:
        """Leave out pairs with ``r.ts == l.ts + upper_bound``."""
        return self._with(upper_inclusive=False)

    def side_output_left_late_data(self, output_tag: OutputTag[Any]) -> IntervalJoined:
        """Send late left elements (timestamp below the watermark) to ``output_tag`` instead of dropping them."""
        return self._with(left_late_tag=_tag(output_tag))

    def side_output_right_late_data(self, output_tag: OutputTag[Any]) -> IntervalJoined:
        """Send late right elements (timestamp below the watermark) to ``output_tag`` instead of dropping them."""
        return self._with(right_late_tag=_tag(output_tag))

    def process(self, process_join_function: Any, output_type: Any = None) -> DataStream:
        """Join with a ``ProcessJoinFunction`` (or a callable ``(left, right, ctx) -> iterable``);
        ``output_type`` declares the results' type (as for ``map``)."""
        from panes.datastream.stream import DataStream, declared_type

        settings = self._settings
        spec = IntervalJoinSpec(
            self.lower_bound,
            self.upper_bound,
            settings.lower_inclusive,
            settings.upper_inclusive,
            settings.left_late_tag,
            settings.right_late_tag,
            as_process_join_function(process_join_function),
        )
        key1 = self.left.key_selector
        key2 = self.right.key_selector
        transformation = TwoInputTransformation(
            name="Interval Join",
            inputs=(self.left.transformation, self.right.transformation),
            op_kind="interval_join",
            spec=spec,
            operator_factory=lambda: spec.create_operator(key1, key2),
            key_selector1=key1,
            key_selector2=key2,
            output_type=declared_type(output_type),
        )
        return DataStream(self.left.env, transformation)


def _tag(output_tag: Any) -> OutputTag[Any]:
    if not isinstance(output_tag, OutputTag):
        raise TypeError(f"expected an OutputTag, got {type(output_tag).__name__}")
    return output_tag
