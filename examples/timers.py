"""A keyed process function with timers: abandoned shopping carts.

For each user, adding to the cart starts a 30 s event-time timer; checking out deletes it. When a timer
fires (the watermark passed it) the cart was abandoned and an alert is emitted. Keyed state remembers the
pending timer and the items in the cart. At the end of the input the final watermark fires every timer still
pending, as in Flink.

    panes run examples/timers.py
    panes run examples/timers.py --runner spark
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from panes.datastream import KeyedProcessFunction, StreamEnvironment
from panes.state import ValueStateDescriptor
from panes.time import format_instant
from panes.watermarks import WatermarkStrategy

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z
TIMEOUT_MS = 30_000


def event(user: str, action: str, second: int) -> dict[str, Any]:
    return {"user": user, "action": action, "ts": START + second * 1000}


EVENTS = [
    [event("ana", "add", 0), event("ben", "add", 2), event("ana", "add", 5), event("ben", "checkout", 20)],
    [event("cleo", "add", 25), event("ana", "add", 50), event("dan", "add", 55), event("cleo", "checkout", 70)],
    [event("ben", "add", 80), event("dan", "checkout", 81), event("eve", "add", 90)],
]


class AbandonedCarts(KeyedProcessFunction[str, dict[str, Any], tuple[str, str, int, str]]):
    """Emits (user, first item added, items, alert time) when a cart waited 30 s without a checkout."""

    def open(self, runtime_context: Any) -> None:
        self.timer = runtime_context.get_state(ValueStateDescriptor("timer"))
        self.first = runtime_context.get_state(ValueStateDescriptor("first-add"))
        self.items = runtime_context.get_state(ValueStateDescriptor("items"))

    def process_element(self, value: dict[str, Any], ctx: Any) -> None:
        timers = ctx.timer_service()
        pending = self.timer.value()
        if pending is not None:
            timers.delete_event_time_timer(pending)
        if value["action"] == "checkout":
            self.timer.clear()
            self.first.clear()
            self.items.clear()
            return
        if self.first.value() is None:
            self.first.update(value["ts"])
        self.items.update((self.items.value() or 0) + 1)
        due = value["ts"] + TIMEOUT_MS
        timers.register_event_time_timer(due)
        self.timer.update(due)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[tuple[str, str, int, str]]:
        yield ctx.get_current_key(), format_instant(self.first.value()), self.items.value(), format_instant(timestamp)
        self.timer.clear()
        self.first.clear()
        self.items.clear()


def build(env: StreamEnvironment) -> None:
    (
        env.from_micro_batches(EVENTS)
        .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts"))
        .key_by("user")
        .process(AbandonedCarts())
        .print("abandoned")
    )
