"""Counters of the steps on Spark, in each micro-batch's progress.

Each call of a keyed step's processor (one shard, one micro-batch) returns, next to its rows, what its
operator counted in that call (``panes.operators.metrics.COUNTERS``), the state bytes it wrote, and the
change of the shard's gauges since its previous call: open panes, pending timers and the bytes the shard
keeps in Spark's state store (:data:`FIELDS`). The query observes their sums right after the step (Spark's
``observe``: aggregated by Spark as the rows flow, no extra job, nothing collected on the driver), so each
micro-batch's progress carries them under ``observedMetrics["panes-<step>"]``; summing the changes over the
batches gives the current totals, whichever shards a batch called. Spark's own state metrics of the query
(``stateOperators``: ``numRowsTotal``, ``memoryUsedBytes``) count the shards' log entries, not what they hold:
read these instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from panes.operators.metrics import COUNTERS, GAUGES, OperatorMetrics

FIELDS = (*COUNTERS, *GAUGES, "state_bytes_written")
DDL = ", ".join(f"{name} BIGINT" for name in FIELDS)


@dataclass
class Gauges:
    """What a shard last reported of its state."""

    open_panes: int = 0
    timers: int = 0
    state_bytes: int = 0


def counters(done: dict[str, int], before: Gauges, now: Gauges, written: int) -> dict[str, int]:
    """One call's values of :data:`FIELDS`: ``done`` (what the operator counted in the call), the changes of
    the gauges and the bytes ``written``."""
    return {
        **{name: done.get(name, 0) for name in COUNTERS},
        "open_panes": now.open_panes - before.open_panes,
        "timers": now.timers - before.timers,
        "state_bytes": now.state_bytes - before.state_bytes,
        "state_bytes_written": written,
    }


def difference(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    """``after - before`` per counter."""
    return {name: after[name] - before[name] for name in COUNTERS}


def observation(index: int) -> str:
    return f"panes-{index}"


def observe(df: Any, index: int) -> Any:
    """``df`` (a keyed step's output) observing the sums of its counters as :func:`observation` ``(index)``."""
    from pyspark.sql import functions as F

    return df.observe(observation(index), *(F.coalesce(F.sum(name), F.lit(0)).alias(name) for name in FIELDS))


@dataclass
class JobMetrics:
    """Totals per keyed step (``steps``: index -> name), and per micro-batch, from a query's progress."""

    steps: dict[int, str]
    totals: dict[str, dict[str, int]] = field(default_factory=dict)
    peak_open_panes: int = 0
    peak_state_bytes_per_pane: float | None = None
    """Stored state bytes per open pane when the open panes were most (last such batch)."""
    batches: list[dict[str, dict[str, int]]] = field(default_factory=list)

    def add(self, progress: Any) -> None:
        observed = progress.get("observedMetrics") or {}
        batch: dict[str, dict[str, int]] = {}
        for index, name in self.steps.items():
            row = observed.get(observation(index))
            if row is None:
                continue
            values = row.asDict() if hasattr(row, "asDict") else dict(row)
            step = {f: int(values.get(f) or 0) for f in FIELDS}
            batch[name] = step
            total = self.totals.setdefault(name, dict.fromkeys(FIELDS, 0))
            for f in FIELDS:
                total[f] += step[f]
            if total["open_panes"] > 0 and total["open_panes"] >= self.peak_open_panes:
                self.peak_open_panes = total["open_panes"]
                self.peak_state_bytes_per_pane = total["state_bytes"] / total["open_panes"]
        self.batches.append(batch)

    def operators(self) -> dict[str, OperatorMetrics]:
        """The totals so far as one ``OperatorMetrics`` per step name."""
        return {name: OperatorMetrics.of(name, total) for name, total in self.totals.items()}

    def as_dict(self) -> dict[str, Any]:
        return {
            "steps": self.totals,
            "per_batch": self.batches,
            "peak_state_bytes_per_pane": self.peak_state_bytes_per_pane,
        }
