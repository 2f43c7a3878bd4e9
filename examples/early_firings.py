"""Early results: a one-minute window that reports its count every 20 s of event time before it closes.

``ContinuousEventTimeTrigger.of(20 s)`` fires a window each time the watermark passes another 20 s inside
it, and at its end; the window keeps its contents, so each result is the count so far. Each result says
whether it is ``early`` (the watermark has not reached the window's end) or ``final``.

    panes run examples/early_firings.py
    panes run examples/early_firings.py --runner spark
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from panes.datastream import StreamEnvironment
from panes.functions import Count
from panes.time import format_instant
from panes.watermarks import WatermarkStrategy
from panes.windowing import ContinuousEventTimeTrigger, TumblingEventTimeWindows
from panes.windowing.functions import ProcessWindowFunction, WindowContext

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def view(page: str, second: int) -> dict[str, Any]:
    return {"page": page, "ts": START + second * 1000}


VIEWS = [
    [view(page, second) for second in range(start, start + 15, 3) for page in ("/a", "/b")]
    for start in range(0, 120, 15)
]
"""Views of two pages every 3 s for two minutes, 15 s of them per micro-batch."""


class Label(ProcessWindowFunction[int, tuple[str, str, int, str], str, Any]):
    def process(
        self, key: str, context: WindowContext[Any], elements: Iterable[int]
    ) -> Iterable[tuple[str, str, int, str]]:
        window = context.window()
        kind = "early" if context.current_watermark() < window.max_timestamp() else "final"
        for count in elements:
            yield key, format_instant(window.start), count, kind


def build(env: StreamEnvironment) -> None:
    (
        env.from_micro_batches(VIEWS)
        .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts"))
        .key_by("page")
        .window(TumblingEventTimeWindows.of(60_000))
        .trigger(ContinuousEventTimeTrigger.of(20_000))
        .aggregate(Count(), Label())
        .print("views")
    )
