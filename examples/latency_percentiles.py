"""Latency percentiles per endpoint and minute, computed with pandas over whole panes at once.

``process_batch`` hands the window's panes to a function as one ``pandas.DataFrame``: a row per request, with
its window's ``window_start`` and ``window_end``. The function groups by endpoint and window and returns one row
per pane. On Spark this window runs on columns: the requests stay Arrow columns in state and the function is
called once for all panes a watermark closes in a shard (``panes explain`` says so), not once per pane.

    panes run examples/latency_percentiles.py
    panes run examples/latency_percentiles.py --runner spark
"""

from __future__ import annotations

from typing import Any

from panes.datastream import StreamEnvironment
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z
MINUTE = 60_000
ENDPOINTS = ("/search", "/cart", "/pay")


def request(index: int) -> dict[str, Any]:
    """The ``index``-th request: an endpoint, a time over three minutes, and a latency with a slow tail."""
    latency = 20 + (index * 37) % 80 + (400 if index % 23 == 0 else 0)
    return {"endpoint": ENDPOINTS[index % 3], "ts": START + index * 900, "latency_ms": float(latency)}


REQUESTS = [[request(i) for i in range(start, start + 50)] for start in range(0, 200, 50)]
"""200 requests in four micro-batches."""


def percentiles(panes: Any) -> Any:
    """The median, 95th and 99th percentile latency and the request count of each pane (numpy's linear
    interpolation between the nearest ranks)."""
    grouped = panes.groupby(["endpoint", "window_start", "window_end"], sort=False)["latency_ms"]
    summary = grouped.quantile([0.5, 0.95, 0.99]).unstack()
    summary.columns = ["p50", "p95", "p99"]
    summary["requests"] = grouped.size()
    return summary.reset_index()


OUTPUT = "endpoint STRING, window_start BIGINT, requests BIGINT, p50 DOUBLE, p95 DOUBLE, p99 DOUBLE"


def build(env: StreamEnvironment) -> None:
    (
        env.from_micro_batches(REQUESTS, type_info="endpoint STRING, ts BIGINT, latency_ms DOUBLE")
        .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts"))
        .key_by("endpoint")
        .window(TumblingEventTimeWindows.of(MINUTE))
        .process_batch(percentiles, OUTPUT)
        .print("latency")
    )
