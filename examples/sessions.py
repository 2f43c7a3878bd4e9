"""Sessionisation: one session per user visit (event-time session windows, 10 s gap).

Each session gives the user, its first and last click (ISO-8601 UTC), its clicks and the pages seen. A session
closes when the watermark passes its last click plus the gap; clicks of one user less than 10 s apart belong
to one session, also when they arrive out of order (bounded out-of-orderness 2 s) or in different
micro-batches.

    panes run examples/sessions.py                  # the local runner
    panes run examples/sessions.py --runner spark   # local Spark: each inner list is one micro-batch
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from panes.datastream import StreamEnvironment
from panes.time import format_instant
from panes.watermarks import WatermarkStrategy
from panes.windowing import EventTimeSessionWindows
from panes.windowing.functions import ProcessWindowFunction, WindowContext

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z
GAP_MS = 10_000


def click(user: str, page: str, second: float) -> dict[str, Any]:
    return {"user": user, "page": page, "ts": START + int(second * 1000)}


CLICKS = [
    [click("ana", "/home", 0), click("ben", "/home", 1), click("ana", "/search", 4), click("ana", "/item", 9)],
    [click("ben", "/cart", 7), click("ana", "/cart", 15), click("cleo", "/home", 16), click("cleo", "/help", 24)],
    [click("ben", "/pay", 30), click("ana", "/home", 40), click("cleo", "/home", 41), click("ben", "/home", 31)],
]
"""Clicks in three micro-batches: ``ben``'s click at 7 s arrives in the batch after his click at 1 s and joins
its session; his click at 31 s arrives after his click at 30 s."""


class Session(ProcessWindowFunction[dict[str, Any], tuple[str, str, str, int, str], str, Any]):
    def process(
        self, key: str, context: WindowContext[Any], elements: Iterable[dict[str, Any]]
    ) -> Iterable[tuple[str, str, str, int, str]]:
        clicks = sorted(elements, key=lambda c: c["ts"])
        pages = " ".join(c["page"] for c in clicks)
        yield key, format_instant(clicks[0]["ts"]), format_instant(clicks[-1]["ts"]), len(clicks), pages


def build(env: StreamEnvironment) -> None:
    (
        env.from_micro_batches(CLICKS)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(2_000).with_timestamp_assigner("ts")
        )
        .key_by("user")
        .window(EventTimeSessionWindows.with_gap(GAP_MS))
        .process(Session())
        .print("session")
    )
