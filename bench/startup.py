"""Start-up on Spark as a new user meets it: the README's pipeline and the demo, each in a fresh process.

    .venv/bin/python bench/startup.py                 # 3 runs of each, written to bench/RESULTS.md
    .venv/bin/python bench/startup.py --runs 5 --no-write

The README pipeline is the code block under "## A pipeline" in README.md, run as it is with ``python -c`` in a
new interpreter (its JVM started by the run), timed from outside: wall seconds of the whole process. Each run
also reports where its time went (a prelude wraps the session's creation and listens to the query): seconds
until the SparkSession is up, until the streaming query started, until the first micro-batch ended, and that
micro-batch's own seconds with Spark's split of them (``queryPlanning``, ``addBatch``). ``--compare-warm`` adds
runs with panes' worker warm-up turned off (``panes.spark.session.warm_python_workers``), alternating with the
others. The demo (``panes demo``) reports its first micro-batch's seconds and its whole run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from measure import write_section  # noqa: E402

ROOT = HERE.parent
RESULTS = HERE / "RESULTS.md"
BEGIN, END = "<!-- startup.py writes from here -->", "<!-- startup.py to here -->"

PRELUDE = """
import json as _json, sys as _sys, time as _time
_T0 = _time.monotonic()
_MARKS = {}
import panes.spark.runner as _runner
if {no_warm}:
    _runner.warm_python_workers = lambda spark: None
_create = _runner.create_session
def _timed_create(*args, **kwargs):
    session = _create(*args, **kwargs)
    _MARKS.setdefault("session", _time.monotonic() - _T0)
    from pyspark.sql.streaming import StreamingQueryListener
    class _Listener(StreamingQueryListener):
        def onQueryStarted(self, event):
            _MARKS.setdefault("query started", _time.monotonic() - _T0)
        def onQueryProgress(self, event):
            if event.progress.batchId == 0:
                _MARKS["first batch ended"] = _time.monotonic() - _T0
                _MARKS["first batch"] = dict(event.progress.durationMs)
        def onQueryIdle(self, event):
            pass
        def onQueryTerminated(self, event):
            pass
    session.streams.addListener(_Listener())
    return session
_runner.create_session = _timed_create
import atexit as _atexit
_atexit.register(lambda: print("STARTUP " + _json.dumps(_MARKS), file=_sys.stderr, flush=True))
"""


def readme_pipeline() -> str:
    """The Python block under the README's "## A pipeline" heading."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## A pipeline", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    if found is None:
        raise SystemExit("README.md has no python block under '## A pipeline'")
    return found.group(1)


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    env["PANES_LOG_DIR"] = tempfile.mkdtemp(prefix="panes-startup-logs-")
    return env


def run_readme(no_warm: bool) -> dict[str, Any]:
    code = PRELUDE.replace("{no_warm}", str(no_warm)) + readme_pipeline()
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environment(), capture_output=True, text=True, check=False
    )
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"the README pipeline failed:\n{done.stderr[-3000:]}")
    marks: dict[str, Any] = next(
        (json.loads(line[len("STARTUP ") :]) for line in done.stderr.splitlines() if line.startswith("STARTUP ")), {}
    )
    return {"wall": wall, **marks}


def run_demo() -> dict[str, float]:
    out = tempfile.mkdtemp(prefix="panes-startup-demo-")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "panes.cli.main", "demo", "--output", out],
        cwd=ROOT,
        env=environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"the demo failed:\n{done.stderr[-3000:]}{done.stdout[-3000:]}")
    first = re.search(r"batch 0: .*\(([\d.]+) s\)", done.stdout + done.stderr)
    return {"wall": wall, "first batch": float(first.group(1)) if first else float("nan")}


def spread(values: list[float]) -> str:
    """The median, with the smallest and largest in brackets."""
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def readme_rows(runs: list[dict[str, Any]], label: str) -> list[str]:
    def column(name: str) -> list[float]:
        return [float(run[name]) for run in runs if name in run]

    def first(part: str) -> list[float]:
        return [run["first batch"].get(part, 0) / 1000 for run in runs if "first batch" in run]

    return [
        f"| README pipeline{label} | {spread(column('wall'))} | {spread(column('session'))} | "
        f"{spread(column('query started'))} | {spread(column('first batch ended'))} | "
        f"{spread(first('triggerExecution'))} | {spread(first('queryPlanning'))} | {spread(first('addBatch'))} |"
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs of each command (default 3)")
    parser.add_argument("--compare-warm", action="store_true", help="also run with the worker warm-up off")
    parser.add_argument("--no-write", action="store_true", help="print only; leave bench/RESULTS.md as it is")
    parser.add_argument("--json", default=None, help="also write the medians to this JSON file (bench/targets.py)")
    args = parser.parse_args()
    warm: list[dict[str, Any]] = []
    cold: list[dict[str, Any]] = []
    for index in range(args.runs):
        warm.append(run_readme(no_warm=False))
        print(f"README pipeline run {index + 1}: {warm[-1]}", flush=True)
        if args.compare_warm:
            cold.append(run_readme(no_warm=True))
            print(f"README pipeline run {index + 1}, warm-up off: {cold[-1]}", flush=True)
    demos = []
    for index in range(args.runs):
        demos.append(run_demo())
        print(f"demo run {index + 1}: {demos[-1]}", flush=True)
    lines = [
        f"`.venv/bin/python bench/startup.py{' --compare-warm' if args.compare_warm else ''}` on "
        f"{datetime.date.today().isoformat()}: {platform.machine()}, {os.cpu_count()} cores; {args.runs} runs of "
        "each, each in a fresh process (its own JVM); seconds as the median (smallest-largest). Columns after the "
        "wall time are seconds since the process started, then the first micro-batch's own seconds "
        "(`triggerExecution`) and Spark's split of them.",
        "",
        "| what | wall s | session up | query started | first batch ended | first batch s | of it planning "
        "| of it addBatch |",
        "|---|---|---|---|---|---|---|---|",
        *readme_rows(warm, ""),
        *(readme_rows(cold, ", worker warm-up off") if cold else []),
        f"| demo (`panes demo`, 9,000 clicks in 12 micro-batches) | {spread([d['wall'] for d in demos])} | | | | "
        f"{spread([d['first batch'] for d in demos])} | | |",
    ]
    table = "\n".join(lines)
    print(table)
    if args.json is not None:
        document = {
            "command": " ".join(["bench/startup.py", *sys.argv[1:]]),
            "date": datetime.date.today().isoformat(),
            "readme_wall_s": statistics.median(run["wall"] for run in warm),
            "readme_first_batch_s": statistics.median(run["first batch"]["triggerExecution"] / 1000 for run in warm),
            "demo_wall_s": statistics.median(d["wall"] for d in demos),
            "demo_first_batch_s": statistics.median(d["first batch"] for d in demos),
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(document, indent=1) + "\n")
    if not args.no_write:
        write_section(RESULTS, BEGIN, END, table, heading="Start-up")


if __name__ == "__main__":
    main()
