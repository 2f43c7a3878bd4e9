"""panes against Spark's native windowed aggregation, case by case, in one Spark session on the same files.

    .venv/bin/python bench/suite.py                       # every case, 1,000,000 events (about half an hour)
    .venv/bin/python bench/suite.py --events 200000       # smaller
    .venv/bin/python bench/suite.py --cases tumbling      # the cases whose name contains the word

For each case (see ``workload.Case``): both sides read the same Parquet files as a stream, one file per
micro-batch, and write their windows as Parquet; the outputs are checked identical (every row, not just the
count) before a timing counts. Printed per case: events per second of each side and the ratio panes/native
(wall time of the whole query, the session warm), the first micro-batch's seconds, the seconds of data
batches 2 and 10, the seconds of a micro-batch with no input and nothing due, the peak resident memory of
the JVM and of the Python workers, and the state bytes per open pane. The table is written to
``bench/RESULTS.md`` with the machine, the versions and the date.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from measure import MemorySampler, batch_seconds, input_rows, write_section  # noqa: E402
from workload import Case, local_job, native_query, panes_job, same_results, write_events  # noqa: E402

CASES = [
    Case("tumbling", 100),
    Case("tumbling", 10_000),
    Case("tumbling", 100_000),
    Case("sliding", 100),
    Case("sliding", 10_000),
    Case("sliding", 100_000),
    Case("session", 100),
    Case("session", 10_000),
    Case("session", 100_000),
    Case("tumbling", 10_000, per_key=True),  # event time per key: the general operator, element by element
    Case("tumbling", 10_000, function="python"),
    Case("tumbling", 10_000, function="reduce"),
    Case("tumbling", 10_000, function="aggregate"),
    Case("tumbling", 100_000, size_ms=3_600_000),  # every pane stays open: state grows batch by batch
    Case("tumbling", 100_000, function="distinct_python", size_ms=600_000),
    Case("tumbling", 100_000, function="distinct_batch", size_ms=600_000),
]


@dataclass
class Side:
    seconds: float
    batches: list[float]
    rows: list[int]
    jvm: int
    worker: int
    workers: int
    cpu_jvm: float = 0.0
    cpu_python: float = 0.0
    """CPU seconds the JVM and the Python processes (workers and shard keepers) used during the run."""
    state_bytes_per_pane: float | None = None
    written: list[int] | None = None
    """State bytes panes wrote in each micro-batch that called its keyed step."""

    @staticmethod
    def measured(seconds: float, progress: list[Any], sampler: MemorySampler) -> Side:
        """One side's run: its seconds, the batches of its query progress and the sampler's memory peaks."""
        return Side(
            seconds,
            batch_seconds(progress),
            input_rows(progress),
            sampler.jvm_peak,
            sampler.worker_peak,
            sampler.workers_total_peak,
            sampler.cpu_seconds("jvm"),
            sampler.cpu_seconds("python"),
        )

    def batch(self, number: int) -> float | None:
        """The seconds of data micro-batch ``number`` (1-based)."""
        return self.batches[number - 1] if len(self.batches) >= number else None

    def empty_batch(self) -> float | None:
        """The seconds of the last micro-batch that read no input (the trailing empty file's)."""
        empty = [s for s, r in zip(self.batches, self.rows, strict=False) if r == 0]
        return empty[-1] if empty else None


def run_native(spark: Any, case: Case, folder: str, work: str, sampler: MemorySampler) -> Side:
    sampler.reset()
    started = time.monotonic()
    query = native_query(spark, case, folder, f"{work}/native-out", f"{work}/native-ck")
    query.awaitTermination()
    seconds = time.monotonic() - started
    progress = list(query.recentProgress)
    return Side.measured(seconds, progress, sampler)


def run_panes(spark: Any, case: Case, folder: str, work: str, sampler: MemorySampler, shards: int | None) -> Side:
    sampler.reset()
    env = panes_job(spark, case, folder, f"{work}/panes-out", f"{work}/panes-ck", shards)
    started = time.monotonic()
    result = env.execute("bench")
    seconds = time.monotonic() - started
    progress = result.details.get("progress", [])
    metrics = result.details.get("metrics", {})
    side = Side.measured(seconds, progress, sampler)
    peak = metrics.get("peak_state_bytes_per_pane")
    side.state_bytes_per_pane = None if peak is None else float(peak)
    per_batch = metrics.get("per_batch", [])
    side.written = [sum(step["state_bytes_written"] for step in batch.values()) for batch in per_batch]
    return side


LOCAL_FUNCTIONS = {"count_sum": "built-in count+sum", "python": "Python ProcessWindowFunction"}


def run_local(folder: str, events: int) -> dict[str, float]:
    """Events per second of the local runner on tumbling 10 s windows, 10,000 keys (input read beforehand), by
    function (:data:`LOCAL_FUNCTIONS`)."""
    write_events(folder, events, 10_000, 1)
    rates = {}
    for function, label in LOCAL_FUNCTIONS.items():
        env, count = local_job(folder, f"{folder}-out-{function}", function)
        started = time.monotonic()
        env.execute("local bench")
        rates[function] = rate = count / (time.monotonic() - started)
        print(f"local runner, tumbling 10 s, {label}, 10,000 keys: {rate:,.0f} events/s ({count:,} events)", flush=True)
    return rates


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def mb(value: int) -> str:
    return f"{value / 2**20:.0f}"


def written_kb(side: Side, number: int) -> str:
    """The state KiB panes wrote in data micro-batch ``number`` (1-based)."""
    if not side.written or len(side.written) < number:
        return "-"
    return f"{side.written[number - 1] / 1024:.0f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--cases", default="", help="run only the cases whose name contains this text")
    parser.add_argument("--shards", type=int, default=None, help="panes shards (default: the runner's)")
    parser.add_argument("--output", default=str(HERE / "RESULTS.md"), help="where the table goes")
    parser.add_argument(
        "--local-events", type=int, default=200_000, help="events of the local runner's cases (0: skip them)"
    )
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file (bench/targets.py)")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    from panes.spark import create_session

    spark = create_session(app_name="panes-bench")
    cases = [c for c in CASES if args.cases in c.name]
    sampler = MemorySampler()
    sampler.start()
    work = tempfile.mkdtemp(prefix="panes-bench-")
    rows = []
    try:
        write_events(f"{work}/warm", 2_000, 10, 2)
        for case in {c.window: c for c in cases}.values():  # warm both sides' code paths once per window kind
            run_native(spark, Case(case.window, 10), f"{work}/warm", f"{work}/warm-{case.window}-n", sampler)
            run_panes(
                spark,
                Case(case.window, 10, case.function),
                f"{work}/warm",
                f"{work}/warm-{case.window}-p",
                sampler,
                args.shards,
            )
        for index, case in enumerate(cases):
            folder = f"{work}/events-{case.keys}"
            if not os.path.isdir(folder):
                write_events(folder, args.events, case.keys, args.batches)
            run_dir = f"{work}/run-{index}"
            native = run_native(spark, case, folder, run_dir, sampler)
            panes = run_panes(spark, case, folder, run_dir, sampler, args.shards)
            same, count = same_results(spark, f"{run_dir}/native-out", f"{run_dir}/panes-out")
            rows.append((case, native, panes, same, count))
            print_row(case, native, panes, same, count, args.events)
            write_results(args, rows, spark.version, None)  # so far (a long run's table survives a stop)
            shutil.rmtree(run_dir, ignore_errors=True)
        local = run_local(f"{work}/local", args.local_events) if args.local_events > 0 else None
    finally:
        sampler.stop()
        shutil.rmtree(work, ignore_errors=True)
    write_results(args, rows, spark.version, local)
    return 0 if all(same for _, _, _, same, _ in rows) else 1


def print_row(case: Case, native: Side, panes: Side, same: bool, count: int, events: int) -> None:
    print(
        f"{case.name:55s} native {events / native.seconds:9.0f}/s  panes {events / panes.seconds:9.0f}/s  "
        f"ratio {native.seconds / panes.seconds:5.2f}  first {fmt(panes.batch(1))} s  "
        f"b2 {fmt(panes.batch(2))} s  b10 {fmt(panes.batch(10))} s  empty {fmt(panes.empty_batch())} s "
        f"(native {fmt(native.empty_batch())} s)  CPU s JVM/Python {panes.cpu_jvm:.0f}/{panes.cpu_python:.0f} "
        f"(native {native.cpu_jvm:.0f}/{native.cpu_python:.0f})  {'same' if same else 'DIFFERENT'} ({count} windows)",
        flush=True,
    )


BEGIN, END = "<!-- suite.py writes from here -->", "<!-- to here -->"


def write_json(args: Any, rows: list[Any], local: dict[str, float] | None) -> None:
    """The run's figures for ``bench/targets.py``: per case its events/s on both sides and the ratio."""
    if args.json is None:
        return
    cases = [
        {
            "name": case.name,
            "window": case.window,
            "keys": case.keys,
            "function": case.function,
            "size_ms": case.size_ms,
            "native_events_per_s": args.events / native.seconds,
            "panes_events_per_s": args.events / panes.seconds,
            "ratio": native.seconds / panes.seconds,
            "identical": same,
        }
        for case, native, panes, same, _ in rows
    ]
    document = {
        "command": " ".join(["bench/suite.py", *sys.argv[1:]]),
        "date": datetime.date.today().isoformat(),
        "cores": os.cpu_count(),
        "events": args.events,
        "cases": cases,
        "local_events_per_s": local,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(document, indent=1) + "\n")


def write_results(args: Any, rows: list[Any], spark_version: str, local: dict[str, float] | None) -> None:
    import numpy
    import pyarrow

    lines = [
        "# Benchmark results",
        "",
        f"`{' '.join(['.venv/bin/python', 'bench/suite.py', *sys.argv[1:]])}` on "
        f"{datetime.date.today().isoformat()}: {platform.machine()}, {os.cpu_count()} cores, Linux "
        f"{platform.release()}; Python {platform.python_version()}, Spark {spark_version}, pyarrow "
        f"{pyarrow.__version__}, numpy {numpy.__version__}; Spark `local[2]`, "
        f"{args.events:,} events in {args.batches} micro-batches of Parquet (one file each), then one event ten "
        "hours later (it closes every window) and an empty file.",
        "",
        "Events per second are over the whole query (session warm, first batch included); the ratio is "
        "panes/native throughput. Batch times are panes' (`triggerExecution` of Spark's progress): the "
        "first batch, data batches 2 and 10, and the last batch with no input and nothing due (native's in "
        "brackets). Memory is "
        "the peak resident size of the JVM and of one Python worker during panes' run; CPU the seconds the JVM and all "
        "Python processes used during it (native's in brackets). State bytes per pane: "
        "panes' stored state divided by its open panes, at its largest. Written KiB: the state panes wrote to "
        "Spark's state store in data batches 2 and 10.",
        "",
        "| case | native ev/s | panes ev/s | ratio | first batch s | batch 2 s | batch 10 s | empty batch s | "
        "JVM MB | worker MB | CPU s JVM / Python | state B/pane | written KiB b2 / b10 | results |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for case, native, panes, same, count in rows:
        lines.append(
            f"| {case.name} | {args.events / native.seconds:,.0f} | {args.events / panes.seconds:,.0f} | "
            f"{native.seconds / panes.seconds:.2f} | {fmt(panes.batch(1))} | {fmt(panes.batch(2))} | "
            f"{fmt(panes.batch(10))} | {fmt(panes.empty_batch())} ({fmt(native.empty_batch())}) | {mb(panes.jvm)} | "
            f"{mb(panes.worker)} | {panes.cpu_jvm:.0f} / {panes.cpu_python:.0f} "
            f"({native.cpu_jvm:.0f} / {native.cpu_python:.0f}) | "
            f"{fmt(panes.state_bytes_per_pane, 1)} | {written_kb(panes, 2)} / {written_kb(panes, 10)} | "
            f"{'identical' if same else 'DIFFERENT'}, {count:,} windows |"
        )
    lines += (
        []
        if local is None
        else [
            "",
            "Local runner (one Python process, Flink's exact emission order), tumbling 10 s windows over "
            f"10,000 keys, {args.local_events:,} events: "
            + "; ".join(f"{LOCAL_FUNCTIONS[f]} {rate:,.0f} events/s" for f, rate in local.items())
            + ".",
        ]
    )
    write_section(Path(args.output), BEGIN, END, "\n".join(lines[2:]))
    write_json(args, rows, local)
    print(f"written to {args.output}")


if __name__ == "__main__":
    raise SystemExit(main())
