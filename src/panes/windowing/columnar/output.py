"""What the columnar window operators emit, and how it becomes Arrow columns.

Pane results leave in chunks (one per fired window, or one per element that fired panes at once); each
result has the window's ``max_timestamp()`` as its timestamp and, when an element's arrival fired it, that
element's ordering number. Late elements leave as indices into the batch they arrived in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from panes.windowing.columnar.pane_table import key_list
from panes.windowing.columnar.plan import ColumnarWindow
from panes.windowing.columnar.process_panes import PaneRecords


@dataclass
class Panes:
    """Results of panes: keys (a list, a numpy array of the window's keys, see ``pane_table``, or an Arrow
    array), window starts and ends, results (an array of ``plan.result_type``, null where a result is ``None``),
    and the ordering number of the element whose arrival fired each (``-1``: a timer did)."""

    keys: Any
    starts: np.ndarray
    ends: np.ndarray
    results: pa.Array
    seqs: np.ndarray
    info: PaneColumns | None = None
    """The pane info of each firing, when the window's ``WindowRow`` asks for it."""

    @classmethod
    def of(
        cls,
        plan: ColumnarWindow,
        keys: Any,
        starts: list[int],
        ends: list[int],
        accumulators: list[tuple[Any, ...]],
        seqs: list[int | None],
        info: PaneColumns | None = None,
    ) -> Panes:
        """Panes whose accumulators are in Python form (``panes.functions.aggregates``)."""
        return cls(
            keys,
            np.array(starts, dtype=np.int64),
            np.array(ends, dtype=np.int64),
            results(plan, accumulators),
            np.array([-1 if seq is None else seq for seq in seqs], dtype=np.int64),
            info,
        )

    def __len__(self) -> int:
        return len(self.results)

    def take(self, rows: np.ndarray) -> Panes:
        if isinstance(self.keys, pa.Array):
            keys = self.keys.take(pa.array(rows))
        else:
            keys = self.keys[rows] if isinstance(self.keys, np.ndarray) else [self.keys[i] for i in rows.tolist()]
        info = None if self.info is None else self.info.take(rows)
        return Panes(keys, self.starts[rows], self.ends[rows], self.results.take(pa.array(rows)), self.seqs[rows], info)


@dataclass
class PaneColumns:
    """Pane info (``panes.windowing.pane_info``) of firings as columns: index, timing (its string form) and
    whether it is the window's last firing."""

    index: np.ndarray
    timing: np.ndarray
    last: np.ndarray

    def take(self, rows: np.ndarray) -> PaneColumns:
        return PaneColumns(self.index[rows], self.timing[rows], self.last[rows])


@dataclass
class ColumnarOutput:
    """Everything one call of a columnar operator emitted, in emission order."""

    panes: list[Panes] = field(default_factory=list)
    late: list[np.ndarray] = field(default_factory=list)
    """Indices (into the elements of each ``process`` call, one array per call) of late elements."""
    records: list[PaneRecords] = field(default_factory=list)
    """What a ``ProcessWindowFunction`` emitted (``process_panes``), as Python values: main and side outputs."""

    def __len__(self) -> int:
        return sum(len(p) for p in self.panes) + sum(len(r) for r in self.records)


def results(plan: ColumnarWindow, accumulators: list[tuple[Any, ...]]) -> pa.Array:
    """The results of panes with ``accumulators``, as an array of ``plan.result_type``."""
    columns = []
    for index, part in enumerate(plan.parts):
        values = [acc[index] for acc in accumulators]
        if part.aggregate.kind == "avg":
            values = [None if count == 0 else float(total) / count for total, count in values]
        columns.append(pa.array(values, plan.result_type if plan.scalar else plan.result_type.field(index).type))
    if plan.scalar:
        return columns[0]
    return pa.StructArray.from_arrays(columns, fields=list(plan.result_type))


def emitted(plan: ColumnarWindow, panes: Panes) -> Panes:
    """The panes that emit something: as the window operator, a pane whose result is ``None`` (a single
    aggregation that saw no value) emits nothing."""
    if not plan.scalar or plan.keeps_elements or plan.parts[0].aggregate.kind == "count":
        return panes
    if panes.results.null_count == 0:
        return panes
    return panes.take(np.flatnonzero(panes.results.is_valid().to_numpy(zero_copy_only=False)))


def pane_values(plan: ColumnarWindow, panes: Panes) -> pa.Array:
    """The values a window emits for ``panes`` (see :func:`emitted`): their results (a ``process_batch``
    function's rows), or ``WindowRow``'s rows."""
    result = panes.results
    row = plan.row
    if row is None:
        return result
    assert plan.output_type is not None  # a WindowRow's
    struct = plan.output_type.arrow_type
    arrays = []
    if row.key is not None:
        key_type = struct.field(row.key).type
        if isinstance(panes.keys, pa.Array):
            arrays.append(panes.keys if panes.keys.type == key_type else panes.keys.cast(key_type))
        else:
            keys = key_list(panes.keys) if isinstance(panes.keys, np.ndarray) else panes.keys
            arrays.append(pa.array(keys, key_type))
    if row.start is not None:
        arrays.append(pa.array(panes.starts, pa.int64()))
    if row.end is not None:
        arrays.append(pa.array(panes.ends, pa.int64()))
    if plan.scalar:
        arrays.append(result)
    else:
        arrays.extend(result.field(i) for i in range(result.type.num_fields))
    if row.pane is not None:
        assert panes.info is not None
        info = panes.info
        arrays += [pa.array(info.index, pa.int64()), pa.array(info.timing, pa.string()), pa.array(info.last)]
    return pa.StructArray.from_arrays(arrays, fields=list(struct))
