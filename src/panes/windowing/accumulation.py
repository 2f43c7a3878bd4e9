"""Accumulation modes: what a window's later firings emit, relative to its earlier ones.

- ``accumulating`` (the default, Flink's ``FIRE``): a firing's results cover every element of the pane so far;
  the pane keeps its contents.
- ``discarding`` (Flink's ``FIRE_AND_PURGE`` at every firing): a firing's results cover the elements since the
  window's previous firing; the pane is emptied each time it fires.
- ``retracting``: accumulating, and a firing of a window that fired before first retracts what that window's
  previous firing emitted. Every result is a row (``{**row, "retract": False}``; a non-record result is the
  column ``value``) and each retraction is the previous row with ``"retract": True``, so a downstream sum, a
  table ``MERGE`` or a Spark aggregation that subtracts retracted rows always holds the window's latest
  result. A purge (a trigger that purges, or the window's cleanup) ends the window's results: what it emitted
  stays, and the next firing retracts nothing. Merged windows retract what each of them emitted.

Rows follow ``panes.types.row.as_row``: a dict as it is, a tuple as ``_1, _2, ...``, a ``Row``, a
dataclass or an object with ``asDict`` by its fields, any other value as ``value``. With a declared or derived
result type the output type is that type's columns plus ``retract BOOLEAN``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from panes.state.descriptors import ListStateDescriptor
from panes.types import RecordType
from panes.types.row import as_row

MODES = ("accumulating", "discarding", "retracting")
"""The accumulation modes of a windowed stream (see the module docstring)."""

RETRACT = "retract"
"""The flag column of a retracting window's rows."""

LAST_RESULTS = ListStateDescriptor("window-last-results")
"""Per window of a retracting window step: the results of its last firing (to retract at the next)."""


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"the accumulation mode is one of {MODES}, not {mode!r}")


def change_row(value: Any, retract: bool) -> dict[str, Any]:
    """``value`` as a row with the ``retract`` flag (see the module docstring)."""
    row = as_row(value)
    if RETRACT in row:
        raise ValueError(f"a retracting window's results cannot have a column {RETRACT!r} of their own: {value!r}")
    row[RETRACT] = retract
    return row


def with_retractions(state: Any, results: Iterable[Any] | None) -> list[dict[str, Any]]:
    """The rows a retracting firing emits: the retractions of the window's last results (``state``, a
    :data:`LAST_RESULTS` list state), then the new results; the new results become the last ones."""
    new = list(results or ())
    previous = list(state.get() or ())
    if new:
        state.update(new)
    else:
        state.clear()
    return [change_row(value, True) for value in previous] + [change_row(value, False) for value in new]


def retracting_type(record_type: RecordType | None) -> RecordType | None:
    """The output type of a retracting window whose results are of ``record_type``: its columns (a plain type:
    ``value``) and ``retract BOOLEAN`` (``None`` when the results have no type)."""
    if record_type is None:
        return None
    columns = list(record_type.columns())
    if RETRACT in [c.name for c in columns]:
        raise ValueError(f"a retracting window's results cannot have a column {RETRACT!r} of their own")
    return RecordType(pa.struct([*columns, pa.field(RETRACT, pa.bool_())]), "dict")
