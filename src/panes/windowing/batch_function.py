"""Window functions on columns: ``process_batch(fn, output_type)`` hands panes to ``fn`` as a table.

``fn`` receives a ``pandas.DataFrame`` (``batch_format="pandas"``, the default) or a ``pyarrow.Table``
(``"pyarrow"``) holding every element of one or more panes, one row per element: the input record's fields in
their declared order, then ``window_start`` and ``window_end`` (the pane's window ``[start, end)`` in
milliseconds; null for windows without a time range, such as global and count windows). The rows of a pane
are together, in the order its elements arrived; panes are ordered by window end, then key.

``fn`` returns the results as a ``pandas.DataFrame``, a ``pyarrow.Table`` or ``RecordBatch``, or a ``dict``
of columns, with every field of ``output_type`` (extra columns are dropped; columns are cast to the declared
types, ``ValueError`` when one cannot be). Each result belongs to a pane: to the pane whose ``window_end``
is in the result's ``window_end`` column when the result has one, otherwise ``fn`` must return exactly one
row per pane, in the order the panes came in. A result's timestamp is its window's ``window_end - 1``, as
every window result's is.

``fn`` must compute each pane's results from that pane's rows alone (a ``groupby`` over the key and the
window), because how many panes one call gets depends on where the window runs: the columnar operator
(``panes.windowing.columnar``) passes all panes a watermark fires in a shard in one call, the window
operator one pane per call. Both give the same results.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pyarrow as pa

from panes.errors import UserFunctionError
from panes.types import RecordType
from panes.windowing.functions import ProcessWindowFunction, WindowContext

WINDOW_COLUMNS = ("window_start", "window_end")
"""The columns a batch gets besides the input record's fields."""

BATCH_FORMATS = ("pandas", "pyarrow")


class BatchWindowFunction(ProcessWindowFunction[Any, Any, Any, Any]):
    """``fn`` over panes as columns (see the module docstring), and, as a ``ProcessWindowFunction``, over
    one pane of the window operator.

    Raises ``TypeError`` at construction when ``fn`` is not callable or either type is not a record type with
    named fields, and ``ValueError`` for another ``batch_format`` than ``"pandas"`` or ``"pyarrow"`` or an
    input with a field named ``window_start`` or ``window_end``.
    """

    def __init__(self, fn: Callable[[Any], Any], input_type: Any, output_type: Any, batch_format: str) -> None:
        if not callable(fn):
            raise TypeError(f"process_batch takes a function of a table, got {type(fn).__name__}")
        if batch_format not in BATCH_FORMATS:
            raise ValueError(f"batch_format must be 'pandas' or 'pyarrow', not {batch_format!r}")
        self.fn = fn
        self.batch_format = batch_format
        self.input_type = _columns_type(input_type, "its input", "declare the type of the stream before the window")
        self.output_type = _columns_type(output_type, "output_type", "declare the results' columns")
        clash = [name for name in WINDOW_COLUMNS if self.input_type.arrow_type.get_field_index(name) >= 0]
        if clash:
            raise ValueError(
                f"the input has a field named {clash[0]!r}, which process_batch adds for the window: rename it"
            )
        window = [pa.field(name, pa.int64()) for name in WINDOW_COLUMNS]
        self.batch_schema = pa.schema([*self.input_type.columns(), *window])

    # -- the columnar form ------------------------------------------------------------------------------------

    def call(self, values: pa.StructArray, starts: pa.Array, ends: pa.Array) -> pa.Table:
        """``fn`` over elements ``values`` of windows ``[starts[i], ends[i])`` (int64 arrays): its results as a
        table with the output's columns, and ``window_end`` when ``fn`` returned one."""
        table = pa.Table.from_arrays([*values.flatten(), starts, ends], schema=self.batch_schema)
        try:
            return self._table(self.fn(table.to_pandas() if self.batch_format == "pandas" else table))
        except UserFunctionError:
            raise
        except Exception as error:
            raise self._failure(error) from error

    def call_panes(self, values: pa.StructArray, starts: np.ndarray, ends: np.ndarray, panes: np.ndarray) -> Results:
        """:meth:`call` over the panes whose first rows are ``panes`` (ascending, from 0; their ends ascending),
        with the pane each result belongs to (see the module docstring)."""
        results = self.call(values, pa.array(starts, pa.int64()), pa.array(ends, pa.int64()))
        return Results(self._values(results), self._owners(results, ends[panes]))

    def _owners(self, results: pa.Table, pane_ends: np.ndarray | None) -> np.ndarray:
        """The pane of each result, of panes ending at ``pane_ends`` (ascending; ``None``: one pane without a
        time range); ``UserFunctionError`` when the results follow neither rule of the module docstring."""
        count = 1 if pane_ends is None else len(pane_ends)
        if WINDOW_COLUMNS[1] not in results.column_names:
            if results.num_rows != count:
                raise self._failure(
                    ValueError(
                        f"process_batch's function returned {results.num_rows} rows for {count} panes: return "
                        "one row per pane, in the order of the panes, or a window_end column saying whose each is"
                    )
                )
            return np.arange(count, dtype=np.int64)
        if pane_ends is None:  # every result is the one pane's
            return np.zeros(results.num_rows, dtype=np.int64)
        try:
            result_ends = _int64(results.column(WINDOW_COLUMNS[1]))
        except ValueError as error:
            raise self._failure(error) from None
        of = np.searchsorted(pane_ends, result_ends)
        matches = of < len(pane_ends)
        matches[matches] = pane_ends[of[matches]] == result_ends[matches]
        if not matches.all():
            bad = int(result_ends[~matches][0])
            raise self._failure(
                ValueError(f"process_batch's function returned a result with window_end {bad}, not a pane's")
            )
        return of

    def _failure(self, error: Exception) -> UserFunctionError:
        """``error`` (raised by the function, or its results breaking the contract) as the step reports it."""
        return error if isinstance(error, UserFunctionError) else UserFunctionError(error, function=repr(self))

    def _table(self, returned: Any) -> pa.Table:
        """What ``fn`` returned as a table of the output's columns."""
        if isinstance(returned, pa.RecordBatch):
            returned = pa.Table.from_batches([returned])
        elif isinstance(returned, dict):
            returned = pa.table(returned)
        elif not isinstance(returned, pa.Table):
            if type(returned).__name__ == "DataFrame" and hasattr(returned, "to_dict"):
                returned = pa.Table.from_pandas(returned, preserve_index=False)
            else:
                raise TypeError(
                    "process_batch's function must return a pandas DataFrame, a pyarrow Table or RecordBatch, "
                    f"or a dict of columns, not {type(returned).__name__}"
                )
        missing = [name for name in self.output_type.columns().names if name not in returned.column_names]
        if missing:
            raise ValueError(
                f"process_batch's function returned no column {missing[0]!r} of its output_type "
                f"({self.output_type.ddl()}); it returned {', '.join(returned.column_names) or 'no columns'}"
            )
        return returned

    def _values(self, results: pa.Table) -> pa.StructArray:
        """The output's columns of ``results`` as an array of the output type."""
        fields = list(self.output_type.columns())
        arrays = []
        for field in fields:
            column = results.column(field.name).combine_chunks()
            if column.type != field.type:
                try:
                    column = column.cast(field.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
                    cast = ValueError(
                        f"process_batch's column {field.name!r} ({column.type}) does not fit {field.type}"
                    )
                    raise self._failure(cast) from error
            arrays.append(column)
        return pa.StructArray.from_arrays(arrays, fields=fields)

    # -- one pane of the window operator ----------------------------------------------------------------------

    def process(self, key: Any, context: WindowContext[Any], elements: Iterable[Any]) -> Iterable[Any]:
        conform = self.input_type.conform
        values = self.input_type.encode([conform(element) for element in elements])
        window = context.window()
        start, end = getattr(window, "start", None), getattr(window, "end", None)
        starts, ends = (pa.array([bound] * len(values), pa.int64()) for bound in (start, end))
        results = self.call(values, starts, ends)
        self._owners(results, None if end is None else np.array([end], dtype=np.int64))
        return self.output_type.decode(self._values(results))

    def __repr__(self) -> str:
        return f"process_batch({getattr(self.fn, '__name__', type(self.fn).__name__)})"


class Results:
    """What one call of a batch function gave: ``values`` (of the output type) and ``panes[i]``, the index
    of the pane result ``i`` belongs to."""

    __slots__ = ("panes", "values")

    def __init__(self, values: pa.StructArray, panes: np.ndarray) -> None:
        self.values = values
        self.panes = panes


def _int64(column: pa.ChunkedArray) -> np.ndarray:
    if column.null_count:
        raise ValueError("process_batch's function returned a null window_end")
    try:
        return np.asarray(column.cast(pa.int64()).to_numpy(), dtype=np.int64)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise ValueError(f"process_batch's window_end column is not integral: {error}") from None


def _columns_type(declared: Any, what: str, remedy: str) -> RecordType:
    if declared is None:
        raise TypeError(f"process_batch needs {what} as columns: {remedy} (for example 'user STRING, p95 DOUBLE')")
    record = RecordType.of(declared)
    if record is None or record.shape == "scalar":
        raise TypeError(f"process_batch needs {what} as named columns, not {declared!r}: {remedy}")
    return record
