"""Profile panes' Python side with py-spy and write a text summary (what the benchmark's profiles are).

    .venv/bin/python bench/pyspy_profile.py --name pwf -- --cases "Python" --events 500000
    .venv/bin/python bench/pyspy_profile.py --name before --raw /tmp/before.txt   # summarise an existing raw profile

The first form runs ``bench/suite.py`` (arguments after ``--``, results to a scratch file) under ``py-spy record
--subprocesses`` at 50 samples per second per process, then summarises the samples taken in Spark's Python
workers and in the shard keepers (which detach, so each is recorded by a py-spy of its own from when it
starts): the time under panes' own functions as a tree (callers above callees, lines below 2% left out) and
the functions where the samples were taken (self time). Samples are counts at 50 per second of one process.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def worker_stacks(raw: str) -> list[tuple[list[str], int]]:
    """The stacks of py-spy's raw output taken in Python workers running panes code, frames outermost first."""
    stacks = []
    for line in Path(raw).read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = [frame for frame in stack.split(";") if not frame.startswith("process ")]
        if any("panes/" in frame for frame in frames) and not any("bench/" in frame for frame in frames):
            stacks.append((frames, int(count)))
    return stacks


def panes_tree(stacks: list[tuple[list[str], int]], depth: int, share: float) -> list[str]:
    """Inclusive samples of panes' frames as an indented tree from the outermost panes frame."""
    tree: collections.Counter[tuple[str, ...]] = collections.Counter()
    total = 0
    for frames, count in stacks:
        own = [frame for frame in frames if "panes/" in frame][:depth]
        total += count
        for level in range(1, len(own) + 1):
            tree[tuple(own[:level])] += count
    lines = [f"{total:6d}  all samples in workers under panes code"]
    for path, count in sorted(tree.items()):
        if count >= share * total:
            lines.append(f"{count:6d}  {'  ' * (len(path) - 1)}{path[-1]}")
    return lines


def self_time(stacks: list[tuple[list[str], int]], top: int) -> list[str]:
    counter: collections.Counter[str] = collections.Counter()
    for frames, count in stacks:
        counter[frames[-1]] += count
    return [f"{count:6d}  {frame}" for frame, count in counter.most_common(top)]


def summary(raw: str, title: str) -> str:
    stacks = worker_stacks(raw)
    parts = [
        f"# {title}",
        "",
        "## panes' functions, inclusive samples",
        "",
        *panes_tree(stacks, 6, 0.02),
        "",
        "## where the samples were taken (self)",
        "",
        *self_time(stacks, 25),
        "",
    ]
    return "\n".join(parts)


def keeper_pids() -> set[int]:
    """The running shard keepers (``python -m panes.spark.keeper``) of this user."""
    pids = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                command = Path("/proc", entry, "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"panes.spark.keeper" in command and os.stat(f"/proc/{entry}").st_uid == os.getuid():
                pids.add(int(entry))
    return pids


def follow_keepers(suite: subprocess.Popen[bytes], py_spy: str, scratch: str) -> list[subprocess.Popen[bytes]]:
    """Record every shard keeper that starts while ``suite`` runs (each to ``keeper-<pid>.txt`` in ``scratch``).
    A keeper detaches (double fork), so ``py-spy --subprocesses`` does not follow it; its samples are where the
    keyed steps' operators run."""
    recorders: list[subprocess.Popen[bytes]] = []
    seen = keeper_pids()  # keepers of another session are not this profile's
    while suite.poll() is None:
        for pid in sorted(keeper_pids() - seen):
            seen.add(pid)
            output = os.path.join(scratch, f"keeper-{pid}.txt")
            recorders.append(
                subprocess.Popen(
                    [py_spy, "record", "--format", "raw", "--rate", "50", "-o", output, "--pid", str(pid)],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        time.sleep(0.2)
    return recorders


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--name", required=True, help="the profile's name: bench/profiles/<name>.txt")
    parser.add_argument("--raw", help="summarise this raw py-spy profile instead of running the suite")
    parser.add_argument("--title", default=None, help="first line of the summary (default: the command)")
    parser.add_argument("suite_args", nargs=argparse.REMAINDER, help="after --: the arguments of bench/suite.py")
    args = parser.parse_args()
    raw = args.raw
    suite_args = [a for a in args.suite_args if a != "--"]
    title = args.title or (f"profile of bench/suite.py {' '.join(suite_args)}" if raw is None else raw)
    if raw is None:
        scratch = tempfile.mkdtemp(prefix="panes-profile-")
        raw = os.path.join(scratch, "raw.txt")
        py_spy = str(Path(sys.executable).parent / "py-spy")
        command = [
            py_spy,
            "record",
            "--subprocesses",
            "--format",
            "raw",
            "--rate",
            "50",
            "-o",
            raw,
            "--",
            sys.executable,
            str(HERE / "suite.py"),
            *suite_args,
            "--output",
            os.path.join(scratch, "r.md"),
            "--local-events",
            "0",
        ]
        suite = subprocess.Popen(command, cwd=ROOT)
        keepers = follow_keepers(suite, py_spy, scratch)
        if suite.wait() != 0:
            raise SystemExit(f"the suite failed: {command}")
        for recorder in keepers:
            recorder.wait(timeout=60)
        with open(raw, "a") as out:
            for name in sorted(os.listdir(scratch)):
                if name.startswith("keeper-"):
                    out.write(Path(scratch, name).read_text())
    target = HERE / "profiles" / f"{args.name}.txt"
    target.parent.mkdir(exist_ok=True)
    target.write_text(summary(raw, title))
    print(f"written to {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
