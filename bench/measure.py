"""What the benchmark measures besides wall time: per-batch durations from Spark's progress, and the peak
memory of the JVM and of the Python workers (sampled from ``/proc``)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:  # the process ended while we looked
        return found
    for task in tasks:
        path = f"/proc/{pid}/task/{task}/children"
        try:
            with open(path) as handle:
                found.extend(int(c) for c in handle.read().split())
        except OSError:
            continue
    return found


def descendants(pid: int) -> list[int]:
    """The processes below ``pid``: its children, theirs, and so on."""
    result, todo = [], [pid]
    while todo:
        current = todo.pop()
        for child in _children(current):
            result.append(child)
            todo.append(child)
    return result


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return 0
    return 0


def _stat_cpu_seconds(stat: str) -> float:
    """User plus system CPU seconds in the text of a ``/proc/.../stat`` file (fields after the name in
    parentheses: the 12th and 13th)."""
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds process ``pid`` used so far, its ended threads included (0 when it ended)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return _stat_cpu_seconds(handle.read())
    except OSError:
        return 0.0


def thread_cpu_seconds(pid: int) -> list[tuple[str, float]]:
    """``(name, CPU seconds)`` of each live thread of process ``pid`` (Linux cuts the names at 15 characters);
    threads that ended are not there, their CPU is in :func:`cpu_seconds`."""
    threads = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as handle:
                stat = handle.read()
        except OSError:  # the thread ended while we looked
            continue
        threads.append((stat[stat.index("(") + 1 : stat.rindex(")")], _stat_cpu_seconds(stat)))
    return threads


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def keepers(daemons: set[int]) -> list[int]:
    """The shard keepers (``panes.spark.keeper``, detached from their parents) serving the Python daemons
    ``daemons``: their command line names the daemon's pid."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            words = command_line(int(entry)).split()
            if "panes.spark.keeper" in words:
                at = words.index("panes.spark.keeper")
                if len(words) > at + 1 and words[at + 1].isdigit() and int(words[at + 1]) in daemons:
                    found.append(int(entry))
    return found


@dataclass
class MemorySampler:
    """Samples every ``interval`` seconds: the largest resident size of the JVM and of one Python process
    holding shards (a Python worker, or a shard keeper), and the largest total over all of them at one moment."""

    interval: float = 0.25
    jvm_peak: int = 0
    worker_peak: int = 0
    workers_total_peak: int = 0
    cpu: dict[int, tuple[str, float]] = field(default_factory=dict)
    """The CPU seconds each process used while sampled (its kind, ``jvm``/``python``; processes that ended keep
    their last reading)."""
    _baseline: dict[int, float] = field(default_factory=dict)
    _first: bool = True
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def reset(self) -> None:
        self.jvm_peak = self.worker_peak = self.workers_total_peak = 0
        self.cpu, self._baseline, self._first = {}, {}, True

    def cpu_seconds(self, kind: str) -> float:
        """CPU seconds used by the processes of ``kind`` (``jvm``, ``python``) since the first sample."""
        return sum(seconds for k, seconds in self.cpu.values() if k == kind)

    def _sample(self) -> None:
        total = 0
        below = descendants(os.getpid())
        for pid in below + keepers(set(below)):
            command = command_line(pid)
            rss = _rss(pid)
            if "java" in command.split(" ")[0]:
                self.jvm_peak = max(self.jvm_peak, rss)
                self._count_cpu(pid, "jvm")
            elif ("pyspark" in command or "panes.spark.keeper" in command) and "python" in command:
                self.worker_peak = max(self.worker_peak, rss)
                total += rss
                self._count_cpu(pid, "python")
        self.workers_total_peak = max(self.workers_total_peak, total)
        self._first = False

    def _count_cpu(self, pid: int, kind: str) -> None:
        """Processes seen in the first sample count from then on, later ones from their start."""
        used = cpu_seconds(pid)
        first = self._baseline.setdefault(pid, used if self._first else 0.0)
        self.cpu[pid] = (kind, used - first)

    def _loop(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(OSError):  # a process ended while we read it: the next sample goes on
                self._sample()
            time.sleep(self.interval)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def write_section(
    path: Path, begin: str, end: str, body: str, heading: str | None = None, at_top: bool = False
) -> None:
    """Put ``body`` between the markers ``begin`` and ``end`` of the Markdown file ``path``, keeping what is
    around them. Without the markers, the block is added (after a ``## heading`` line when given) at the end of
    the file, or right after its title line with ``at_top``. A missing file starts as ``# Benchmark results``."""
    block = f"{begin}\n{body}\n{end}"
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    if begin in text and end in text:
        text = text[: text.index(begin)] + block + text[text.index(end) + len(end) :]
    else:
        section = (f"## {heading}\n\n" if heading else "") + block + "\n"
        if at_top:
            title, _, rest = text.partition("\n")
            text = f"{title}\n\n{section}{rest}"
        else:
            text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text, encoding="utf-8")


def batch_seconds(progress: list[Any]) -> list[float]:
    """Each micro-batch's duration (``triggerExecution``), in batch order."""
    ordered = sorted(progress, key=lambda p: p["batchId"])
    return [p["durationMs"].get("triggerExecution", 0) / 1000 for p in ordered]


def input_rows(progress: list[Any]) -> list[int]:
    ordered = sorted(progress, key=lambda p: p["batchId"])
    return [int(p["numInputRows"]) for p in ordered]
