"""A job whose user function prints (as two of PyFlink's own examples do inside a ProcessWindowFunction)."""

from __future__ import annotations

from typing import Any


def noisy(value: int) -> int:
    print(f"the function saw {value}")
    return value * 10


def build(env: Any) -> None:
    env.from_collection([1, 2, 3]).map(noisy).print()
