"""The elements of one window's panes as columns, for a window evaluated by a ``process_batch`` function.

A window whose function needs a pane's elements (``panes.windowing.batch_function``, or a
``ProcessWindowFunction``: ``process_panes``) keeps, per window start, an :class:`ElementTable`: the elements
that arrived, in chunks of Arrow columns (one chunk per batch that added to the window), and nothing else (an
element costs its Arrow size: the key is read from its column when needed). Nothing is computed when elements
arrive; a firing sorts the window's elements by key (stably: a pane's elements stay in arrival order) and hands
them to the function.

State changes are appends: :meth:`ElementTable.changes` holds only the chunks added since the last snapshot,
and a snapshot holds the window's elements as one chunk. Both hold the elements' keys beside them, as numpy
(``pane_table.key_array``), which rescaling reads.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from panes.windowing.columnar.pane_table import key_array
from panes.windowing.columnar.plan import ColumnarWindow

State = tuple[np.ndarray, pa.StructArray]
"""A window's elements as plain data: their keys and their values, in arrival order."""


class ElementTable:
    """The elements of one window (module docstring)."""

    def __init__(self, plan: ColumnarWindow, values: list[pa.StructArray]) -> None:
        self.plan = plan
        self.values = values
        self.written = len(values)
        """Chunks ``[0, written)`` are in the state last snapshotted; later ones are changes."""
        self._panes: int | None = None

    @classmethod
    def empty(cls, plan: ColumnarWindow, key_dtype: Any) -> ElementTable:
        return cls(plan, [])

    def _keys(self, values: pa.StructArray) -> np.ndarray:
        """The keys of elements ``values``, as numpy."""
        return key_array(values.field(self.plan.key))

    def __len__(self) -> int:
        """The window's open panes (its distinct keys)."""
        if self._panes is None:
            self._panes = len(np.unique(self.state()[0])) if self.values else 0
        return self._panes

    def __bool__(self) -> bool:
        """Whether the window has elements (without counting its panes)."""
        return bool(self.values)

    def add(self, values: pa.StructArray, keys: np.ndarray) -> None:
        """Add elements ``values`` (whose keys are ``keys``), in this order."""
        if len(keys):
            self.values.append(values)
            self._panes = None

    def pane_keys(self) -> list[Any]:
        """The keys of the window's panes, as Python values (in no particular order)."""
        keys: list[Any] = pc.unique(self.state()[1].field(self.plan.key)).to_pylist()
        return keys

    def panes(self, only: Any = None) -> tuple[np.ndarray, pa.StructArray, np.ndarray]:
        """The keys of the window's elements, sorted (each key's elements keep their arrival order), the elements
        in that order, and the first row of each pane; ``only``: the pane of that key alone."""
        keys, values = self.state()
        if only is not None:
            rows = np.flatnonzero(keys == only)
            return *self.state_rows((keys, values), rows), np.zeros(min(len(rows), 1), dtype=np.int64)
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        firsts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))) if len(keys) else keys[:0]
        return keys, values.take(pa.array(order)), firsts.astype(np.int64)

    # -- state -------------------------------------------------------------------------------------------------

    def state(self) -> State:
        """All elements and their keys; the elements kept as one chunk when they are all in the state last
        snapshotted."""
        if not self.values:
            return np.empty(0), pa.array([], self.plan.input_type.arrow_type)
        values = self.values[0] if len(self.values) == 1 else pa.concat_arrays(self.values)
        if self.written == len(self.values):
            self.values, self.written = [values], 1
        return self._keys(values), values

    def clean(self) -> None:
        """Everything is in the state last snapshotted."""
        self.written = len(self.values)

    def changes(self) -> State | None:
        """The elements added since the state was last snapshotted (``None``: none), which are then in it."""
        added = self.values[self.written :]
        if not added:
            return None
        values = pa.concat_arrays(added)
        self.written = len(self.values)
        return self._keys(values), values

    @classmethod
    def of_state(cls, plan: ColumnarWindow, state: State) -> ElementTable:
        return cls(plan, [state[1]])

    def write(self, state: State) -> None:
        """Add the elements of a :meth:`changes` (restoring a log)."""
        self.add(state[1], state[0])
        self.written = len(self.values)

    @staticmethod
    def state_rows(state: State, rows: np.ndarray) -> State:
        """Elements ``rows`` of a :meth:`state`, as a state."""
        keys, values = state
        return keys[rows], values.take(pa.array(rows))

    @staticmethod
    def merged(pieces: list[State]) -> State:
        """One window's elements from pieces holding distinct keys."""
        if len(pieces) == 1:
            return pieces[0]
        return np.concatenate([piece[0] for piece in pieces]), pa.concat_arrays([piece[1] for piece in pieces])
