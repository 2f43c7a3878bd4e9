"""Run every probe of docs/spark-facts.md in turn, each in its own Python process (its own local SparkSession,
one JVM at a time), print each one's output, and end with a summary; exit 1 if any fact is broken.

    .venv/bin/python -m tools.spark_facts              # every probe (about 16 minutes on 2 cores)
    .venv/bin/python -m tools.spark_facts timer_chain  # only the probes named
    .venv/bin/python -m tools.spark_facts --no-connect # leave out the probe that starts a Spark Connect server
    .venv/bin/python -m tools.spark_facts cited_tests --run  # also run the repository tests cited (minutes)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from ._common import ROOT

PROBES: list[tuple[str, str]] = [
    ("explicit_batches", "1 explicit micro-batches, one per list; where the reader runs"),
    ("process_all_available", "1 variant B: processAllAvailable() per released list"),
    ("file_source_order", "1 variant C: the file source orders files by modification time"),
    ("restart_per_list", "1 variant D: an availableNow run per list"),
    ("batch_cost", "1 cost per batch (timings)"),
    ("worker_path", "1 Python workers import PySpark from pyspark.zip"),
    ("timer_boundary", "2 (a)-(f) late rows, the watermark, expiry <= watermark, no-data batches"),
    ("late_rows_kept_column", "2 (a) control: wm_ts kept, rows dropped by the previous batch's watermark"),
    ("timer_chain", "2 (d') timers registered in handleExpiredTimer wait for the next batch"),
    ("negative_times", "2 (g) the watermark clamps at 0; a shift makes it exact"),
    ("filter_pushdown", "2 (h) a filter that does not reference wm_ts goes below withWatermark"),
    ("state_blob", "3 a binary ValueState blob per shard; state call costs"),
    ("checkpoint_restart", "4 restarts: state, timers, replayed batches, the file sink's orphans"),
    ("bounded_grouped", "5 applyInPandas/applyInArrow: one call per shard; the annotation bug"),
    ("tws_batch", "5 transformWithStateInPandas in a batch query: watermark -1, no timers"),
    ("side_outputs", "6 several outputs: each action re-runs the stateful operator unless persisted"),
    ("row_vs_pandas", "7 Row versus pandas TWS, Arrow IPC packing"),
    ("spark_connect", "8 over Spark Connect (starts a server)"),
    ("cited_tests", "4, 6, 8 facts checked by the repository's tests (kill, cluster)"),
]


def report(errors: str) -> None:
    """A failed probe's standard error: its first distinct error lines (a Python worker's error is often far
    above the driver's traceback), then its end."""
    first: list[str] = []
    for line in errors.splitlines():
        if ("Error" in line or "Exception" in line) and not line.startswith("\t") and line not in first:
            first.append(line)
    print("first error lines:", *first[:15], "end of standard error:", errors[-3000:], sep="\n", file=sys.stderr)


def main(argv: list[str]) -> int:
    named = [a for a in argv if not a.startswith("-")]
    unknown = set(named) - {name for name, _ in PROBES}
    if unknown:
        print(f"unknown probes: {sorted(unknown)}; known: {[name for name, _ in PROBES]}", file=sys.stderr)
        return 2
    chosen = [(n, what) for n, what in PROBES if (not named or n in named)]
    if "--no-connect" in argv:
        chosen = [(n, what) for n, what in chosen if n != "spark_connect"]
    options = [a for a in argv if a == "--run"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    results: list[tuple[str, float, bool]] = []
    for name, what in chosen:
        print(f"\n===== {name}: {what}", flush=True)
        started = time.perf_counter()
        with tempfile.TemporaryFile("w+", encoding="utf-8") as errors:
            # the probe's own output as it comes; Spark's log lines (standard error) only if the probe fails
            done = subprocess.run(
                [sys.executable, "-u", "-m", f"tools.spark_facts.{name}", *options],
                cwd=ROOT,
                env=env,
                stderr=errors,
                check=False,
            )
            if done.returncode != 0:
                errors.seek(0)
                report(errors.read())
        took = time.perf_counter() - started
        results.append((name, took, done.returncode == 0))
    print("\n===== summary")
    for name, took, ok in results:
        print(f"  {'ok    ' if ok else 'BROKEN'} {name:<24} {took:6.1f} s")
    total = sum(took for _, took, _ in results)
    broken = [name for name, _, ok in results if not ok]
    print(
        f"  {len(results) - len(broken)} of {len(results)} probes hold, {total:.0f} s"
        + (f"; broken: {broken}" if broken else "")
    )
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
