"""Event time per key: sensors with skewed clocks and one that uploads late, with one watermark and with one per key.

Three sensors send a reading every 10 s; one-minute windows count them per sensor, with 5 s of out-of-orderness.

- ``roof``'s clock is right;
- ``cellar``'s clock runs two minutes behind;
- ``garage`` goes offline after its first minute and, four minutes in, uploads the three minutes of readings it
  buffered, then goes on.

Under the stream's one watermark (``one watermark``) the roof's readings set the time: nearly all of the cellar's
readings and the garage's upload arrive after their windows closed and go to the ``late`` output. With
``watermark_per_key`` (``per key``) each sensor's windows follow its own readings: every reading is counted, in
its own minute. ``max_lag`` (10 minutes) bounds how far a sensor may fall behind the stream before the stream's
time closes its windows anyway. ``docs/event-time-per-key.md`` defines the option.

    panes run examples/skewed_clocks.py
    panes run examples/skewed_clocks.py --runner spark

Each micro-batch is one minute of arrivals in timestamp order, so both runners give the same results.
"""

from __future__ import annotations

from typing import Any

from panes.datastream import OutputTag, StreamEnvironment
from panes.time import format_instant
from panes.watermarks import PerKeyWatermarks, WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z
MINUTE = 60_000
OUT_OF_ORDERNESS = 5_000
LATE: OutputTag[Any] = OutputTag("late")


def reading(sensor: str, second: int) -> dict[str, Any]:
    return {"sensor": sensor, "ts": START + second * 1000}


def arrivals(minute: int) -> list[dict[str, Any]]:
    """What arrives in the ``minute``-th minute: the roof's readings of that minute, the cellar's two minutes
    behind, the garage's of its first minute, nothing while offline, then its buffer and the present."""
    seconds = range(60 * minute, 60 * minute + 60, 10)
    batch = [reading("roof", s) for s in seconds] + [reading("cellar", s - 120) for s in seconds]
    if minute == 0:
        batch += [reading("garage", s) for s in seconds]
    elif minute == 4:
        batch += [reading("garage", s) for s in range(60, 300, 10)]
    return sorted(batch, key=lambda r: (r["ts"], r["sensor"]))


READINGS = [arrivals(minute) for minute in range(5)]


def count(sensor: str, window: Any, readings: Any) -> list[tuple[str, str, int]]:
    return [(sensor, format_instant(window.start), sum(1 for _ in readings))]


def build(env: StreamEnvironment) -> None:
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(OUT_OF_ORDERNESS).with_timestamp_assigner("ts")
    readings = env.from_micro_batches(READINGS).assign_timestamps_and_watermarks(strategy)

    one_watermark = (
        readings.key_by("sensor").window(TumblingEventTimeWindows.of(MINUTE)).side_output_late_data(LATE).apply(count)
    )
    one_watermark.print("one watermark")
    one_watermark.get_side_output(LATE).map(lambda r: (r["sensor"], format_instant(r["ts"]))).print("late")

    per_key = PerKeyWatermarks.for_bounded_out_of_orderness(OUT_OF_ORDERNESS).with_max_lag(10 * MINUTE)
    readings.key_by("sensor").window(TumblingEventTimeWindows.of(MINUTE)).watermark_per_key(per_key).apply(count).print(
        "per key"
    )
