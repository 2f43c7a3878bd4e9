"""Two streams joined: orders with their payments, by order id.

- A window join pairs an order and a payment of the same order id that fall in the same one-minute tumbling
  window (event time): an inner join per key and window, one result per pair.
- An interval join pairs each order with the payments made from 0 to 5 minutes after it, whatever windows
  they fall in: ``payment.ts`` in ``[order.ts, order.ts + 5 min]``; a payment too late to find its order
  (the watermark has passed it) is dropped, as in Flink.

    panes run examples/joins.py
    panes run examples/joins.py --runner spark
"""

from __future__ import annotations

from typing import Any

from panes.datastream import StreamEnvironment
from panes.time import format_instant
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z
MINUTE = 60_000


def at(minute: float) -> int:
    return START + int(minute * MINUTE)


ORDERS = [
    [{"id": "o1", "ts": at(0.2)}, {"id": "o2", "ts": at(0.5)}],
    [{"id": "o3", "ts": at(1.5)}, {"id": "o4", "ts": at(3.0)}],
]
PAYMENTS = [
    [{"order": "o1", "amount": 30, "ts": at(0.7)}, {"order": "o2", "amount": 12, "ts": at(1.2)}],
    [{"order": "o3", "amount": 8, "ts": at(1.9)}, {"order": "o4", "amount": 50, "ts": at(9.0)}],
]


def build(env: StreamEnvironment) -> None:
    def timed(batches: list[list[dict[str, Any]]]) -> Any:
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
        return env.from_micro_batches(batches).assign_timestamps_and_watermarks(strategy)

    orders, payments = timed(ORDERS), timed(PAYMENTS)
    same_minute = (
        orders.join(payments)
        .where("id")
        .equal_to("order")
        .window(TumblingEventTimeWindows.of(MINUTE))
        .apply(lambda order, payment: (order["id"], payment["amount"], format_instant(order["ts"])))
    )
    same_minute.print("same minute")
    within_five = (
        orders.key_by("id")
        .interval_join(payments.key_by("order"))
        .between(0, 5 * MINUTE)
        .process(lambda order, payment, ctx: [(order["id"], payment["amount"], format_instant(ctx.get_timestamp()))])
    )
    within_five.print("within 5 min")
