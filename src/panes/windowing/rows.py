"""``WindowRow``: the built-in window function that turns each pane's result into a row with its key and
window, the shape most windowed jobs write out (``key, window_start, window_end, <results>``).

It is an ordinary ``ProcessWindowFunction`` (every runner can call it per pane), which runners may also
evaluate for whole batches of panes at once. With an ``Aggregates`` result, each named result is a column;
another result goes in the column ``value``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from panes.types import RecordType
from panes.windowing.functions import ProcessWindowFunction, WindowContext


class WindowRow(ProcessWindowFunction[Any, dict[str, Any], Any, Any]):
    """Yields ``{key: <key>, start: window.start, end: window.end, **result}`` per pane (a dict result is
    spread into columns, any other result is the column ``value``). Give ``None`` for a name to leave that
    column out. ``pane="pane"`` adds the firing's pane info (``panes.windowing.pane_info``) as the columns
    ``pane_index`` (BIGINT), ``pane_timing`` (``"early"``, ``"on time"``, ``"late"``) and ``pane_last``
    (BOOLEAN); such rows are made element by element (the columnar path does not count firings). Raises
    ``ValueError`` when two columns would have the same name."""

    def __init__(
        self,
        key: str | None = "key",
        start: str | None = "window_start",
        end: str | None = "window_end",
        value: str = "value",
        pane: str | None = None,
    ) -> None:
        pane_names = [] if pane is None else [f"{pane}_index", f"{pane}_timing", f"{pane}_last"]
        names = [n for n in (key, start, end, value) if n is not None] + pane_names
        if len(set(names)) != len(names):
            raise ValueError(f"WindowRow column names must differ, got {names}")
        self.key = key
        self.start = start
        self.end = end
        self.value = value
        self.pane = pane

    def process(self, key: Any, context: WindowContext[Any], elements: Iterable[Any]) -> Iterable[dict[str, Any]]:
        window = context.window()
        for result in elements:
            row = self.row(key, window.start, window.end, result)
            if self.pane is not None:
                info = context.pane()
                row[f"{self.pane}_index"] = info.index
                row[f"{self.pane}_timing"] = info.timing.value
                row[f"{self.pane}_last"] = info.is_last
            yield row

    def row(self, key: Any, start: int, end: int, result: Any) -> dict[str, Any]:
        row: dict[str, Any] = {}
        if self.key is not None:
            row[self.key] = key
        if self.start is not None:
            row[self.start] = start
        if self.end is not None:
            row[self.end] = end
        if isinstance(result, dict):
            clash = set(result) & set(row)
            if clash:
                raise ValueError(f"WindowRow: results {sorted(clash)} clash with the key/window columns; rename them")
            row.update(result)
        else:
            row[self.value] = result
        return row

    def row_type(self, key_type: pa.DataType | None, result: pa.DataType) -> RecordType:
        """The type of the rows for keys of ``key_type`` and results of ``result`` (a struct is spread)."""
        fields: list[pa.Field] = []
        if self.key is not None:
            if key_type is None:
                raise TypeError("the key's type is unknown")
            fields.append(pa.field(self.key, key_type))
        if self.start is not None:
            fields.append(pa.field(self.start, pa.int64()))
        if self.end is not None:
            fields.append(pa.field(self.end, pa.int64()))
        if pa.types.is_struct(result):
            fields.extend(result.field(i) for i in range(result.num_fields))
        else:
            fields.append(pa.field(self.value, result))
        if self.pane is not None:
            fields += [
                pa.field(f"{self.pane}_index", pa.int64()),
                pa.field(f"{self.pane}_timing", pa.string()),
                pa.field(f"{self.pane}_last", pa.bool_()),
            ]
        return RecordType(pa.struct(fields), "dict")

    def __repr__(self) -> str:
        pane = "" if self.pane is None else f", pane={self.pane!r}"
        return f"WindowRow(key={self.key!r}, start={self.start!r}, end={self.end!r}{pane})"
