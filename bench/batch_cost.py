"""What a micro-batch costs on Spark when it carries almost nothing, and where that time goes.

    .venv/bin/python bench/batch_cost.py                                      # 15 one-record micro-batches, 2 runs
    .venv/bin/python bench/batch_cost.py --java-options=-XX:TieredStopAtLevel=1
    .venv/bin/python bench/batch_cost.py --master local[8] --batches 30 --runs 3
    .venv/bin/python bench/batch_cost.py --conf spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows=false

The job: records ``{"page", "ts"}``, one per micro-batch (``from_micro_batches``), bounded out-of-orderness
watermarks, ``key_by("page")``, tumbling 10-second windows counted by ``Count()`` (the columnar path) into a
``ListSink``; run ``--runs`` times in one fresh session (the first run also pays for the JVM's and the Python
workers' start). Printed:

- per run: its wall seconds and, per micro-batch after the first, the mean milliseconds of Spark's progress
  phases (``triggerExecution`` = ``queryPlanning`` + ``addBatch`` + ``walCommit`` + ``commitOffsets`` + the
  rest);
- the Spark jobs of the last run's last micro-batches (from Spark's event log): per stage, its tasks, its
  span and its tasks' milliseconds;
- CPU seconds of the whole command: the JVM by thread group (the JIT compilers, executor tasks, the garbage
  collector, threads that ended such as the query's stream execution thread, the rest) and the Python
  processes by kind (Spark's workers and planners, panes' shard keepers, this driver), read from ``/proc``
  before the session stops.

Nothing is written: the figures are for reading (``bench/RESULTS.md`` quotes them where it explains the
fixed cost of a micro-batch). Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))

from measure import command_line, cpu_seconds, descendants, keepers, thread_cpu_seconds  # noqa: E402

PHASES = ("triggerExecution", "queryPlanning", "addBatch", "walCommit", "commitOffsets")


def run_job(spark: Any, batches: int) -> tuple[float, list[dict[str, Any]]]:
    """One run of the job; its wall seconds and Spark's progress per micro-batch."""
    from panes.datastream import ListSink, StreamEnvironment
    from panes.functions import Count
    from panes.spark import SparkRunner
    from panes.watermarks import WatermarkStrategy
    from panes.windowing import TumblingEventTimeWindows

    env = StreamEnvironment(SparkRunner(spark))
    records = [[{"page": f"/{i % 3}", "ts": i * 4_000}] for i in range(batches)]
    sink = ListSink()
    (
        env.from_micro_batches(records, type_info="page STRING, ts BIGINT")
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(1_000).with_timestamp_assigner("ts")
        )
        .key_by("page")
        .window(TumblingEventTimeWindows.of(10_000))
        .aggregate(Count())
        .sink_to(sink)
    )
    started = time.monotonic()
    result = env.execute("batch cost")
    wall = time.monotonic() - started
    if not sink.values:
        raise SystemExit("the job gave no results: the measurement would be of nothing")
    return wall, list(result.details["progress"])


def phase_means(progress: list[dict[str, Any]]) -> dict[str, float]:
    """Mean milliseconds per phase over the micro-batches after the first (the first plans the query)."""
    later = [p for p in progress if p["batchId"] > 0] or progress
    return {phase: sum(p["durationMs"].get(phase, 0) for p in later) / len(later) for phase in PHASES}


def event_log_lines(folder: Path) -> list[dict[str, Any]]:
    """The events of the one application in ``folder`` (Spark writes them zstd-compressed, rolled)."""
    import zstandard

    events: list[dict[str, Any]] = []
    for path in sorted(folder.rglob("events_*")):
        raw = path.read_bytes()
        if path.suffix == ".zstd":
            raw = zstandard.ZstdDecompressor().stream_reader(raw).read()
        events += [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
    return events


def stages_of_last_jobs(events: list[dict[str, Any]], jobs: int) -> list[str]:
    """One line per Spark job of the last ``jobs`` and one per stage of each."""
    started: dict[int, dict[str, Any]] = {}
    ended: dict[int, int] = {}
    stages: dict[int, dict[str, Any]] = {}
    tasks: dict[int, list[int]] = collections.defaultdict(list)
    for event in events:
        kind = event["Event"]
        if kind == "SparkListenerJobStart":
            started[event["Job ID"]] = event
        elif kind == "SparkListenerJobEnd":
            ended[event["Job ID"]] = event["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            stages[event["Stage Info"]["Stage ID"]] = event["Stage Info"]
        elif kind == "SparkListenerTaskEnd":
            info = event["Task Info"]
            tasks[event["Stage ID"]].append(info["Finish Time"] - info["Launch Time"])
    lines = []
    for job in sorted(started)[-jobs:]:
        start = started[job]
        lines.append(f"  job {job}: {ended.get(job, start['Submission Time']) - start['Submission Time']} ms")
        for stage in sorted(start["Stage IDs"]):
            info = stages.get(stage)
            if info is None:
                continue  # skipped (its shuffle output was there already)
            span = info.get("Completion Time", 0) - info.get("Submission Time", 0)
            name = re.sub(r" at .*", "", info["Stage Name"])
            lines.append(
                f"    stage {stage} ({name}): {info['Number of Tasks']} tasks, {span} ms, task ms {tasks[stage]}"
            )
    return lines


def jvm_threads(pid: int) -> dict[str, float]:
    """CPU seconds of the JVM ``pid`` by thread group; threads that ended (a query's stream execution thread
    ends with the query) are counted as "ended threads"."""
    groups: dict[str, float] = collections.Counter()
    for name, seconds in thread_cpu_seconds(pid):
        if "CompilerThre" in name:
            group = "JIT compilers"
        elif name.startswith("Executor task"):
            group = "executor tasks"
        elif name.startswith(("GC", "G1")):
            group = "garbage collector"
        else:
            group = "the rest"
        groups[group] += seconds
    groups["ended threads"] = max(0.0, cpu_seconds(pid) - sum(groups.values()))
    return dict(groups)


def python_processes() -> dict[str, float]:
    """CPU seconds of the Python processes below this one (Spark's daemons, workers and planners) and of the
    shard keepers serving them, by kind."""
    kinds: dict[str, float] = collections.Counter()
    below = [pid for pid in descendants(os.getpid()) if "python" in command_line(pid).split(" ")[0]]
    for pid in below:
        kinds["Spark's Python workers and planners"] += cpu_seconds(pid)
    for pid in keepers(set(below)):
        kinds["shard keepers"] += cpu_seconds(pid)
    return dict(kinds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=15, help="micro-batches of one record each (default 15)")
    parser.add_argument("--runs", type=int, default=2, help="runs of the job in one session (default 2)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--java-options", default="", help="the driver JVM's extra options, e.g. -XX:TieredStopAtLevel=1"
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting of the session (repeatable), e.g. spark.sql.shuffle.partitions=4",
    )
    args = parser.parse_args()

    from panes.spark import create_session

    events = Path(tempfile.mkdtemp(prefix="panes-batch-cost-"))
    config = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": events.as_uri()}
    if args.java_options:
        config["spark.driver.extraJavaOptions"] = args.java_options
    for setting in args.conf:
        key, equals, value = setting.partition("=")
        if not key or not equals:
            parser.error(f"--conf {setting!r}: give a Spark setting as key=value")
        config[key] = value
    spark = create_session(args.master, app_name="batch-cost", config=config)
    from pyspark import SparkContext

    jvm = SparkContext._gateway.proc.pid  # type: ignore[union-attr]
    try:
        print(
            f"{args.batches} micro-batches of one record, {args.master}, Java options {args.java_options or '(none)'}, "
            f"settings {', '.join(args.conf) or '(none)'}"
        )
        for run in range(args.runs):
            wall, progress = run_job(spark, args.batches)
            means = phase_means(progress)
            split = ", ".join(f"{phase} {means[phase]:.0f}" for phase in PHASES[1:])
            print(
                f"run {run + 1}: {wall:.1f} s, {len(progress)} micro-batches; ms per micro-batch after the first: "
                f"{means['triggerExecution']:.0f} ({split})"
            )
        threads = jvm_threads(jvm)
        python = python_processes()
        driver = cpu_seconds(os.getpid())
    finally:
        spark.stop()
    print("the last Spark jobs (the last run's last micro-batches):")
    print("\n".join(stages_of_last_jobs(event_log_lines(events), 6)))
    shutil.rmtree(events, ignore_errors=True)
    print(
        f"CPU seconds: JVM {sum(threads.values()):.1f} ("
        + ", ".join(f"{k} {v:.1f}" for k, v in sorted(threads.items(), key=lambda kv: -kv[1]))
        + ")"
    )
    print("             " + ", ".join(f"{k} {v:.1f}" for k, v in python.items()) + f", this driver {driver:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
