"""Latency beside throughput: what a warm micro-batch of a keyed window query takes on panes against Spark's
native query with the same window, at 100 and 100,000 keys (issue 45: at most 1.2x native's).

    .venv/bin/python bench/latency.py                                  # tumbling 10 s count+sum, 100 and 100,000 keys
    .venv/bin/python bench/latency.py --keys 100 --batches 20 --events 200000
    .venv/bin/python bench/latency.py --json bench/measured/latency.json   # also the figures, for bench/targets.py

Both sides read the same Parquet files as a stream, one file per micro-batch (``workload.write_events``: the
events of ``--batches`` data files, then one event ten hours on that closes every window, then an empty file),
and write their windows as Parquet; the outputs are checked identical before a figure counts. In one session,
each side runs twice per key count, native first, then panes, then both again: the first runs warm the JVM's
compilers and the Python workers, only the second ones count. Of a counted run, every data micro-batch but the
first (it plans the query) is a sample: its ``triggerExecution`` in Spark's progress, the time from the trigger
to the micro-batch's commit, which is what a result waits for beyond the trigger interval.

Printed per key count: each side's median (p50), p90 and largest micro-batch in milliseconds, panes' extra
milliseconds at the median, and the ratio of the medians (panes/native: above 1 is slower). With ``--batches``
in the tens, p90 and the largest stand in for a p99, which so few samples cannot give. ``--json`` writes the
figures and ``bench/RESULTS.md``'s "Latency" section (``bench/targets.py`` reads the JSON).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from measure import batch_seconds, input_rows, write_section  # noqa: E402
from workload import Case, native_query, panes_job, same_results, write_events  # noqa: E402

BEGIN, END = "<!-- latency.py writes from here -->", "<!-- latency.py to here -->"


@dataclass(frozen=True)
class Figures:
    """One side's warm data micro-batches, in milliseconds."""

    p50: float
    p90: float
    largest: float
    samples: int


@dataclass(frozen=True)
class Row:
    keys: int
    native: Figures
    panes: Figures
    identical: bool

    @property
    def extra_ms(self) -> float:
        return self.panes.p50 - self.native.p50

    @property
    def ratio(self) -> float:
        return self.panes.p50 / self.native.p50


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank; ``values`` not empty)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def figures(progress: list[Any]) -> Figures:
    """The data micro-batches after the first (those that read rows) of one run's progress."""
    seconds, rows = batch_seconds(progress), input_rows(progress)
    data = [1000 * s for s, r in zip(seconds, rows, strict=True) if r > 1][1:]
    if not data:
        raise SystemExit("no data micro-batch after the first: give more --batches")
    return Figures(quantile(data, 0.5), quantile(data, 0.9), max(data), len(data))


def native_progress(spark: Any, case: Case, folder: str, run: str) -> list[Any]:
    query = native_query(spark, case, folder, f"{run}/native-out", f"{run}/native-ck")
    query.awaitTermination()
    return list(query.recentProgress)


def panes_progress(spark: Any, case: Case, folder: str, run: str) -> list[Any]:
    env = panes_job(spark, case, folder, f"{run}/panes-out", f"{run}/panes-ck", None)
    return list(env.execute("latency").details.get("progress", []))


def measure(spark: Any, keys: int, events: int, batches: int, work: str) -> Row:
    case = Case("tumbling", keys)
    folder = f"{work}/events-{keys}"
    write_events(folder, events, keys, batches)
    counted: dict[str, list[Any]] = {}
    for attempt in ("warm", "counted"):
        run = f"{work}/{attempt}-{keys}"
        counted["native"] = native_progress(spark, case, folder, run)
        counted["panes"] = panes_progress(spark, case, folder, run)
        identical, _ = same_results(spark, f"{run}/native-out", f"{run}/panes-out")
        if not identical:
            raise SystemExit(f"{keys:,} keys: panes' windows differ from native's; no figure counts")
    return Row(keys, figures(counted["native"]), figures(counted["panes"]), identical)


def line(row: Row) -> str:
    n, p = row.native, row.panes
    return (
        f"| {row.keys:,} | {n.p50:.0f} / {n.p90:.0f} / {n.largest:.0f} | {p.p50:.0f} / {p.p90:.0f} / {p.largest:.0f} "
        f"| {row.extra_ms:+.0f} | {row.ratio:.2f}x | {p.samples} |"
    )


def table(rows: list[Row], command: str, events: int, batches: int) -> str:
    return "\n".join(
        [
            f"`{command}` on {datetime.date.today().isoformat()}, {os.cpu_count()} cores, Spark `local[2]`: "
            f"tumbling 10 s count+sum, {events:,} events in {batches} micro-batches of Parquet (one file each), the "
            "second of two runs of each side in one session. Milliseconds of a warm data micro-batch "
            "(`triggerExecution`), the first one left out; ratio = panes' median / native's (target: at most 1.2x).",
            "",
            "| keys | native p50 / p90 / largest ms | panes p50 / p90 / largest ms | panes' extra at p50 ms | ratio | "
            "samples |",
            "|---|---|---|---|---|---|",
            *(line(row) for row in rows),
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, nargs="+", default=[100, 100_000])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--json", default=None, help="write the figures here and the section of bench/RESULTS.md")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    from panes.spark import create_session

    spark = create_session(app_name="panes-latency")
    work = tempfile.mkdtemp(prefix="panes-latency-")
    rows: list[Row] = []
    try:
        for keys in args.keys:
            rows.append(measure(spark, keys, args.events, args.batches, work))
            print(line(rows[-1]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()
    command = " ".join([".venv/bin/python", "bench/latency.py", *sys.argv[1:]])
    print(table(rows, command, args.events, args.batches))
    if args.json is not None:
        document = {
            "command": " ".join(["bench/latency.py", *sys.argv[1:]]),
            "date": datetime.date.today().isoformat(),
            "events": args.events,
            "batches": args.batches,
            "rows": [{**asdict(row), "extra_ms": row.extra_ms, "ratio": row.ratio} for row in rows],
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(document, indent=1) + "\n")
        write_section(HERE / "RESULTS.md", BEGIN, END, table(rows, command, args.events, args.batches), "Latency")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
