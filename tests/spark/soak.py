"""A long-running session-window job and what the soak test measures of it while it runs: the open state the
keyed steps report in each micro-batch's progress (``panes.spark.metrics``) and the resident memory of the
PySpark worker processes (``/proc``)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from panes.datastream import StreamEnvironment
from panes.watermarks import WatermarkStrategy
from panes.windowing import EventTimeSessionWindows, ProcessWindowFunction
from tests.spark.processes import executor_python

KEYS = 300
ROWS_PER_BATCH = 240
STEP_MS = 250
"""Event time moves on by this much per micro-batch; sessions close after a 600 ms gap."""


def soak_batches(batches: int) -> list[list[dict[str, Any]]]:
    """``batches`` micro-batches of :data:`ROWS_PER_BATCH` rows over :data:`KEYS` keys, event time advancing by
    :data:`STEP_MS` per batch: each key comes back every 1.25 batches on average, so its sessions grow over a
    few batches, then a key leaves for a while and its session closes."""
    result = []
    for b in range(batches):
        rows = []
        for i in range(ROWS_PER_BATCH):
            key = (b * 97 + i * 7) % KEYS if (b // 8) % 2 == 0 else (b * 89 + i * 11) % (KEYS // 2)
            rows.append({"key": f"k{key}", "ts": b * STEP_MS + (i * 13) % STEP_MS})
        result.append(rows)
    return result


class SessionSize(ProcessWindowFunction[Any, Any, Any, Any]):
    def process(self, key: Any, context: Any, elements: Any) -> Iterator[tuple[Any, ...]]:
        window = context.window()
        yield (key, window.start, window.end, sum(1 for _ in elements))


def build(env: StreamEnvironment, batches: int, output: str, through: int | None = None) -> None:
    """The soak job over ``batches`` micro-batches into Parquet files in ``output``; with ``through``, only the
    first ``through`` of them, without the end of input (a restart from its checkpoint with the whole list
    goes on with the rest)."""
    lists = soak_batches(batches)
    sessions = (
        env.from_micro_batches(lists[:through], end_of_input=through is None)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(100).with_timestamp_assigner("ts")
        )
        .key_by("key")
        .window(EventTimeSessionWindows.with_gap(600))
        .process(SessionSize(), output_type="key STRING, start BIGINT, end BIGINT, n BIGINT")
    )
    sessions.sink_to_files(output, schema="key STRING, start BIGINT, end BIGINT, n BIGINT")


# -- measurements ----------------------------------------------------------------------------------------------

_GAUGE = re.compile(r"^(?:m\d+_)?(open_panes|state_bytes)$")


def gauge_changes(progress: Any) -> dict[str, int]:
    """The changes of the keyed steps' gauges (``open_panes``, ``state_bytes``) one micro-batch's progress reports,
    summed over the steps (a step's observed metrics are named ``panes-...``)."""
    changes = {"open_panes": 0, "state_bytes": 0}
    for name, row in (progress.get("observedMetrics") or {}).items():
        if not name.startswith("panes-") or row is None:
            continue
        values = row.asDict() if hasattr(row, "asDict") else dict(row)
        for column, value in values.items():
            match = _GAUGE.match(column)
            if match:
                changes[match.group(1)] += int(value or 0)
    return changes


def worker_rss(root: int | None = None) -> dict[int, int]:
    """Resident bytes of each Python process that holds a query's operators, by pid: the PySpark Python workers
    (``python -m panes.spark.worker_daemon pyspark.worker`` and the workers it forks, which run the query's Python
    functions) descending from process ``root`` (default: this one), and the shard keepers serving them
    (``python -m panes.spark.keeper DAEMON SLOT``, detached from their parents)."""
    found = executor_python(os.getpid() if root is None else root)
    result = {}
    for pid in (*found.keepers, *sorted(found.runs_operators)):
        try:
            with open(f"/proc/{pid}/status") as handle:
                result[pid] = next(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            continue
    return result


@dataclass
class Measurements:
    """Per micro-batch: the open panes and stored state bytes after it; every ``every`` batches: the workers'
    memory (total and largest process)."""

    every: int
    open_panes: list[int] = field(default_factory=list)
    state_bytes: list[int] = field(default_factory=list)
    memory: list[tuple[int, int, int, int]] = field(default_factory=list)
    """(batch, worker processes, total RSS, largest RSS)."""
    _seen: set[int] = field(default_factory=set)

    def add(self, progress: list[Any]) -> None:
        """Add the batches of ``progress`` not seen yet (in batch order); sample memory when one is due."""
        for entry in sorted(progress, key=lambda p: p["batchId"]):
            batch = entry["batchId"]
            if batch in self._seen:
                continue
            self._seen.add(batch)
            changes = gauge_changes(entry)
            self.open_panes.append((self.open_panes[-1] if self.open_panes else 0) + changes["open_panes"])
            self.state_bytes.append((self.state_bytes[-1] if self.state_bytes else 0) + changes["state_bytes"])
            if batch % self.every == 0:
                sizes = worker_rss()
                self.memory.append((batch, len(sizes), sum(sizes.values()), max(sizes.values(), default=0)))

    def table(self) -> str:
        lines = ["batch  open_panes  state_bytes"]
        lines += [
            f"{b:5d}  {p:10d}  {s:11d}" for b, (p, s) in enumerate(zip(self.open_panes, self.state_bytes, strict=True))
        ]
        lines.append("batch  workers  total_rss_MiB  largest_rss_MiB")
        lines += [f"{b:5d}  {n:7d}  {t / 2**20:13.1f}  {m / 2**20:15.1f}" for b, n, t, m in self.memory]
        return "\n".join(lines)
