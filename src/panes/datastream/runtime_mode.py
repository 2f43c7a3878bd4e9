"""Execution modes (Flink's ``RuntimeExecutionMode``): how a runner executes a plan over its sources.

- ``STREAMING`` (the default): records are processed as they arrive; watermarks advance with the input, so
  windows fire and timers run while the job runs, and keyed aggregations (``reduce``, ``sum``, ``min_by``,
  ...) emit every intermediate result.
- ``BATCH`` (bounded input only): Flink's batch execution. Each keyed operator first receives its whole input,
  sorted by key and, within a key, by timestamp, then processes one key at a time; no watermark flows but the
  final ``LONG_MAX`` one, so event-time windows fire at the end of their key's input (and before it only when
  their trigger fires on elements, a count for instance); every timer of a
  key (event time first, then processing time) fires when the key's input ends, and timers registered by
  those callbacks are ignored; keyed aggregations emit only the final result per key (with timestamp
  ``LONG_MAX``). Final results equal STREAMING's whenever they do not depend on arrival order.
- ``AUTOMATIC``: ``BATCH`` when every source is bounded, else ``STREAMING``.

:func:`resolve_runtime_mode` is the one rule every runner applies.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from typing import Any


class RuntimeExecutionMode(enum.Enum):
    """``STREAMING``, ``BATCH`` or ``AUTOMATIC`` (see the module docstring)."""

    STREAMING = "STREAMING"
    BATCH = "BATCH"
    AUTOMATIC = "AUTOMATIC"


def resolve_runtime_mode(mode: RuntimeExecutionMode, unbounded_sources: Sequence[str]) -> RuntimeExecutionMode:
    """The mode a job runs in: ``STREAMING`` or ``BATCH``, given the names of its unbounded sources.

    ``AUTOMATIC`` is ``BATCH`` exactly when there are none. ``BATCH`` with an unbounded source raises
    ``ValueError`` naming the sources (Flink refuses such a job too).
    """
    if mode is RuntimeExecutionMode.AUTOMATIC:
        return RuntimeExecutionMode.STREAMING if unbounded_sources else RuntimeExecutionMode.BATCH
    if mode is RuntimeExecutionMode.BATCH and unbounded_sources:
        raise ValueError(
            f"RuntimeExecutionMode.BATCH needs bounded sources, but {list(unbounded_sources)} are unbounded: use "
            "STREAMING (or AUTOMATIC), or give the sources an end (a count, end_of_input=True, a bounded DataFrame)"
        )
    return mode


def plan_runtime_mode(plan: Iterable[Any], mode: RuntimeExecutionMode) -> RuntimeExecutionMode:
    """The mode a job of ``plan`` (its transformations) runs in: ``mode`` resolved over its unbounded sources
    (a source whose ``is_bounded()`` says so: a streaming DataFrame or file source, micro-batches without
    ``end_of_input``, an endless generator), as :func:`resolve_runtime_mode` does."""
    unbounded = [t.name for t in plan if t.kind == "source" and not getattr(t.source, "is_bounded", lambda: True)()]
    return resolve_runtime_mode(mode, unbounded)
