"""A keyed step's shard host: what runs one shard of the step for one micro-batch, on Arrow batches in and out.

:func:`shard_host` picks it from the window chooser's verdict (``panes.windowing.implementation``): a window that
runs on columns gets a ``columnar_host.ColumnarHost``, which never makes a Python object per element; every other
step a ``record_host.RecordHost``, which hands the elements to the step's operator one by one
(``element_host.StepHost``). Both take the rows of a micro-batch in the order of ``phases``, pass on the rows the
step does not read (``routing``), and return rows in the step's output layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import pyarrow as pa

from panes.datastream.plan import OneInputTransformation, shared_type
from panes.datastream.windowed import WindowSpec
from panes.operators.metrics import OperatorCounters
from panes.operators.rescaling import Owner
from panes.spark.linear import Step
from panes.spark.shard.columnar_host import ColumnarHost
from panes.spark.shard.definition import ShardDefinition
from panes.spark.shard.record_host import RecordHost
from panes.windowing.columnar.plan import ColumnarWindow
from panes.windowing.implementation import Implementation

__all__ = ["ColumnarHost", "RecordHost", "ShardHost", "columnar_plan", "shard_host", "window_implementation"]


class ShardHost(Protocol):
    counters: OperatorCounters
    """What the step's operator counted (``panes.operators.metrics``); a caller diffs them around ``run``."""

    def run(
        self, batches: list[pa.RecordBatch], watermark: int, now: int, batch: int = 0, then: int | None = None
    ) -> list[pa.RecordBatch]:
        """One micro-batch of the shard: its rows (any layout) in, rows in the output layout out, led by the
        watermark the step forwards (``layout.FORWARDED``). The rows of phase 0 are processed before the operator
        advances to ``watermark``, those of phase 1 after it; then it advances to ``then``, when given (``phases``)."""

    def open_panes(self) -> int: ...

    def timer_count(self) -> int: ...

    def snapshot(self) -> bytes:
        """The whole state; what :meth:`changes` returns next starts from here."""

    def changes(self) -> bytes:
        """What changed since the last :meth:`snapshot` or :meth:`changes` (its size follows the work done)."""

    def restore(self, blob: bytes, changes: Sequence[bytes] = ()) -> None:
        """The state of a :meth:`snapshot` followed by the :meth:`changes` taken after it, in order."""

    def open(self) -> None:
        """Open the operator (as the first :meth:`run` does): a restored operator then holds all its state."""

    def rescale(self, snapshots: Sequence[bytes], owner: Owner, count: int) -> list[bytes]:
        """The :meth:`snapshot` of ``count`` shards of this step holding the state of ``snapshots`` (shards'
        snapshots), each key's at its ``owner`` (``panes.operators.rescaling``)."""

    def next_event_time_timer(self) -> int | None: ...

    def next_processing_time_timer(self) -> int | None: ...

    def close(self) -> None: ...


def window_implementation(step: Step) -> Implementation | None:
    """How a keyed window step runs on Spark (``panes.windowing.implementation``; columnar when its inputs share
    one type that allows it and the step may run on columns, ``Step.columns``); ``None`` for other steps."""
    spec = step.transformation.spec if isinstance(step.transformation, OneInputTransformation) else None
    if not isinstance(spec, WindowSpec):
        return None
    input_type = shared_type(step.types.get(channel) for channel in step.consumed)
    return spec.implementation(exact_order=False, columns=step.columns, input_type=input_type)


def columnar_plan(step: Step) -> ColumnarWindow | None:
    """The columnar form of a keyed window step, when it runs on columns."""
    implementation = window_implementation(step)
    return None if implementation is None else implementation.columnar


def shard_host(definition: ShardDefinition, shard: int, batch: bool = False) -> ShardHost:
    """The host of shard ``shard`` of ``definition``'s step (see the module docstring). In BATCH execution a
    columnar window gives the results of sorted input too: it takes its elements in timestamp order (the keys'
    order does not matter to it), and with all input processed before the final watermark nothing is late."""
    plan = columnar_plan(definition.step)
    if plan is not None:
        return ColumnarHost(definition, plan, shard, batch)
    return RecordHost(definition, shard, batch)
