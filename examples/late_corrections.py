"""Data too late even for the allowed lateness, kept in a table and reconciled afterwards.

One-minute totals of orders per shop, with 10 s of allowed lateness. Two orders arrive after that: Flink would
drop them (or hand them to a side output the job must store itself). ``late_data_table`` keeps them in a Parquet
table, with the window step's uid, their timestamps and their windows. ``panes reconcile`` then reruns the job
up to the window as it streamed (finding those orders too late again) and in BATCH mode over every order, and
writes the difference: the totals the stream emitted to retract and the complete ones to put in their place.

    panes run examples/late_corrections.py
    panes reconcile examples/late_corrections.py --late out/late-orders --output out/corrections.parquet

``LATE_ORDERS`` (an environment variable) moves the table elsewhere.
"""

from __future__ import annotations

import os
from typing import Any

from panes.datastream import StreamEnvironment
from panes.functions import Sum
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows, WindowRow

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z
MINUTE = 60_000
LATE_TABLE = os.environ.get("LATE_ORDERS", "out/late-orders")


def order(shop: str, second: int, amount: int) -> dict[str, Any]:
    return {"shop": shop, "ts": START + second * 1000, "amount": amount}


ORDERS = [
    [order("north", 5, 30), order("south", 12, 20), order("north", 50, 10)],
    [order("north", 70, 25), order("south", 95, 15)],  # the watermark passes 1:00 + 10 s: the first minute is done
    [order("north", 40, 99), order("south", 58, 7), order("north", 130, 5)],  # too late for the first minute
]
"""Orders of two shops in three micro-batches; the last batch brings two orders of the first minute."""


def build(env: StreamEnvironment) -> None:
    (
        env.from_micro_batches(ORDERS, type_info="shop STRING, ts BIGINT, amount BIGINT")
        .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts"))
        .key_by("shop")
        .window(TumblingEventTimeWindows.of(MINUTE))
        .allowed_lateness(10_000)
        .late_data_table(LATE_TABLE)
        .aggregate(Sum("amount"), WindowRow(key="shop"))
        .print("totals")
    )
