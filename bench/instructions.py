"""Instructions a shard's work takes (``bench/shard_host.py`` under ``valgrind --tool=cachegrind``), optionally
against another commit: a measure a noisy machine does not disturb.

    .venv/bin/python bench/instructions.py                            # reduce, aggregate, python at this tree
    .venv/bin/python bench/instructions.py --base 9ec5652 --functions reduce
    .venv/bin/python bench/instructions.py --events 300000 --functions python
    .venv/bin/python bench/instructions.py --functions count_sum --window session --keys 100000 --base HEAD~1

Wall and CPU times on a shared 2-core machine move by 30% between runs of the same code; counted instructions
move by less than 0.3% once Python's string hashing is fixed (``PYTHONHASHSEED=0``: with random hashing the
same run varies by up to 7%). Each function runs twice, with ``--events`` events and with ``--fixed`` events,
and the difference is what the events cost: start-up and imports are taken out (about 2.3 billion
instructions with compiled modules; a fresh worktree compiles panes as it imports it when Python writes no
bytecode, about a billion more, which is why comparing whole runs of two trees misleads).
``--base`` runs the same at another commit (a temporary ``git worktree``, its ``src`` first on the path; the
measuring script is this tree's ``shard_host.py`` for both), and the table gives the change. Needs
``valgrind``; about 90 s per 100,000 events and run.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FUNCTIONS = ["reduce", "aggregate", "python"]


def instructions(tree: Path, function: str, events: int, options: list[str]) -> int:
    """Instructions of ``shard_host.py --functions function --events events`` (and ``options``) run with
    ``tree``'s code."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(tree / "src")}
    command = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        str(HERE / "shard_host.py"),
        "--functions",
        function,
        "--events",
        str(events),
        *options,
    ]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def event_cost(tree: Path, function: str, events: int, fixed: int, options: list[str]) -> int:
    return instructions(tree, function, events, options) - instructions(tree, function, fixed, options)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--functions", nargs="+", default=FUNCTIONS, choices=[*FUNCTIONS, "count_sum"])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--fixed", type=int, default=1_000, help="events of the run taken out (start-up)")
    parser.add_argument("--base", default=None, help="a commit to compare with")
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--window", choices=["tumbling", "session"], default="tumbling")
    args = parser.parse_args()
    options = ["--keys", str(args.keys), "--window", args.window]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # remove the worktree when stopped
    with tempfile.TemporaryDirectory(prefix="panes-instructions-") as scratch:
        base = None
        if args.base is not None:
            base = Path(scratch) / "base"
            subprocess.run(["git", "worktree", "add", "--detach", str(base), args.base], cwd=ROOT, check=True)
        try:
            print(
                f"instructions per event, {args.events:,} events less {args.fixed:,}, bench/shard_host.py "
                f"({args.window} windows, {args.keys:,} keys)"
            )
            for function in args.functions:
                now = event_cost(ROOT, function, args.events, args.fixed, options) / (args.events - args.fixed)
                line = f"{function:10s} {now:10,.0f}"
                if base is not None:
                    before = event_cost(base, function, args.events, args.fixed, options) / (args.events - args.fixed)
                    line += f"   {args.base}: {before:10,.0f}   change {100 * (now / before - 1):+.1f}%"
                print(line, flush=True)
        finally:
            if base is not None:
                subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
