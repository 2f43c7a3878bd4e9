"""Counters of the keyed steps on Spark, in each micro-batch's progress.

Each call of a keyed step's processor (one shard, one micro-batch) returns, next to its rows, the records it
read and emitted, the late records it dropped, the state bytes it wrote, and the change of the shard's open
panes (state entries) and stored state bytes since its previous call (:data:`FIELDS`). The query observes
their sums right after the step (Spark's ``observe``: computed as the rows flow, no extra job), so each
micro-batch's progress carries them under ``observedMetrics["panes-<step>"]``; summing the changes over the
batches gives the current totals, whichever shards a batch called.

:class:`BatchProgress` is one micro-batch as panes reports it to people: its rows, duration, counters per keyed
step and the watermark after it in real (unshifted) epoch milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from panes.spark.codec import progress_watermark

FIELDS = ("records_in", "records_out", "late_dropped", "open_panes", "state_bytes", "state_bytes_written")
DDL = ", ".join(f"{name} BIGINT" for name in FIELDS)


@dataclass
class Gauges:
    """What a shard last reported of its state."""

    open_panes: int = 0
    state_bytes: int = 0


def counters(
    records_in: int, records_out: int, late_dropped: int, before: Gauges, now: Gauges, written: int
) -> dict[str, int]:
    """One call's values of :data:`FIELDS`."""
    return {
        "state_bytes_written": written,
        "records_in": records_in,
        "records_out": records_out,
        "late_dropped": late_dropped,
        "open_panes": now.open_panes - before.open_panes,
        "state_bytes": now.state_bytes - before.state_bytes,
    }


def observation(index: int) -> str:
    return f"panes-{index}"


def observe(df: Any, index: int) -> Any:
    """``df`` (a keyed step's output) observing the sums of its counters as :func:`observation` ``(index)``."""
    from pyspark.sql import functions as F

    return df.observe(observation(index), *(F.coalesce(F.sum(name), F.lit(0)).alias(name) for name in FIELDS))


@dataclass(frozen=True)
class BatchProgress:
    """One micro-batch: its id, input rows, duration, the counters of each keyed step (by step name) and the
    Flink watermark after it (epoch ms; ``LONG_MIN`` before any, ``LONG_MAX`` at the end of input)."""

    batch: int
    input_rows: int
    duration_ms: int
    watermark: int
    steps: dict[str, dict[str, int]]


def _field(progress: Any, name: str) -> Any:
    return progress.get(name) if hasattr(progress, "get") else getattr(progress, name, None)


@dataclass
class JobMetrics:
    """Totals per keyed step (``steps``: index -> name), and per micro-batch, from a query's progress."""

    steps: dict[int, str]
    totals: dict[str, dict[str, int]] = field(default_factory=dict)
    peak_open_panes: int = 0
    peak_state_bytes_per_pane: float | None = None
    """Stored state bytes per open pane when the open panes were most (last such batch)."""
    batches: list[dict[str, dict[str, int]]] = field(default_factory=list)

    def add(self, progress: Any) -> BatchProgress:
        """Count one micro-batch's progress entry (Spark's); returns it as a :class:`BatchProgress`."""
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
        durations = _field(progress, "durationMs") or {}
        return BatchProgress(
            batch=int(_field(progress, "batchId") or 0),
            input_rows=int(_field(progress, "numInputRows") or 0),
            duration_ms=int(durations.get("triggerExecution") or 0),
            watermark=progress_watermark(progress),
            steps=batch,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "steps": self.totals,
            "per_batch": self.batches,
            "peak_state_bytes_per_pane": self.peak_state_bytes_per_pane,
        }
