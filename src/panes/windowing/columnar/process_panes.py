"""A ``ProcessWindowFunction`` called on panes the columnar aligned operator kept as Arrow columns.

The columnar aligned operator (``aligned.py``) keeps a window's elements as Arrow chunks (``element_table``)
for a ``ProcessWindowFunction`` as it does for ``process_batch``; nothing is decoded while a pane is open.
When panes fire, :func:`call_panes` decodes each window's elements once, with the input record type's
``decode`` (the Python values element by element would have buffered), and calls ``process(key, context,
elements)`` once per pane, in the order the operator fires them: window by window, each window's panes by key;
a pane's elements in arrival order, as a list of their own.

The context (:class:`PaneContext`) gives ``window()`` (a ``TimeWindow`` ``[start, end)``),
``current_watermark()``, ``current_processing_time()`` and ``output(tag, value)``; results and side outputs
carry the window's ``max_timestamp()``. It keeps no keyed state and no pane info: ``window_state()``,
``global_state()`` and ``pane()`` raise ``UnsupportedOperationError`` (the planner keeps functions whose code
names them element by element: ``function_reach``). A function that raises fails with a
``UserFunctionError`` naming the key and the window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from panes.errors import UnsupportedOperationError, UserFunctionError
from panes.state.api import KeyedStateStore
from panes.tags import OutputTag
from panes.time import java_add
from panes.windowing.columnar.plan import ColumnarWindow
from panes.windowing.functions import WindowContext
from panes.windowing.pane_info import PaneInfo
from panes.windowing.windows import TimeWindow

Fired = tuple[int, tuple[np.ndarray, pa.StructArray, np.ndarray]]
"""A fired window: its start and its elements by pane (``ElementTable.panes``: keys sorted, values in that
order, the first row of each pane)."""


@dataclass
class PaneRecords:
    """What the function emitted for fired panes, in emission order: each value, the side output's tag id
    (``None``: the main output), its timestamp and the ordering number of the element whose arrival fired the
    pane (``-1``: a timer did)."""

    values: list[Any] = field(default_factory=list)
    tags: list[str | None] = field(default_factory=list)
    timestamps: list[int] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.values)

    def add(self, value: Any, tag: str | None, timestamp: int, seq: int) -> None:
        self.values.append(value)
        self.tags.append(tag)
        self.timestamps.append(timestamp)
        self.seqs.append(seq)


class PaneContext(WindowContext[TimeWindow]):
    """The context of a pane the columnar operator fires (module docstring)."""

    __slots__ = ("_now", "_out", "_seq", "_watermark", "_window")

    def __init__(self, out: PaneRecords, watermark: int, now: int, seq: int) -> None:
        self._out = out
        self._watermark = watermark
        self._now = now
        self._seq = seq
        self._window = TimeWindow(0, 1)

    def window(self) -> TimeWindow:
        return self._window

    def current_watermark(self) -> int:
        return self._watermark

    def current_processing_time(self) -> int:
        return self._now

    def output(self, output_tag: OutputTag[Any], value: Any) -> None:
        if output_tag is None:
            raise ValueError("OutputTag must not be None.")
        self._out.add(value, output_tag.tag_id, self._window.max_timestamp(), self._seq)

    def window_state(self) -> KeyedStateStore:
        raise _unkept("window_state()")

    def global_state(self) -> KeyedStateStore:
        raise _unkept("global_state()")

    def pane(self) -> PaneInfo:
        raise _unkept("pane()")


def _unkept(what: str) -> UnsupportedOperationError:
    return UnsupportedOperationError(
        f"{what} is not kept by the columnar window operator this ProcessWindowFunction runs on; name it in the "
        "function's code (context.window_state()) so that the window runs element by element"
    )


def call_panes(plan: ColumnarWindow, windows: list[Fired], watermark: int, now: int, seq: int) -> PaneRecords:
    """The function's results for the panes of ``windows`` (module docstring) at ``watermark`` and processing
    time ``now``; ``seq``: the ordering number of the element that fired them (``-1``: a timer)."""
    function = plan.process
    assert function is not None
    out = PaneRecords()
    context = PaneContext(out, watermark, now, seq)
    decode, size = plan.input_type.decode, plan.size
    for start, (_, values, firsts) in windows:
        window = TimeWindow(start, java_add(start, size))
        context._window = window
        elements = decode(values)
        keys = values.field(plan.key).take(pa.array(firsts)).to_pylist()
        bounds = [*firsts.tolist(), len(elements)]
        max_timestamp = window.max_timestamp()
        for index, key in enumerate(keys):
            try:
                results = function.process(key, context, elements[bounds[index] : bounds[index + 1]])
                for result in results if results is not None else ():
                    if type(result) is tuple and len(result) == 2 and isinstance(result[0], OutputTag):
                        out.add(result[1], result[0].tag_id, max_timestamp, seq)  # a side output, as collect_all
                    else:
                        out.add(result, None, max_timestamp, seq)
            except (UserFunctionError, UnsupportedOperationError):
                raise
            except Exception as error:
                raise UserFunctionError(error, function=repr(function), key=key, window=window) from error
    return out
