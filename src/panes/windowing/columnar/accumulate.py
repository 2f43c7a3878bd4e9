"""Adding a batch of elements to the accumulators of many panes at once.

Accumulators keep the Python form of the built-in aggregations (``panes.functions.aggregates``): ``Count`` an
int, ``Sum``/``Min``/``Max`` the value or ``None``, ``Avg`` ``(sum or None, count)``; an ``Aggregates`` one is
the tuple of its parts'. :func:`accumulate` adds elements to them in element order with numpy, giving exactly
what adding them one by one in Python gives (sums use ``numpy.add.at``, which adds in index order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from panes.windowing.columnar.plan import Part


def _values(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A column's values as numpy (nulls filled with 0) and which are present."""
    valid = np.ones(len(column), dtype=bool) if column.null_count == 0 else ~column.is_null().to_numpy(False)
    filled = column.fill_null(0) if column.null_count else column
    return filled.to_numpy(zero_copy_only=False), valid


def accumulate(
    parts: Sequence[Part], values: pa.StructArray, groups: np.ndarray, initial: Sequence[tuple[Any, ...] | None]
) -> list[tuple[Any, ...]]:
    """The accumulators of ``len(initial)`` panes after adding ``values[i]`` to pane ``groups[i]`` (``-1``:
    to none) in order, starting from ``initial`` (``None``: a new pane)."""
    count = len(initial)
    chosen = groups >= 0
    targets = groups[chosen]
    columns: list[list[Any]] = []
    for index, part in enumerate(parts):
        before = [None if acc is None else acc[index] for acc in initial]
        if part.aggregate.kind == "count":
            counts = np.bincount(targets, minlength=count)
            columns.append([(0 if b is None else b) + int(c) for b, c in zip(before, counts.tolist(), strict=True)])
            continue
        assert part.field is not None
        data, valid = _values(values.field(part.field))
        data, valid = data[chosen], valid[chosen]
        columns.append(_part(part.aggregate.kind, data[valid], targets[valid], before, count))
    return list(zip(*columns, strict=True)) if columns else [() for _ in range(count)]


def _part(kind: str, data: np.ndarray, targets: np.ndarray, before: list[Any], count: int) -> list[Any]:
    """One aggregation's accumulators after adding ``data[i]`` to pane ``targets[i]`` in order."""
    seen = np.bincount(targets, minlength=count).tolist()
    integral = data.dtype.kind in "iub"
    dtype = np.int64 if integral else np.float64
    if kind in ("sum", "avg"):
        prior = before if kind == "sum" else [None if b is None else b[0] for b in before]
        out = np.array([0 if p is None else p for p in prior], dtype=dtype)
        np.add.at(out, targets, data.astype(dtype))
        totals = [
            total if p is not None or s > 0 else None for total, p, s in zip(out.tolist(), prior, seen, strict=True)
        ]
        if kind == "sum":
            return totals
        counts = [(0 if b is None else b[1]) + s for b, s in zip(before, seen, strict=True)]
        return list(zip(totals, counts, strict=True))
    # min / max: NaN wins, as numpy's minimum/maximum (and the built-ins in Python) do
    if integral:
        info = np.iinfo(np.int64)
        fill: Any = info.max if kind == "min" else info.min
    else:
        fill = np.inf if kind == "min" else -np.inf
    out = np.array([fill if b is None else b for b in before], dtype=dtype)
    (np.minimum if kind == "min" else np.maximum).at(out, targets, data.astype(dtype))
    return [None if b is None and s == 0 else r for b, s, r in zip(before, seen, out.tolist(), strict=True)]
