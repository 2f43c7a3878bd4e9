"""A streaming job over explicit micro-batches writing Parquet, run in a subprocess that the restart tests
kill (``python -m tests.spark.restart_job <checkpoint> <output> [master]``)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from panes.datastream import OutputTag, StreamEnvironment
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows
from tests.aggregates import Count

LATE: OutputTag[Any] = OutputTag("late")


def batches() -> list[list[dict[str, Any]]]:
    """14 micro-batches of page views, each batch moving event time on by ~700 ms, with stragglers."""
    result = []
    for b in range(14):
        rows = [{"page": f"/p{(b * 3 + i) % 4}", "ts": b * 700 + i * 97} for i in range(6)]
        if b % 4 == 3:
            rows.append({"page": "/p0", "ts": b * 700 - 2500})  # late beyond the allowed lateness
        result.append(rows)
    return result


def build(env: StreamEnvironment, output: str) -> None:
    views = env.from_micro_batches(batches()).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(300).with_timestamp_assigner("ts")
    )
    counts = (
        views.key_by("page")
        .window(TumblingEventTimeWindows.of(1000))
        .allowed_lateness(200)
        .side_output_late_data(LATE)
        .aggregate(
            Count(),
            lambda page, window, n: [{"page": page, "start": window.start, "views": next(iter(n))}],
        )
    )
    counts.sink_to_files(f"{output}/counts", schema="page STRING, start BIGINT, views BIGINT")
    counts.get_side_output(LATE).sink_to_files(f"{output}/late", schema="page STRING, ts BIGINT")


def run(spark: Any, checkpoint: str, output: str) -> None:
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark, checkpoint_location=checkpoint, num_shards=3))
    build(env, output)
    env.execute("restartable")


def kill_after_commits(arguments: list[str], checkpoint: Path, env: dict[str, str], commits: int = 3) -> int:
    """Start ``python -m tests.spark.restart_job arguments...`` and kill -9 its whole process group (driver JVM
    and Python workers) once ``commits`` micro-batches are committed; returns how many were committed then."""
    root = Path(__file__).resolve().parents[2]
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.spark.restart_job", *arguments],
        cwd=root,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    folder = checkpoint / "commits"

    def committed() -> int:
        return len(list(folder.glob("[0-9]*"))) if folder.exists() else 0

    try:
        while process.poll() is None and committed() < commits:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.2)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return committed()


if __name__ == "__main__":
    from panes.spark import create_session

    run(create_session(sys.argv[3] if len(sys.argv) > 3 else "local[2]"), sys.argv[1], sys.argv[2])
