"""A ``reduce`` function or a Python ``AggregateFunction`` on the columnar aligned operator: one accumulator per pane.

``window(...).reduce(fn[, window_function])`` and ``window(...).aggregate(aggregate_function[, window_function])``
with a user's ``AggregateFunction`` fold each pane's elements into one Python accumulator as they arrive, as
Flink's ``ReducingState`` and ``AggregatingState`` do: the pane's first value as it is, then
``fn(accumulator, value)``; or ``create_accumulator()``, then ``add(value, accumulator)``, keeping what it
returns (a ``None`` empties the pane: the next value starts it again). The columnar aligned operator keeps these
accumulators (``accumulator_table``), never the elements, so its state stays one accumulator per open pane.

:meth:`Folding.add` takes a window's (element, key) pairs of a batch: it groups them by pane with numpy (a stable
sort by key: each pane's elements stay in arrival order) and folds them in one Python loop over the batch's
values, decoded once by the caller with the input record type's ``decode`` (the values element by element
sees); per element only the user's call is made. :meth:`Folding.add_one` folds one late element (which then
fires its pane at once). :meth:`Folding.results` gives the panes a firing emits, as ``(key, [result])``: the
reduced value, or ``get_result(accumulator)``; a pane whose result is ``None`` emits nothing, as the window
operator's. The operator hands them to the window function through ``process_panes.PaneCalls.call`` (a
``PassThroughWindowFunction`` emits the result itself).

A user function that raises fails with a ``UserFunctionError`` naming the key and the window of the pane it
worked on, as element by element; with several failing elements in one batch, the first to fail here may be
another than the first in arrival order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from panes.errors import UnsupportedOperationError, UserFunctionError
from panes.time import java_add
from panes.windowing.columnar.accumulator_table import AccumulatorTable
from panes.windowing.columnar.pane_table import key_list
from panes.windowing.columnar.plan import ColumnarWindow
from panes.windowing.windows import TimeWindow


class Folding:
    """Folds elements into the accumulators of panes with the plan's ``reduce`` function or ``AggregateFunction``,
    and gives the results of fired panes (module docstring)."""

    def __init__(self, plan: ColumnarWindow) -> None:
        function: Any = plan.incremental
        if function is None:
            raise ValueError("Folding runs a plan with a reduce function or an AggregateFunction")
        self.plan = plan
        self.reduces = plan.incremental_kind == "reduce"
        if self.reduces:
            self._reduce = function.reduce
        else:
            self._create = function.create_accumulator
            self._add = function.add
            self._get_result = function.get_result

    def add(self, table: AccumulatorTable, start: int, keys: np.ndarray, values: list[Any], at: np.ndarray) -> None:
        """Fold the values ``values[at[i]]`` (``i`` in arrival order) into the panes of their ``keys[i]`` in the
        window at ``start``."""
        if not len(keys):
            return
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        firsts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
        rows = table.rows_of(ordered[firsts])
        table.written(rows)
        counts = np.diff(np.append(firsts, len(ordered)))
        pane_rows = np.repeat(rows, counts).tolist()
        self._fold(table, start, pane_rows, [values[index] for index in at[order].tolist()])

    def add_one(self, table: AccumulatorTable, start: int, key: np.ndarray, value: Any) -> int:
        """Fold ``value`` into the pane of ``key`` (a one-key array) in the window at ``start``; its row."""
        (row,) = table.rows_of(key).tolist()
        table.written(row)
        self._fold(table, start, [row], [value])
        return int(row)

    def _fold(self, table: AccumulatorTable, start: int, rows: list[int], values: list[Any]) -> None:
        """Fold ``values[i]`` into the accumulator of row ``rows[i]``, each row's values together, in order."""
        accumulators = table.accumulators
        current, accumulator = -1, None
        try:
            if self.reduces:
                reduce = self._reduce
                for value, row in zip(values, rows, strict=True):
                    if row != current:
                        if current >= 0:
                            accumulators[current] = accumulator
                        current, accumulator = row, accumulators[row]
                    accumulator = value if accumulator is None else reduce(accumulator, value)
            else:
                create, add = self._create, self._add
                for value, row in zip(values, rows, strict=True):
                    if row != current:
                        if current >= 0:
                            accumulators[current] = accumulator
                        current, accumulator = row, accumulators[row]
                    if accumulator is None:
                        accumulator = create()
                    accumulator = add(value, accumulator)
        except (UserFunctionError, UnsupportedOperationError):
            raise
        except Exception as error:
            (key,) = key_list(table.keys[current : current + 1])
            raise UserFunctionError(error, key=key, window=self._window(start)) from error
        if current >= 0:
            accumulators[current] = accumulator

    def results(
        self, start: int, table: AccumulatorTable, rows: np.ndarray | None = None
    ) -> Iterator[tuple[Any, list[Any]]]:
        """The panes of the window at ``start`` that a firing emits (all of ``table``'s, or ``rows``), by key: each
        key and its result in a list of its own (what the window function gets); a pane whose result is ``None``
        is left out."""
        keys = key_list(table.keys if rows is None else table.keys[rows])
        found = (table.accumulators if rows is None else table.accumulators[rows]).tolist()
        if self.reduces:
            for key, accumulator in zip(keys, found, strict=True):
                if accumulator is not None:
                    yield key, [accumulator]
            return
        get_result = self._get_result
        for key, accumulator in zip(keys, found, strict=True):
            if accumulator is None:
                continue
            try:
                result = get_result(accumulator)
            except (UserFunctionError, UnsupportedOperationError):
                raise
            except Exception as error:
                raise UserFunctionError(error, key=key, window=self._window(start)) from error
            if result is not None:
                yield key, [result]

    def _window(self, start: int) -> TimeWindow:
        return TimeWindow(start, java_add(start, self.plan.size))
