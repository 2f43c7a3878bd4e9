"""Results that correct themselves: each customer's total per minute, reported early (every 2 orders), on time
and again for late orders, each later report retracting the one before it.

``retracting_fired_panes()`` turns a window's results into rows with a ``retract`` flag: when a window fires
again, it first emits its previous row with ``retract=True``, then the new one. A table that adds rows and
subtracts retracted ones (a sum, a ``MERGE``, a Spark aggregation) always holds each window's latest total.
``WindowRow(pane="pane")`` adds which firing each row is (``pane_index``, ``pane_timing``: early, on time or
late, ``pane_last``).

    panes run examples/corrections.py
    panes run examples/corrections.py --runner spark
"""

from __future__ import annotations

from typing import Any

from panes.datastream import StreamEnvironment
from panes.functions import Sum
from panes.watermarks import WatermarkStrategy
from panes.windowing import AnyOf, CountTrigger, EventTimeTrigger, TumblingEventTimeWindows, WindowRow

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z
MINUTE = 60_000
LATENESS = MINUTE


def order(customer: str, second: int, amount: int) -> dict[str, Any]:
    return {"customer": customer, "ts": START + second * 1000, "amount": amount}


ORDERS = [
    [order("ann", 5, 10), order("ann", 20, 4), order("bob", 30, 7)],
    [order("ann", 61, 2), order("bob", 65, 3), order("ann", 40, 5)],
    [order("bob", 125, 1), order("ann", 50, 8), order("bob", 58, 6)],  # 0:50 and 0:58 arrive after 1:05
]
"""Orders of two customers, in three micro-batches; the watermark moves at the end of each, so the last batch's
orders of the first minute are late (within the allowed minute: they correct its totals)."""


def build(env: StreamEnvironment) -> None:
    (
        env.from_micro_batches(ORDERS, type_info="customer STRING, ts BIGINT, amount BIGINT")
        .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts"))
        .key_by("customer")
        .window(TumblingEventTimeWindows.of(MINUTE))
        .trigger(AnyOf(CountTrigger.of(2), EventTimeTrigger()))
        .allowed_lateness(LATENESS)
        .retracting_fired_panes()
        .aggregate(Sum("amount"), WindowRow(key="customer", value="total", pane="pane"))
        .print("totals")
    )
