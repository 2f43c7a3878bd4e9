"""How often Python's cyclic garbage collector runs while panes processes elements.

CPython collects its youngest generation after every 700 net allocations of container objects (the default
thresholds ``(700, 10, 10)``), and each collection walks the objects that survived so far. An operator makes
several containers per element (records, accumulators, timer entries, emitted rows) that live until their pane
fires, so at the default the collector runs every few hundred elements and walks open state again and again,
while finding almost nothing: open panes' state forms no reference cycles, and acyclic objects are freed by
reference counting the moment they are dropped. Measured in instructions per event (``valgrind
--tool=cachegrind``, which a noisy machine does not disturb; string hashing fixed, start-up taken out): a
shard's work on Spark (``bench/shard_host.py --functions reduce``, 100,000 events) 90,735 -> 84,837 (-6.5%),
the local runner's tumbling count+sum (60,000 events) 291,110 -> 286,987 (-1.4%).

:func:`fewer_collections` raises the thresholds for a block (the local runner's ``execute``) and restores
them after; :func:`settle_process` does it for the life of a process panes owns (a shard keeper), first
moving the objects it has made so far (modules, classes, functions) out of the collector's reach
(``gc.freeze``), as they live as long as the process.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

THRESHOLDS = (50_000, 10, 10)
"""The collector's thresholds while panes processes elements: the youngest generation is collected after
50,000 net allocations (CPython's default: 700); the older two as by default."""


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Within the block the collector runs at :data:`THRESHOLDS` (never more often than the caller had it, and
    not at all when the caller's youngest threshold is 0, which turns automatic collection off); the caller's
    thresholds come back after it, also when it raises."""
    before = gc.get_threshold()
    if before[0] != 0:
        gc.set_threshold(*(max(mine, theirs) for mine, theirs in zip(THRESHOLDS, before, strict=True)))
    try:
        yield
    finally:
        gc.set_threshold(*before)


def settle_process() -> None:
    """For a process panes owns, from now until it exits: objects that exist now are left out of collections
    (``gc.freeze``) and the collector runs at :data:`THRESHOLDS`."""
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
