"""Count windows: results every N elements of a key, whatever their time.

``count_window(3)`` sums each customer's orders three at a time (the window fires and empties on every third
order; orders left over at the end never fire, as in Flink). ``count_window(4, 2)`` fires on every second
order of a customer with the sum of their last (up to) four orders.

    panes run examples/count_windows.py
"""

from __future__ import annotations

from typing import Any

from panes.datastream import StreamEnvironment

ORDERS = [
    [("acme", 10), ("bolt", 5), ("acme", 20), ("acme", 30), ("bolt", 7)],
    [("acme", 40), ("bolt", 9), ("acme", 50), ("bolt", 11), ("acme", 60)],
    [("acme", 70), ("bolt", 13)],
]
"""(customer, amount) pairs in three micro-batches."""


def add(a: tuple[str, int], b: tuple[str, int]) -> tuple[str, int]:
    return a[0], a[1] + b[1]


def build(env: StreamEnvironment) -> None:
    orders: Any = env.from_micro_batches(ORDERS).key_by(lambda order: order[0])
    orders.count_window(3).reduce(add).print("every 3")
    orders.count_window(4, 2).reduce(add).print("last 4, every 2")
