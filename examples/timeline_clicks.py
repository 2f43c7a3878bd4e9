"""A job module for ``panes timeline``: clicks per page in 10-second windows with early results.

Run ``panes timeline examples/timeline_clicks.py`` to draw what its two window steps do:

- clicks per page in tumbling 10 s event-time windows, with an early result every 4 s of event time
  (``ContinuousEventTimeTrigger``), 5 s of allowed lateness (late clicks within it fire the window again) and
  later clicks sent to a late-data side output;
- visits per user (event-time sessions, 3 s gap) without allowed lateness or late-data output: late clicks are
  dropped.

Watermarks: bounded out-of-orderness of 1 s, moving after each micro-batch of four clicks. A job module
defines ``build(env)`` and does not execute.
"""

from __future__ import annotations

import random
from typing import Any

from panes.datastream import ListSink, OutputTag, StreamEnvironment
from panes.watermarks import WatermarkStrategy
from panes.windowing import ContinuousEventTimeTrigger, EventTimeSessionWindows, TumblingEventTimeWindows

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z
LATE_CLICKS: OutputTag[Any] = OutputTag("late-clicks")


def clicks(count: int = 90, seed: int = 11) -> list[dict[str, Any]]:
    """``count`` clicks about 400 ms apart, out of order by up to 1.5 s; every 12th arrives 4 to 14 s late."""
    rng = random.Random(seed)
    events = []
    for i in range(count):
        ts = START + i * 400 + rng.randint(-1_500, 0)
        if i % 12 == 11:
            ts -= rng.randint(4_000, 14_000)
        events.append({"user": f"user-{rng.randint(1, 3)}", "page": rng.choice(["/home", "/cart", "/help"]), "ts": ts})
    return events


def build(env: StreamEnvironment) -> None:
    # clicks arrive four at a time: the watermark moves after each micro-batch, on every runner
    stream = env.from_collection(clicks(), batch_size=4).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(1_000).with_timestamp_assigner("ts")
    )
    per_page = (
        stream.key_by("page")
        .window(TumblingEventTimeWindows.of(10_000))
        .trigger(ContinuousEventTimeTrigger.of(4_000))
        .allowed_lateness(5_000)
        .side_output_late_data(LATE_CLICKS)
        .process(lambda page, ctx, items: [(page, ctx.window().start, len(list(items)))])
        .name("clicks per page")
    )
    # results are kept in memory here (print() or a file sink work as well)
    per_page.sink_to(ListSink())
    per_page.get_side_output(LATE_CLICKS).sink_to(ListSink())
    visits = (
        stream.key_by("user")
        .window(EventTimeSessionWindows.with_gap(3_000))
        .process(lambda user, ctx, items: [(user, ctx.window().start, len(list(items)))])
        .name("visits per user")
    )
    visits.sink_to(ListSink())
