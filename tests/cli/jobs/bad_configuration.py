"""A job built with an invalid parameter: the construction error fails the run (exit 1) with its message."""

from __future__ import annotations

from panes.datastream import StreamEnvironment
from panes.windowing import TumblingEventTimeWindows


def build(env: StreamEnvironment) -> None:
    env.from_collection([1, 2]).key_by(lambda v: v).window(TumblingEventTimeWindows.of(1_000)).allowed_lateness(-5)
