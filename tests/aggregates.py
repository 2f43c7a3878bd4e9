"""Aggregate functions the tests share."""

from __future__ import annotations

from typing import Any

from panes.functions import AggregateFunction


class Count(AggregateFunction[Any, int, int]):
    """The number of elements."""

    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + 1

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, acc_a: int, acc_b: int) -> int:
        return acc_a + acc_b
