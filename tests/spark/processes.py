"""The Python processes of a local-mode Spark application, read from ``/proc`` (Linux): which hold a query's
operators, for the tests that measure them (the soak) or take them away (the crash points, the keepers)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from panes.spark.settings import COMMON_CONFIG


def process_table() -> dict[int, tuple[int, list[str]]]:
    """Every process of this machine: pid -> (parent pid, command line words); a process gone meanwhile is left
    out."""
    found: dict[int, tuple[int, list[str]]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                words = [w for w in cmdline.read().decode(errors="replace").split("\0") if w]
        except (OSError, IndexError, ValueError):
            continue
        found[int(entry)] = (parent, words)
    return found


def keeper_parent(words: list[str]) -> int | None:
    """The daemon a shard keeper serves (``python -m panes.spark.keeper PARENT SLOT``), ``None`` for another
    process."""
    if "panes.spark.keeper" not in words:
        return None
    parent = words[words.index("panes.spark.keeper") + 1 :][:1]
    return int(parent[0]) if parent and parent[0].isdigit() else None


@dataclass(frozen=True)
class ExecutorPython:
    """The executor-side Python processes of a local-mode application (:func:`executor_python`)."""

    daemons: tuple[int, ...]
    """Spark's Python daemons (one per kind of Python runner the executor started)."""
    workers: tuple[int, ...]
    """The Python workers the daemons forked (and whatever those started below them)."""
    keepers: tuple[int, ...]
    """The shard keepers serving those workers (detached processes, named by their daemon's pid)."""
    runs_operators: frozenset[int]
    """Of the daemons and workers, those of ``pyspark.worker``, which run the query's Python functions (not those
    of data sources and planning)."""

    def all(self) -> tuple[int, ...]:
        return (*self.daemons, *self.workers, *self.keepers)


DAEMON_MODULES = ("pyspark.daemon", COMMON_CONFIG["spark.python.daemon.module"])
"""What Spark's Python daemons run: PySpark's own, and the one panes' sessions start (it runs PySpark's)."""


def executor_python(root: int) -> ExecutorPython:
    """The executor-side Python processes of the Spark application under process ``root`` (in local mode): every
    daemon below it (:data:`DAEMON_MODULES`), the workers each forked (which keep its command line), and the
    shard keepers serving them."""
    processes = process_table()
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in processes.items():
        children.setdefault(parent, []).append(pid)

    def below(pid: int) -> list[int]:
        return [d for c in children.get(pid, []) for d in (c, *below(c))]

    def runs_a_daemon(words: list[str]) -> bool:
        return any(module in words for module in DAEMON_MODULES)

    def is_daemon(pid: int) -> bool:
        parent = processes.get(processes[pid][0], (0, []))
        return runs_a_daemon(processes[pid][1]) and not runs_a_daemon(parent[1])

    daemons = [pid for pid in below(root) if is_daemon(pid)]
    workers = sorted({pid for daemon in daemons for pid in below(daemon)})
    keepers = sorted(pid for pid, (_, words) in processes.items() if keeper_parent(words) in daemons)
    runs_operators = frozenset(
        pid for pid in (*daemons, *workers) if pid in processes and processes[pid][1][-1:] == ["pyspark.worker"]
    )
    return ExecutorPython(tuple(daemons), tuple(workers), tuple(keepers), runs_operators)
