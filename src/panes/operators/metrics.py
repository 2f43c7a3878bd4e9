"""What every operator counts, and what a job reports per step (Flink's ``numRecordsIn`` / ``numRecordsOut`` /
``numLateRecordsDropped`` operator metrics, plus what panes adds so that every input row is accounted for).

Each operator holds one :class:`OperatorCounters` (``AbstractStreamOperator.counters``, and the columnar
window operators' ``counters``): plain ints that the record paths increment and the vectorised paths add to
in bulk. A runner reads them, together with the operator's gauges (open panes, pending timers, state bytes),
as one :class:`OperatorMetrics` per step: a frozen dataclass, the sum over the step's parallel instances
(local runner) or shards (Spark).

Counters (totals since the job started; a job restored from a snapshot starts them again at 0, as Flink's
metrics do):

- ``records_in``: input records the step received (both inputs of a two-input step; records refused before
  processing, such as a null key, count here too, and then in ``error_out``);
- ``records_out``: records the step emitted on its main output;
- ``late_dropped``: late records a window step dropped because it has no late-data side output (Flink's
  ``numLateRecordsDropped``);
- ``late_out``: late records sent to the window step's late-data side output;
- ``error_out``: records sent to the step's error side output (``side_output_errors``);
- ``side_out``: records sent to the step's other side outputs (``ctx.output(tag, value)``);
- ``restores``: how often an instance of the step was rebuilt from stored state (local runner: restored from a
  snapshot; Spark: a shard's operator restored from Spark's state store because no live one of the committed
  version was at hand: after a restart, a replayed micro-batch, a move to another executor, or a shard keeper
  that was lost);
- ``restore_ms``: the milliseconds those rebuilds took.

Gauges (the state now):

- ``open_panes``: for a window step, the panes (key and window) that hold contents not yet purged; for
  another keyed step, its keyed state entries (key and namespace); 0 for stateless steps;
- ``timers``: pending event-time and processing-time timers;
- ``state_bytes``: bytes of the step's state (local runner: the size of its snapshot, measured when the
  metrics are read; Spark: the bytes the step keeps in Spark's state store).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

COUNTERS = ("records_in", "records_out", "late_dropped", "late_out", "error_out", "side_out", "restores", "restore_ms")
"""The counters of :class:`OperatorCounters`, in order."""
GAUGES = ("open_panes", "timers", "state_bytes")
"""The gauges of :class:`OperatorMetrics` (after the counters)."""


class OperatorCounters:
    """The counters of one operator instance (see the module docstring): plain int attributes, incremented by
    ``+= 1`` on record paths and ``+= n`` on vectorised ones."""

    __slots__ = COUNTERS

    def __init__(self) -> None:
        self.records_in = 0
        self.records_out = 0
        self.late_dropped = 0
        self.late_out = 0
        self.error_out = 0
        self.side_out = 0
        self.restores = 0
        self.restore_ms = 0

    def values(self) -> dict[str, int]:
        """The counters by name."""
        return {name: getattr(self, name) for name in COUNTERS}

    def take(self) -> dict[str, int]:
        """The counters by name, then reset them to 0 (a host that reports what each call did)."""
        values = self.values()
        for name in COUNTERS:
            setattr(self, name, 0)
        return values

    def add(self, values: dict[str, int]) -> None:
        """Add ``values`` (counter name -> amount; other names are ignored)."""
        for name in COUNTERS:
            amount = values.get(name)
            if amount:
                setattr(self, name, getattr(self, name) + amount)

    def __repr__(self) -> str:
        return f"OperatorCounters({', '.join(f'{k}={v}' for k, v in self.values().items())})"


@dataclass(frozen=True)
class OperatorMetrics:
    """What one step of a job did and holds, summed over its parallel instances or shards (module docstring).

    ``name`` is the step's name (the transformation's ``name``, as ``explain`` and error messages show it).
    """

    name: str
    records_in: int = 0
    records_out: int = 0
    late_dropped: int = 0
    late_out: int = 0
    error_out: int = 0
    side_out: int = 0
    restores: int = 0
    restore_ms: int = 0
    open_panes: int = 0
    timers: int = 0
    state_bytes: int = 0

    @classmethod
    def of(cls, name: str, values: dict[str, Any]) -> OperatorMetrics:
        """The metrics of ``name`` from a mapping of counter and gauge names (missing ones are 0)."""
        return cls(name, **{f: int(values.get(f) or 0) for f in COUNTERS + GAUGES})

    def __add__(self, other: OperatorMetrics) -> OperatorMetrics:
        """The sum of two instances' metrics of one step (counters and gauges alike)."""
        if not isinstance(other, OperatorMetrics):
            return NotImplemented
        return OperatorMetrics(self.name, **{f: getattr(self, f) + getattr(other, f) for f in COUNTERS + GAUGES})

    def as_dict(self) -> dict[str, int]:
        """Counters and gauges by name (without ``name``)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "name"}


def combine(metrics: list[OperatorMetrics]) -> dict[str, OperatorMetrics]:
    """``metrics`` summed per step name, in first-seen order."""
    by_name: dict[str, OperatorMetrics] = {}
    for entry in metrics:
        known = by_name.get(entry.name)
        by_name[entry.name] = entry if known is None else known + entry
    return by_name
