"""The local runner's speed on the suite's local workload (``workload.local_job``), without Spark.

Tumbling 10 s windows over 10,000 keys from a collection (the events of ``workload.write_events``, read into
Python beforehand), bounded out-of-orderness 5 s timestamps on ``ts``, ``key_by("key")``, the built-in count+sum
(``count_sum``) or a Python ``ProcessWindowFunction`` (``python``), written as Parquet: the figures of
``bench/suite.py``'s ``run_local``. Each function runs ``--repeat`` times; the best and all rates are printed.

``--base COMMIT`` also measures the code of another commit (a temporary git worktree, the same events) in a
fresh process, alternating with this code run by run, so both see the same machine. ``--json FILE`` also writes
the best rates (``bench/targets.py`` reads ``bench/measured/local_runner.json`` for issue 45's targets).
``--clock cpu`` times each run by the CPU time of its process instead of the wall clock: on a machine that other
jobs load (its wall time then counts the waits for a core), the rates of both codes stay comparable.

    .venv/bin/python bench/local_runner.py                       # 200,000 events, 3 runs each
    .venv/bin/python bench/local_runner.py --base 2e08c16        # against the code before the runs
    .venv/bin/python bench/local_runner.py --base 550eedc --clock cpu --repeat 5
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FUNCTIONS = {"count_sum": "count+sum", "python": "Python ProcessWindowFunction"}


def measure(folder: str, function: str, clock: str = "wall") -> float:
    """Events per second of one run of the local job over the events in ``folder``, timed by the wall clock
    (``clock="wall"``) or by the process's CPU time (``"cpu"``)."""
    from workload import local_job

    now = time.monotonic if clock == "wall" else time.process_time
    env, count = local_job(folder, tempfile.mkdtemp(prefix="panes-local-out-") + "/out", function)
    started = now()
    env.execute("local runner bench")
    return count / (now() - started)


def measure_in(root: Path, folder: str, function: str, clock: str = "wall") -> float:
    """:func:`measure` (this file's, with this ``bench/workload.py``'s job) with panes of the checkout at
    ``root``, in a fresh process."""
    code = (
        "import sys, json; sys.path[:0] = [sys.argv[1]]; from local_runner import measure; "
        "print(json.dumps(measure(sys.argv[2], sys.argv[3], sys.argv[4])))"
    )
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(HERE)])}
    done = subprocess.run(
        [sys.executable, "-c", code, str(HERE), folder, function, clock],
        check=True,
        capture_output=True,
        text=True,
        env=environment,
    )
    return float(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--base", default=None, help="also measure this commit's code (a git worktree)")
    parser.add_argument("--json", default=None, help="also write the best rates to this JSON file")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="time runs by wall or CPU time")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from workload import write_events

    work = tempfile.mkdtemp(prefix="panes-local-bench-")
    folder = f"{work}/events"
    write_events(folder, args.events, 10_000, 1)
    base_root: Path | None = None
    if args.base is not None:
        base_root = Path(work) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base_root), args.base], check=True, cwd=HERE.parent)
    best: dict[str, dict[str, float]] = {"this": {}, "base": {}}
    try:
        for function, label in FUNCTIONS.items():
            rates: dict[str, list[float]] = {"this code": [], f"base {args.base}": []}
            for _ in range(args.repeat):
                rates["this code"].append(measure_in(HERE.parent, folder, function, args.clock))
                if base_root is not None:
                    rates[f"base {args.base}"].append(measure_in(base_root, folder, function, args.clock))
            for (name, found), which in zip(rates.items(), ("this", "base"), strict=True):
                if found:
                    best[which][function] = max(found)
                    runs = ", ".join(f"{rate:,.0f}" for rate in found)
                    print(
                        f"local runner, tumbling 10 s, {label}, 10,000 keys, {args.events:,} events, {name}: "
                        f"best {max(found):,.0f} events/{'s' if args.clock == 'wall' else 'CPU s'} (runs: {runs})",
                        flush=True,
                    )
    finally:
        if base_root is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(base_root)], check=False, cwd=HERE.parent)
    if args.json is not None:
        document = {
            "command": " ".join(["bench/local_runner.py", *sys.argv[1:]]),
            "date": datetime.date.today().isoformat(),
            "events": args.events,
            "clock": args.clock,
            "local_events_per_s": best["this"],
            "base": args.base,
            "base_events_per_s": best["base"] or None,
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(document, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
