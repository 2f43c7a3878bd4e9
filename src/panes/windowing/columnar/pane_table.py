"""The panes of one window as columns: one row per key, keys sorted, one numpy column per accumulator field.

A columnar window keeps, per window start, a :class:`PaneTable`: the keys with an open pane in that window (a
sorted numpy array: integers and other fixed-width types as themselves, strings as numpy's variable-width
``StringDType``, anything else as Python objects) and each built-in aggregation's accumulator as columns:

- ``Count``: the count;
- ``Sum``, ``Min``, ``Max``: the value and how many values were added (``0``: the accumulator is ``None``);
- ``Avg``: the sum and the count of values (``(None, 0)`` when none).

Values are ``int64`` for integral input fields (sums wrap around as Java's ``long`` does) and ``float64``
otherwise. An open count+sum pane costs 40 bytes plus its key (16 bytes for a string of up to 15 bytes). Adding
elements is vectorised and keeps element order per pane (``numpy.add.at``/``minimum.at`` apply in index
order), so a pane holds exactly what adding its elements one by one in Python gives; :meth:`PaneTable.get` and
:meth:`PaneTable.put` read and write one pane in the Python form of ``panes.functions.aggregates`` (for the
element-at-a-time path of late firings).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from panes.windowing.columnar.plan import ColumnarWindow, Part

STRINGS = np.dtypes.StringDType()


def key_array(column: pa.Array) -> np.ndarray:
    """The keys of an Arrow column as a sortable numpy array (see the module docstring; no nulls)."""
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        return np.asarray(column.to_numpy(zero_copy_only=False)).astype(STRINGS)
    return np.asarray(column.to_numpy(zero_copy_only=False))


def rows_inserting(
    table_keys: np.ndarray, keys: np.ndarray, insert: Callable[[np.ndarray, np.ndarray], None]
) -> np.ndarray:
    """The rows ``keys`` (sorted, distinct) have in a table whose keys are ``table_keys`` (sorted, distinct) once
    ``insert(at, missing)`` has put the keys not there yet (``missing``, sorted) before the rows ``at`` of
    ``table_keys``, as ``numpy.insert`` does (``insert`` is not called when every key is there)."""
    at = np.searchsorted(table_keys, keys)
    found = at < len(table_keys)
    found[found] = table_keys[at[found]] == keys[found]
    if found.all():
        return at
    missing = ~found
    insert(at[missing], keys[missing])
    # each key moved on by the new keys before it (``keys`` is sorted: those of lower index)
    return at + (np.cumsum(missing) - missing)


def key_list(keys: np.ndarray) -> list[Any]:
    """``keys`` as Python values."""
    found: list[Any] = keys.astype(object).tolist() if keys.dtype == STRINGS else keys.tolist()
    return found


def _dtype(part: Part) -> Any:
    if part.aggregate.kind == "count":
        return np.int64
    assert part.field_type is not None
    return np.int64 if pa.types.is_integer(part.field_type) else np.float64


def _fill(kind: str, dtype: Any) -> Any:
    """The starting value of a new pane's value column: the neutral element of its aggregation."""
    if kind == "min":
        return np.iinfo(np.int64).max if dtype is np.int64 else np.inf
    if kind == "max":
        return np.iinfo(np.int64).min if dtype is np.int64 else -np.inf
    return 0


def _values(column: pa.Array, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """A column's values as numpy ``dtype`` (nulls dropped), and which rows had one."""
    valid = np.ones(len(column), dtype=bool) if column.null_count == 0 else ~column.is_null().to_numpy(False)
    filled = column.fill_null(0) if column.null_count else column
    return np.asarray(filled.to_numpy(zero_copy_only=False)).astype(dtype, copy=False)[valid], valid


class PaneTable:
    """The open panes of one window (module docstring). ``columns[i]`` holds part ``i``'s fields: the count
    (``Count``) or the value and the number of values (the others). The columnar sessions keep their sessions
    in one too, a row per session and key ids as its keys (``columnar/sessions.py``); they use only the methods
    that work row by row (``add_to``, ``get``, ``put``, ``results``, ``state_rows``)."""

    def __init__(self, plan: ColumnarWindow, keys: np.ndarray, columns: list[list[np.ndarray]]) -> None:
        self.plan = plan
        self.keys = keys
        self.columns = columns
        self.dirty = np.zeros(len(keys), dtype=bool)
        """Rows written since the state was last snapshotted (see ``ColumnarAlignedWindows.changes``)."""

    @property
    def aggregates(self) -> list[list[np.ndarray]]:
        """The accumulator columns, one list per part."""
        return self.columns[: len(self.plan.parts)]

    @property
    def fired(self) -> np.ndarray | None:
        """How often each pane fired and was not cleaned up at once (kept when the window's ``WindowRow`` adds
        pane info: its ``pane_index``), else ``None``."""
        return self.columns[-1][0] if counts_firings(self.plan) else None

    def record_firings(self, rows: np.ndarray | slice | int) -> None:
        """Panes ``rows`` fired (and stay: their next firing's index is one more)."""
        fired = self.fired
        if fired is not None:
            fired[rows] += 1
            self.dirty[rows] = True

    @classmethod
    def empty(cls, plan: ColumnarWindow, key_dtype: Any) -> PaneTable:
        return cls(plan, np.empty(0, dtype=key_dtype), new_columns(plan, 0))

    def __len__(self) -> int:
        return len(self.keys)

    def rows_of(self, keys: np.ndarray) -> np.ndarray:
        """The rows of ``keys`` (sorted, distinct), adding an empty pane for each key not there yet."""
        return rows_inserting(self.keys, keys, self._insert)

    def _insert(self, at: np.ndarray, keys: np.ndarray) -> None:
        self.keys = np.insert(self.keys, at, keys)
        self.dirty = np.insert(self.dirty, at, False)
        for fields, fresh in zip(self.columns, new_columns(self.plan, len(keys)), strict=True):
            for index, column in enumerate(fields):
                fields[index] = np.insert(column, at, fresh[index])

    def add(self, values: pa.StructArray, keys: np.ndarray) -> None:
        """Add element ``i`` of ``values`` to the pane of ``keys[i]``, in element order."""
        distinct, pane = np.unique(keys, return_inverse=True)
        self.add_to(values, self.rows_of(distinct)[pane.reshape(-1)])

    def add_to(self, values: pa.StructArray, rows: np.ndarray) -> None:
        """Add element ``i`` of ``values`` to the pane in row ``rows[i]``, in element order."""
        self.dirty[rows] = True
        for part, fields in zip(self.plan.parts, self.aggregates, strict=True):
            kind = part.aggregate.kind
            if kind == "count":
                np.add.at(fields[0], rows, 1)
                continue
            assert part.field is not None
            data, valid = _values(values.field(part.field), fields[0].dtype)
            targets = rows[valid]
            if kind in ("sum", "avg"):
                np.add.at(fields[0], targets, data)
            else:
                (np.minimum if kind == "min" else np.maximum).at(fields[0], targets, data)
            np.add.at(fields[1], targets, 1)

    def get(self, row: int) -> tuple[Any, ...]:
        """Pane ``row``'s accumulator in Python form (``panes.functions.aggregates``)."""
        found: list[Any] = []
        for part, fields in zip(self.plan.parts, self.aggregates, strict=True):
            kind = part.aggregate.kind
            if kind == "count":
                found.append(int(fields[0][row]))
                continue
            seen = int(fields[1][row])
            value = fields[0][row].item() if seen else None
            found.append((value, seen) if kind == "avg" else value)
        return tuple(found)

    def put(self, row: int, accumulator: tuple[Any, ...]) -> None:
        """Set pane ``row`` to ``accumulator`` (Python form, as :meth:`get` gives it)."""
        self.dirty[row] = True
        for part, fields, acc in zip(self.plan.parts, self.aggregates, accumulator, strict=True):
            kind = part.aggregate.kind
            if kind == "count":
                fields[0][row] = acc
                continue
            # Sum, Min and Max need only whether a value was added; Avg's accumulator carries its count
            value, seen = acc if kind == "avg" else (acc, 0 if acc is None else max(1, int(fields[1][row])))
            fields[0][row] = _fill(kind, fields[0].dtype.type) if value is None else value
            fields[1][row] = seen

    def results(self, rows: np.ndarray | slice = slice(None)) -> pa.Array:
        """The results of panes ``rows`` as an array of ``plan.result_type`` (null where a result is ``None``)."""
        plan = self.plan
        arrays = []
        for index, (part, fields) in enumerate(zip(plan.parts, self.aggregates, strict=True)):
            kind = part.aggregate.kind
            target = plan.result_type if plan.scalar else plan.result_type.field(index).type
            if kind == "count":  # a copy: Arrow would share the column's memory, which later elements change
                arrays.append(pa.array(np.array(fields[0][rows]), target))
                continue
            value, seen = fields[0][rows], fields[1][rows]
            if kind == "avg":
                with np.errstate(divide="ignore", invalid="ignore"):
                    value = value.astype(np.float64) / seen
            none = seen == 0
            found = pa.array(np.where(none, 0, value), mask=none)
            arrays.append(found if found.type == target else found.cast(target))
        if plan.scalar:
            return arrays[0]
        return pa.StructArray.from_arrays(arrays, fields=list(plan.result_type))

    # -- state -------------------------------------------------------------------------------------------------

    def state(self, rows: np.ndarray | slice = slice(None)) -> tuple[Any, ...]:
        """Rows ``rows`` (all by default) as plain data for :meth:`of_state` and :meth:`write`."""
        return self.state_rows((self.keys, self.columns), rows)

    def clean(self) -> None:
        """Every pane is in the state last snapshotted."""
        self.dirty[:] = False

    def changes(self) -> tuple[Any, ...] | None:
        """The panes written since the state was last snapshotted (``None``: none), which are then in it."""
        if not self.dirty.any():
            return None
        found = self.state(np.flatnonzero(self.dirty))
        self.dirty[:] = False
        return found

    @staticmethod
    def state_rows(state: tuple[Any, ...], rows: np.ndarray | slice) -> tuple[Any, ...]:
        """Panes ``rows`` of a :meth:`state`, as a state."""
        keys, columns = state
        return (keys[rows], [[column[rows] for column in fields] for fields in columns])

    @staticmethod
    def merged(pieces: list[tuple[Any, ...]]) -> tuple[Any, ...]:
        """One window's panes from pieces holding distinct keys, keys sorted."""
        if len(pieces) == 1:
            return pieces[0]
        keys = np.concatenate([piece[0] for piece in pieces])
        order = np.argsort(keys, kind="stable")
        columns = [
            [np.concatenate([piece[1][part][field] for piece in pieces])[order] for field in range(len(fields))]
            for part, fields in enumerate(pieces[0][1])
        ]
        return (keys[order], columns)

    @classmethod
    def of_state(cls, plan: ColumnarWindow, state: tuple[Any, ...]) -> PaneTable:
        keys, columns = state
        return cls(plan, keys, [list(fields) for fields in columns])

    def write(self, state: tuple[Any, ...]) -> None:
        """Set the panes of a :meth:`state` (its keys sorted and distinct), adding those not there yet."""
        keys, columns = state
        if not len(keys):
            return
        rows = self.rows_of(keys)
        for fields, written in zip(self.columns, columns, strict=True):
            for column, values in zip(fields, written, strict=True):
                column[rows] = values


def counts_firings(plan: ColumnarWindow) -> bool:
    """Whether a window's panes count their firings (its ``WindowRow`` adds pane info)."""
    return plan.row is not None and plan.row.pane is not None


def new_columns(plan: ColumnarWindow, count: int) -> list[list[np.ndarray]]:
    """The columns of ``count`` new panes: each part's accumulator fields, then the firing counts when kept."""
    columns = [_new_fields(part, count) for part in plan.parts]
    return [*columns, [np.zeros(count, dtype=np.int64)]] if counts_firings(plan) else columns


def _new_fields(part: Part, count: int) -> list[np.ndarray]:
    """The accumulator columns of ``count`` new panes of ``part``."""
    dtype = _dtype(part)
    if part.aggregate.kind == "count":
        return [np.zeros(count, dtype=np.int64)]
    return [np.full(count, _fill(part.aggregate.kind, dtype), dtype=dtype), np.zeros(count, dtype=np.int64)]


def reduce_runs(plan: ColumnarWindow, columns: list[list[np.ndarray]], firsts: np.ndarray) -> list[list[np.ndarray]]:
    """The accumulator columns of panes made by merging runs of consecutive rows of ``columns`` (each part's
    fields, as :func:`new_columns` makes them; a run starts at each of ``firsts``, ascending, the first ``0``):
    counts, sums and value counts added, minima and maxima taken (a row without values holds the neutral
    element, so it changes nothing)."""
    merged = []
    for part, fields in zip(plan.parts, columns, strict=True):
        kind = part.aggregate.kind
        value = np.minimum if kind == "min" else np.maximum if kind == "max" else np.add
        merged.append([value.reduceat(fields[0], firsts), *(np.add.reduceat(f, firsts) for f in fields[1:])])
    return merged
