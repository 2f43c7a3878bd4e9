"""``sum``, ``min``, ``max``, ``min_by`` and ``max_by`` on a field, for keyed streams and windows alike.

Each is a ``reduce`` with Flink's field aggregators (see ``panes.functions.aggregators``): a rolling result per
key on a ``KeyedStream``, one result per pane on a windowed stream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from panes.functions.aggregators import ComparableAggregator, SumAggregator

if TYPE_CHECKING:
    from panes.datastream.stream import DataStream


class FieldAggregations:
    """Mixin of the field aggregations; the class provides ``reduce(function)``."""

    reduce: Callable[[Any], DataStream]

    def sum(self, position_to_sum: int | str = 0) -> DataStream:
        return self.reduce(SumAggregator(position_to_sum))

    def min(self, position_to_min: int | str = 0) -> DataStream:
        return self.reduce(ComparableAggregator(position_to_min, "min", by=False))

    def max(self, position_to_max: int | str = 0) -> DataStream:
        return self.reduce(ComparableAggregator(position_to_max, "max", by=False))

    def min_by(self, position_to_min_by: int | str = 0, first: bool = True) -> DataStream:
        return self.reduce(ComparableAggregator(position_to_min_by, "min", by=True, first=first))

    def max_by(self, position_to_max_by: int | str = 0, first: bool = True) -> DataStream:
        return self.reduce(ComparableAggregator(position_to_max_by, "max", by=True, first=first))
