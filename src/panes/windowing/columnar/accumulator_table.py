"""The panes of one window as one Python accumulator each, for a window folded by a ``reduce`` function or a Python
``AggregateFunction`` (``incremental_panes``).

Such a window keeps, per window start, an :class:`AccumulatorTable`: the keys with an open pane in that window
(a sorted numpy array, as ``pane_table.key_array`` makes them) and each pane's accumulator in a numpy object
column beside them: the reduced value (Flink's ``ReducingState``) or the ``AggregateFunction``'s accumulator
(``AggregatingState``), the object the user's function returned, never its elements. ``None`` is a pane whose
function returned ``None``: the window operator keeps it empty (it fires nothing, and the next element starts it
again), and its key stays, for the window's cleanup (``clear`` of a window function).

State changes are the panes written: every pane an element reached is marked (an accumulator that ``add``
changed in place is written too), :meth:`AccumulatorTable.changes` holds those panes' keys and accumulators
(pickled with the operator's changes), and a snapshot holds all of them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from panes.windowing.columnar.pane_table import key_list, rows_inserting
from panes.windowing.columnar.plan import ColumnarWindow

State = tuple[np.ndarray, np.ndarray]
"""Panes as plain data: their keys (sorted, distinct) and their accumulators (an object array)."""


def accumulators(count: int) -> np.ndarray:
    """``count`` empty accumulators (``None``), as an object column."""
    return np.full(count, None, dtype=object)


class AccumulatorTable:
    """The open panes of one window, one accumulator each (module docstring)."""

    def __init__(self, plan: ColumnarWindow, keys: np.ndarray, values: np.ndarray) -> None:
        self.plan = plan
        self.keys = keys
        self.accumulators = values
        """Each pane's accumulator, an object array aligned with ``keys``."""
        self.dirty = np.zeros(len(keys), dtype=bool)
        """Panes written since the state was last snapshotted."""

    @classmethod
    def empty(cls, plan: ColumnarWindow, key_dtype: Any) -> AccumulatorTable:
        return cls(plan, np.empty(0, dtype=key_dtype), accumulators(0))

    def __len__(self) -> int:
        """The window's open panes (keys an element reached, an empty accumulator included)."""
        return len(self.keys)

    def rows_of(self, keys: np.ndarray) -> np.ndarray:
        """The rows of ``keys`` (sorted, distinct), adding an empty pane for each key not there yet."""
        return rows_inserting(self.keys, keys, self._insert)

    def _insert(self, at: np.ndarray, keys: np.ndarray) -> None:
        self.keys = np.insert(self.keys, at, keys)
        self.accumulators = np.insert(self.accumulators, at, accumulators(len(at)))
        self.dirty = np.insert(self.dirty, at, False)

    def written(self, rows: np.ndarray | int) -> None:
        """Panes ``rows`` were written (their accumulators go into the next changes)."""
        self.dirty[rows] = True

    def pane_keys(self) -> list[Any]:
        """The keys of the window's panes, as Python values (sorted)."""
        return key_list(self.keys)

    # -- state -------------------------------------------------------------------------------------------------

    def state(self, rows: np.ndarray | slice = slice(None)) -> State:
        """Panes ``rows`` (all by default) as plain data for :meth:`of_state` and :meth:`write`."""
        return self.state_rows((self.keys, self.accumulators), rows)

    def clean(self) -> None:
        """Every pane is in the state last snapshotted."""
        self.dirty[:] = False

    def changes(self) -> State | None:
        """The panes written since the state was last snapshotted (``None``: none), which are then in it."""
        if not self.dirty.any():
            return None
        found = self.state(np.flatnonzero(self.dirty))
        self.dirty[:] = False
        return found

    @staticmethod
    def state_rows(state: State, rows: np.ndarray | slice) -> State:
        """Panes ``rows`` of a :meth:`state`, as a state."""
        keys, values = state
        return keys[rows], values[rows]

    @staticmethod
    def merged(pieces: list[State]) -> State:
        """One window's panes from pieces holding distinct keys, keys sorted."""
        if len(pieces) == 1:
            return pieces[0]
        keys = np.concatenate([piece[0] for piece in pieces])
        order = np.argsort(keys, kind="stable")
        return keys[order], np.concatenate([piece[1] for piece in pieces])[order]

    @classmethod
    def of_state(cls, plan: ColumnarWindow, state: State) -> AccumulatorTable:
        keys, values = state
        return cls(plan, keys, values)

    def write(self, state: State) -> None:
        """Set the panes of a :meth:`changes` (keys sorted and distinct), adding those not there yet."""
        keys, values = state
        if len(keys):
            rows = self.rows_of(keys)  # first: adding panes makes new columns
            self.accumulators[rows] = values
