"""The order of one micro-batch in a shard, written once for both hosts: which rows come before the watermark,
and when the operator moves.

A keyed step's shard takes a micro-batch in Flink's order at batch granularity:

1. the rows of phase 0: what a keyed step before it emitted ahead of the micro-batch's watermark (results of the
   timers that watermark fired), by their ``seq``;
2. the watermark and processing time of the micro-batch (event-time timers fire);
3. the rows of phase 1: the source's elements and what was made of them, by ``seq``;
4. ``then``, when given: a second watermark, the one the micro-batch's own rows brought (a step whose watermark
   comes with its rows, ``panes.spark.split_watermarks``).

What the operator emits during 1-2 gets phase ``2 * batch``, during 3-4 ``2 * batch + 1`` (streaming micro-batches
are all ``batch`` 0; the bounded Spark path numbers its rounds), so the step after sees the same order. In BATCH
execution a columnar window takes each part by timestamp first (the order sorted input gives each key).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np

P = TypeVar("P")
"""The rows of one phase of a micro-batch, in the form a host's feed takes them."""

N = TypeVar("N", int, np.ndarray)

SHARD_SHIFT = 40
"""A result of a timer is ordered ``shard << SHARD_SHIFT | n`` (:func:`timer_result_order`)."""


def timer_result_order(shard: int, numbers: N) -> N:
    """The ordering number of the ``numbers``-th result of a timer a shard emitted (an int, or an array of them):
    by shard, then in the order the shard emitted. It orders a result among the rows of its own micro-batch only,
    so where a host starts counting does not matter (``element_host.StepHost._append``)."""
    return (shard << SHARD_SHIFT) | numbers


def phase_order(
    phases: np.ndarray, seqs: np.ndarray, timestamps: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The indices of a micro-batch's rows of phase 0 (even phases), then those of phase 1 (odd phases), each part
    by ``seq`` (with ``timestamps``, as BATCH execution takes them: by timestamp, then ``seq``)."""
    late = (phases % 2).astype(bool)
    order = np.lexsort((seqs, late) if timestamps is None else (seqs, timestamps, late))
    return order[~late[order]], order[late[order]]


def run_phases(
    parts: tuple[P, P],
    feed: Callable[[P, int], None],
    advance: Callable[[int, int], None],
    watermark: int,
    then: int | None = None,
    batch: int = 0,
) -> None:
    """One micro-batch in the module docstring's order: ``feed(rows, phase)`` takes ``parts[0]`` then ``parts[1]``,
    ``advance(watermark, phase)`` moves the operator (only forward: a watermark not ahead of the operator's is the
    host's to ignore); ``phase`` is the phase of what the operator emits meanwhile."""
    early = 2 * batch
    feed(parts[0], early)
    advance(watermark, early)
    feed(parts[1], early + 1)
    if then is not None:
        advance(then, early + 1)
