"""Fire on count or on time: each customer's one-minute window reports its total every 3 orders, and once more
when the minute ends.

``AnyOf(CountTrigger.of(3), EventTimeTrigger())`` composes two of Flink's triggers, where Flink asks for a
hand-written one: the window fires whenever either part fires (the count part after every third order, the
event-time part when the watermark passes the minute's end) and keeps its contents, so each result is the
total so far. Each result says which part fired it.

    panes run examples/count_or_time.py
    panes run examples/count_or_time.py --runner spark
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from panes.datastream import StreamEnvironment
from panes.functions import Sum
from panes.time import format_instant
from panes.watermarks import WatermarkStrategy
from panes.windowing import AnyOf, CountTrigger, EventTimeTrigger, TumblingEventTimeWindows
from panes.windowing.functions import ProcessWindowFunction, WindowContext

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z
MINUTE = 60_000


def order(customer: str, second: int, amount: int) -> dict[str, Any]:
    return {"customer": customer, "ts": START + second * 1000, "amount": amount}


ORDERS = [
    [order("ann", 5, 10), order("bob", 8, 7), order("ann", 12, 3), order("ann", 20, 5)],
    [order("ann", 31, 2), order("bob", 40, 4), order("ann", 55, 8), order("ann", 58, 1)],
    [order("ann", 65, 6), order("bob", 70, 9), order("bob", 80, 1), order("bob", 95, 2), order("ann", 130, 4)],
]
"""Orders of two customers over two minutes and more, in three micro-batches."""


class Label(ProcessWindowFunction[int, tuple[str, str, int, str], str, Any]):
    def process(
        self, key: str, context: WindowContext[Any], elements: Iterable[int]
    ) -> Iterable[tuple[str, str, int, str]]:
        window = context.window()
        fired_by = "minute end" if context.current_watermark() >= window.max_timestamp() else "3 orders"
        for total in elements:
            yield key, format_instant(window.start), total, fired_by


def build(env: StreamEnvironment) -> None:
    (
        env.from_micro_batches(ORDERS)
        .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts"))
        .key_by("customer")
        .window(TumblingEventTimeWindows.of(MINUTE))
        .trigger(AnyOf(CountTrigger.of(3), EventTimeTrigger()))
        .aggregate(Sum("amount"), Label())
        .print("totals")
    )
