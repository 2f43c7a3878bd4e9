"""Where a keyed step's state lives as task slots and keys grow: the growing-state job on local[2] and local[8].

    .venv/bin/python bench/scale.py                                   # 100,000 keys, local[2] and local[8]
    .venv/bin/python bench/scale.py --keys 100000 1000000 --events 3000000
    .venv/bin/python bench/scale.py --keepers both                    # also without shard keepers

The job is ``workload.panes_job`` with one-hour tumbling windows (count+sum): every pane stays open until the
flush event at the end, so the state grows with every micro-batch. Each configuration runs in its own
process (a Spark session of its own, one at a time), with ``spark.sql.shuffle.partitions`` equal to the task
slots. Printed per configuration: seconds of data batches 2 and 10, how many shard calls found no live operator
and were rebuilt from the state store (after each shard's first call) and the share of the keyed step's time
those rebuilds took, the peak resident memory of one Python process holding shards (worker or shard keeper)
and of all of them, the bytes in Spark's state store at the peak, and a digest of the results (the same for
every configuration of one key count). The table goes to ``bench/RESULTS.md`` (its scale section).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from measure import MemorySampler, batch_seconds, write_section  # noqa: E402
from workload import Case, panes_job, write_events  # noqa: E402

STEP = "Window(Aggregate)"
BEGIN = "<!-- scale.py writes from here -->"
END = "<!-- scale.py to here -->"


def one(args: argparse.Namespace) -> dict[str, Any]:
    """One configuration, in this process: the job's figures as a dict."""
    import pyarrow.dataset as ds

    from panes.spark import create_session

    slots = int(args.master[len("local[") : -1])
    config = {"spark.sql.shuffle.partitions": str(slots), "spark.default.parallelism": str(slots)}
    if args.memory:
        config["spark.driver.memory"] = args.memory
    spark = create_session(args.master, app_name="panes-scale", config=config)
    keepers = args.keepers == "on"
    keys = args.key_count
    case = Case("tumbling", keys, size_ms=3_600_000)
    work = tempfile.mkdtemp(prefix="panes-scale-")
    sampler = MemorySampler()
    try:
        write_events(f"{work}/warm", 2_000, 10, 2)
        warm = panes_job(spark, Case("tumbling", 10), f"{work}/warm", f"{work}/w-out", f"{work}/w-ck", None, keepers)
        warm.execute()
        write_events(f"{work}/events", args.events, keys, args.batches)
        env = panes_job(spark, case, f"{work}/events", f"{work}/out", f"{work}/ck", None, keepers)
        sampler.start()
        started = time.monotonic()
        result = env.execute("scale")
        seconds = time.monotonic() - started
        sampler.stop()
        progress = result.details["progress"]
        metrics = result.details["metrics"]
        per_batch = [batch.get(STEP, {}) for batch in metrics["per_batch"]]
        totals = metrics["steps"][STEP]
        calls = totals["shard_calls"]
        shards = 2 * slots
        stored, peak = 0, 0
        for batch in per_batch:
            stored += batch.get("state_bytes", 0)
            peak = max(peak, stored)
        table = ds.dataset(f"{work}/out", format="parquet").to_table().to_pylist()
        rows = sorted((r["key"], r["window_start"], r["n"], r["total"]) for r in table)
        return {
            "master": args.master,
            "keys": keys,
            "events": args.events,
            "keepers": keepers,
            "seconds": seconds,
            "batches": batch_seconds(progress),
            "calls": calls,
            "rebuilds": totals["restores"],
            "rebuilt_after_first": max(0, totals["restores"] - shards),
            "calls_after_first": max(1, calls - shards),
            "restore_ms": totals["restore_ms"],
            "call_ms": totals["shard_call_ms"],
            "cpu_jvm": sampler.cpu_seconds("jvm"),
            "cpu_python": sampler.cpu_seconds("python"),
            "worker_peak": sampler.worker_peak,
            "workers_total_peak": sampler.workers_total_peak,
            "state_bytes_peak": peak,
            "open_panes_peak": metrics.get("peak_open_panes") or max(1, totals["records_out"]),
            "results": len(rows),
            "digest": hashlib.sha256(repr(rows).encode()).hexdigest()[:12],
        }
    finally:
        sampler.stop()
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


def row(found: dict[str, Any]) -> str:
    batches = found["batches"]
    b2 = batches[1] if len(batches) > 1 else float("nan")
    b10 = batches[9] if len(batches) > 9 else float("nan")
    rebuild_share = found["rebuilt_after_first"] / found["calls_after_first"]
    time_share = found["restore_ms"] / max(1, found["call_ms"])
    slots = found["master"][len("local[") : -1]
    return (
        f"| {found['keys']:,} | {found['events']:,} | {slots} | {'yes' if found['keepers'] else 'no'} "
        f"| {found['seconds']:.1f} "
        f"| {b2:.2f} | {b10:.2f} | {found['rebuilds']} of {found['calls']} ({rebuild_share:.0%} after each "
        f"shard's first) | {found['restore_ms'] / 1000:.1f} s ({time_share:.0%}) "
        f"| {found['cpu_jvm']:.0f} / {found['cpu_python']:.0f} "
        f"| {found['worker_peak'] / 2**20:.0f} / {found['workers_total_peak'] / 2**20:.0f} "
        f"| {found['state_bytes_peak'] / 2**20:.1f} | {found['results']:,} {found['digest']} |"
    )


HEADER = (
    "| keys | events | task slots | shard keepers | job s | batch 2 s | batch 10 s | rebuilt from the store "
    "| time rebuilding (share of the keyed step) | CPU s: JVM / Python | Python MB: one process / all "
    "| state store MB | results |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, nargs="+", default=[100_000])
    parser.add_argument(
        "--events", type=int, default=300_000, help="events per run (at least one per key: more keys take more)"
    )
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--masters", nargs="+", default=["local[2]", "local[8]"])
    parser.add_argument("--keepers", choices=["on", "off", "both"], default="on")
    parser.add_argument("--memory", default="4g", help="spark.driver.memory (the local JVM's heap)")
    parser.add_argument("--output", default=str(HERE / "RESULTS.md"))
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--master", help=argparse.SUPPRESS)
    parser.add_argument("--key-count", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print("RESULT " + json.dumps(one(args)), flush=True)
        return 0
    lines = []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    print(HEADER, flush=True)
    for keys in args.keys:
        for master in args.masters:
            for keepers in ["on", "off"] if args.keepers == "both" else [args.keepers]:
                command = [sys.executable, __file__, "--one", "--master", master, "--key-count", str(keys)]
                events = max(args.events, keys)
                command += ["--events", str(events), "--batches", str(args.batches), "--keepers", keepers]
                command += ["--memory", args.memory]
                done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
                found = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
                if not found:
                    print(done.stdout[-3000:], done.stderr[-3000:], file=sys.stderr)
                    return 1
                line = row(json.loads(found[-1][len("RESULT ") :]))
                print(line, flush=True)
                lines.append(line)
    write(args, lines)
    return 0


def write(args: argparse.Namespace, lines: list[str]) -> None:
    import platform

    import pyspark

    section = (
        "## Scale: state that stays with its shard\n\n"
        f"`.venv/bin/python bench/scale.py {' '.join(sys.argv[1:])}` on {time.strftime('%Y-%m-%d')}: "
        f"{platform.machine()}, {os.cpu_count()} cores, Spark {pyspark.__version__}. The growing-state job "
        f"(one-hour tumbling windows, count+sum, max({args.events:,}, keys) events in {args.batches} micro-batches of "
        "Parquet; every pane stays open until the end), `spark.sql.shuffle.partitions` = task slots, shards = "
        "twice that. Rebuilt: shard calls that found no live operator of the committed version and restored it "
        "from Spark's state store (each shard's first call restores nothing). Python MB: peak resident memory of "
        "one process holding shards (a Python worker or a shard keeper) and of all of them at one moment.\n\n"
        f"{HEADER}\n" + "\n".join(lines)
    )
    write_section(Path(args.output), BEGIN, END, section)


if __name__ == "__main__":
    raise SystemExit(main())
