"""Late data: allowed lateness re-fires a window with corrected results; later data goes to a side output.

Ten-second windows count sensor readings; the watermark follows the largest timestamp (no delay). With 5 s
of allowed lateness, a reading that arrives after its window fired but less than 5 s after the window's end
(in event time, measured by the watermark) is added and the window fires again with the new count. A
reading later than that is not dropped: it goes to the ``too-late`` side output.

    panes run examples/late_data.py
    panes run examples/late_data.py --runner spark

The micro-batches are chosen so both runners agree: the reading at 8 s arrives when the watermark is at
12 s (within the lateness of window [0 s, 10 s)); the reading at 3 s arrives when it is at 16 s (beyond).
"""

from __future__ import annotations

from typing import Any

from panes.datastream import OutputTag, StreamEnvironment
from panes.time import format_instant
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z
TOO_LATE: OutputTag[Any] = OutputTag("too-late")


def reading(sensor: str, second: int) -> dict[str, Any]:
    return {"sensor": sensor, "ts": START + second * 1000}


READINGS = [
    [reading("s1", 1), reading("s1", 4), reading("s1", 9), reading("s1", 12)],
    [reading("s1", 8), reading("s1", 16)],
    [reading("s1", 3), reading("s1", 25)],
]


def count(sensor: str, window: Any, readings: Any) -> list[tuple[str, str, int]]:
    return [(sensor, format_instant(window.start), sum(1 for _ in readings))]


def build(env: StreamEnvironment) -> None:
    counts = (
        env.from_micro_batches(READINGS)
        .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts"))
        .key_by("sensor")
        .window(TumblingEventTimeWindows.of(10_000))
        .allowed_lateness(5_000)
        .side_output_late_data(TOO_LATE)
        .apply(count)
    )
    counts.print("count")
    counts.get_side_output(TOO_LATE).map(lambda r: (r["sensor"], format_instant(r["ts"]))).print("too late")
