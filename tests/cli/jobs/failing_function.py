"""A job whose map function raises on one element: panes run must exit 1 and show the error in full."""

from __future__ import annotations

from typing import Any

from panes.datastream import StreamEnvironment


def invert(value: int) -> float:
    return 1 / value


def build(env: StreamEnvironment) -> None:
    stream: Any = env.from_collection([4, 2, 0, 1])
    stream.map(invert).name("invert").print("inverse")
