"""A job on Spark runs the same from any thread: started from a ``threading.Thread`` (a web service's worker, a
notebook's background thread) it writes what the same job started from the main thread writes.

Starting a query, Spark resolves its writer's Python data source (panes' own file writer ``panes_files``) in the
active session of the calling thread's JVM thread, which only the thread that built the session had: started
from another thread, a job whose every sink is a file failed with ``DATA_SOURCE_NOT_FOUND``."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from panes.datastream import ListSink, StreamEnvironment
from panes.spark import SparkRunner
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows

pytestmark = pytest.mark.spark

BATCHES = [
    [{"k": "a", "ts": 1, "n": 1}, {"k": "b", "ts": 2, "n": 2}, {"k": "a", "ts": 5, "n": 3}],
    [{"k": "b", "ts": 11, "n": 4}, {"k": "a", "ts": 12, "n": 5}],
    [{"k": "a", "ts": 25, "n": 6}],
]
"""Three micro-batches of two keys over three windows of 10 ms."""

SCHEMA = "k STRING, start BIGINT, total BIGINT"
"""The schema of the windowed sums in files."""


def sums_per_key_and_window(env: StreamEnvironment) -> Any:
    """The stream of each key's sum of ``n`` per tumbling event-time window of 10 ms over :data:`BATCHES`."""
    stamped = env.from_micro_batches(BATCHES).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    )
    return (
        stamped.key_by("k")
        .window(TumblingEventTimeWindows.of(10))
        .reduce(
            lambda a, b: {**a, "n": a["n"] + b["n"]},
            lambda key, window, sums: [{"k": key, "start": window.start, "total": s["n"]} for s in sums],
        )
    )


def files_job(spark: Any, folder: Path) -> list[dict[str, Any]]:
    """Run the windowed sums into JSON files under ``folder`` (every sink a file: Spark's tasks write them through
    panes' ``panes_files`` data source) and return the rows written, sorted."""
    env = StreamEnvironment(SparkRunner(spark, num_shards=2, checkpoint_location=str(folder / "checkpoint")))
    sums_per_key_and_window(env).sink_to_files(str(folder / "out"), "json", schema=SCHEMA)
    env.execute()
    return sorted(
        (json.loads(line) for path in (folder / "out").rglob("*.json") for line in path.read_text().splitlines()),
        key=lambda row: (row["k"], row["start"]),
    )


def list_job(spark: Any, folder: Path) -> list[dict[str, Any]]:
    """Run the windowed sums into a ``ListSink`` (written through ``foreachBatch``) and return its values, sorted."""
    env = StreamEnvironment(SparkRunner(spark, num_shards=2, checkpoint_location=str(folder / "checkpoint")))
    sink = ListSink()
    sums_per_key_and_window(env).sink_to(sink)
    env.execute()
    return sorted(sink.values, key=lambda row: (row["k"], row["start"]))


def in_a_thread(job: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """What ``job`` returns when run in a new ``threading.Thread``; its exception, if it raises, is raised here."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["rows"] = job()
        except BaseException as error:  # handed to the test's thread
            outcome["error"] = error

    thread = threading.Thread(target=run, name="panes-job")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["rows"]


@pytest.mark.parametrize("job", [files_job, list_job], ids=["file_sink", "list_sink"])
def test_a_job_started_from_another_thread_writes_what_it_writes_from_the_main_thread(
    spark: Any, tmp_path: Path, job: Callable[[Any, Path], list[dict[str, Any]]]
) -> None:
    on_main_thread = job(spark, tmp_path / "main")
    on_other_thread = in_a_thread(lambda: job(spark, tmp_path / "thread"))
    assert on_main_thread  # the job wrote windows at all
    assert on_other_thread == on_main_thread
