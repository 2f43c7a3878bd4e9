"""A ``ProcessWindowFunction`` called on panes the columnar aligned operator kept as Arrow columns.

The columnar aligned operator (``aligned.py``) keeps a window's elements as Arrow chunks (``element_table``)
for a ``ProcessWindowFunction`` as it does for ``process_batch``; nothing is decoded while a pane is open.
When a window fires, :meth:`PaneCalls.fire` decodes its elements once, with the input record type's ``decode``
(the Python values element by element would have buffered), and calls ``process(key, context, elements)`` once
per pane, by key; a pane's elements in arrival order, as a list of their own. Windows fire and are cleaned up in
the order of their timers (time, then firing before cleanup, then window start).

The context (:class:`PaneContext`) gives what the window operator's gives: ``window()`` (a ``TimeWindow``
``[start, end)``), ``current_watermark()``, ``current_processing_time()``, ``output(tag, value)`` (results and
side outputs carry the window's ``max_timestamp()``), ``window_state()`` and ``global_state()`` (keyed state of
the pane's key in the window, and of the key alone, kept in a heap state backend of the operator's, with its
snapshots, changes and rescaling) and ``pane()`` (pane info, recorded in that backend as the window operator
records it, for functions whose code names ``pane``: ``function_reach``; others get
``UnsupportedOperationError``). At a window's cleanup each of its panes' pane info is dropped and the function's
``clear(context)`` called, as the window operator does. A function that raises fails with a
``UserFunctionError`` naming the key and the window.

The window function after a ``reduce`` function or a Python ``AggregateFunction`` (``incremental_panes``) is
called the same way, with the same context, through :meth:`PaneCalls.call`: it gets the pane's result alone, in
a list of its own (a ``PassThroughWindowFunction`` when the job gave none).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from panes.errors import UnsupportedOperationError, UserFunctionError
from panes.operators.rescaling import Owner, split_keyed_state
from panes.state.api import KeyedStateStore
from panes.state.backend import VOID_NAMESPACE, HeapKeyedStateBackend
from panes.state.store import NamespacedStateStore
from panes.tags import OutputTag
from panes.time import LONG_MIN, java_add
from panes.windowing.columnar.plan import ColumnarWindow
from panes.windowing.functions import WindowContext
from panes.windowing.pane_info import PANE_STATE, PaneInfo, next_pane
from panes.windowing.rules import cleanup_time
from panes.windowing.windows import TimeWindow

Panes = tuple[np.ndarray, pa.StructArray, np.ndarray]
"""A window's elements by pane (``ElementTable.panes``: keys sorted, values in that order, the first row of each
pane)."""
Fired = tuple[int, Panes]
"""A fired window: its start and its elements by pane."""


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
    """The context of a pane the columnar operator fires, or of a window it cleans up (module docstring)."""

    __slots__ = ("_calls", "_pane", "_seq", "_watermark", "_window")

    def __init__(self, calls: PaneCalls) -> None:
        self._calls = calls
        self._watermark = LONG_MIN
        self._seq = -1
        self._window = TimeWindow(0, 1)
        self._pane: PaneInfo | Callable[[], PaneInfo] | None = None

    def window(self) -> TimeWindow:
        return self._window

    def current_watermark(self) -> int:
        return self._watermark

    def current_processing_time(self) -> int:
        return self._calls.now

    def output(self, output_tag: OutputTag[Any], value: Any) -> None:
        if output_tag is None:
            raise ValueError("OutputTag must not be None.")
        self._calls.out.add(value, output_tag.tag_id, self._window.max_timestamp(), self._seq)

    def window_state(self) -> KeyedStateStore:
        return NamespacedStateStore(self._calls.backend, self._window)

    def global_state(self) -> KeyedStateStore:
        return self._calls.global_state

    def pane(self) -> PaneInfo:
        pane = self._pane
        if pane is None:
            if not self._calls.plan.pane_info:
                raise UnsupportedOperationError(
                    "pane() is kept by the columnar window operator only for functions whose code names it; name "
                    "it in the function's code (context.pane()) so that the window keeps pane info"
                )
            raise UnsupportedOperationError("pane() is known while a pane fires (in process), not in clear()")
        if not isinstance(pane, PaneInfo):
            pane = self._pane = pane()
        return pane


class PaneCalls:
    """Calls the ``ProcessWindowFunction`` of ``plan`` on fired panes and at cleanup, and keeps its keyed state
    (module docstring); ``out`` collects what it emits, ``now`` is the processing time its context gives."""

    def __init__(self, plan: ColumnarWindow) -> None:
        function = plan.process
        assert function is not None
        self.plan = plan
        self.function = function
        self.now = 0
        self.out = PaneRecords()
        self.backend = HeapKeyedStateBackend(lambda: self.now)
        self.backend.track_changes()
        self.global_state = NamespacedStateStore(self.backend, VOID_NAMESPACE)
        self.context = PaneContext(self)

    def take(self) -> PaneRecords:
        """What the function emitted since the last call."""
        out, self.out = self.out, PaneRecords()
        return out

    # -- firing and cleanup ----------------------------------------------------------------------------------

    def fire(self, start: int, panes: Panes, watermark: int, before: int | None, seq: int) -> None:
        """Call the function on each pane of the window at ``start`` (``panes``: ``ElementTable.panes``) at
        ``watermark``: fired by its end's timer during an advance from ``before``, or (``before`` ``None``) by the
        arrival of the element numbered ``seq`` (``-1``: a timer)."""
        _, values, firsts = panes
        elements = self.plan.input_type.decode(values)
        keys = values.field(self.plan.key).take(pa.array(firsts)).to_pylist()
        bounds = [*firsts.tolist(), len(elements)]
        contents = (elements[bounds[index] : bounds[index + 1]] for index in range(len(keys)))
        self.call(start, zip(keys, contents, strict=True), watermark, before, seq)

    def call(
        self, start: int, panes: Iterable[tuple[Any, list[Any]]], watermark: int, before: int | None, seq: int
    ) -> None:
        """Call the function on ``panes`` (each a key and the list the function gets: the pane's elements, or
        after a ``reduce`` or ``AggregateFunction`` its result alone, ``incremental_panes``) of the window at
        ``start``, fired as :meth:`fire` says."""
        plan, context, function, backend, out = self.plan, self.context, self.function, self.backend, self.out
        window = TimeWindow(start, java_add(start, plan.size))
        max_timestamp = window.max_timestamp()
        context._window, context._watermark, context._seq = window, watermark, seq
        time, closing_before = (watermark, watermark) if before is None else (max_timestamp, before)
        last = cleanup_time(max_timestamp, plan.lateness) <= watermark  # the window operator's ``_closes``
        pane_state = backend.get_partitioned_state(window, PANE_STATE) if plan.pane_info else None
        for key, elements in panes:
            backend.current_key = key
            if pane_state is not None:
                context._pane = _pane_of(pane_state, max_timestamp, time, closing_before, last)
            try:
                results = function.process(key, context, elements)
                for result in results if results is not None else ():
                    if type(result) is tuple and len(result) == 2 and isinstance(result[0], OutputTag):
                        out.add(result[1], result[0].tag_id, max_timestamp, seq)  # a side output, as collect_all
                    else:
                        out.add(result, None, max_timestamp, seq)
            except (UserFunctionError, UnsupportedOperationError):
                raise
            except Exception as error:
                raise UserFunctionError(error, function=repr(function), key=key, window=window) from error
            finally:
                context._pane = None

    def clean(self, start: int, keys: list[Any], watermark: int) -> None:
        """The window at ``start`` is cleaned up at ``watermark`` for ``keys`` (its panes' keys): each pane's pane
        info dropped, then the function's ``clear`` called, as the window operator does."""
        plan, context, backend = self.plan, self.context, self.backend
        if not (plan.pane_info or plan.clears):
            return
        window = TimeWindow(start, java_add(start, plan.size))
        context._window, context._watermark, context._seq = window, watermark, -1
        pane_state = backend.get_partitioned_state(window, PANE_STATE) if plan.pane_info else None
        for key in keys:
            backend.current_key = key
            if pane_state is not None:
                pane_state.clear()
            if plan.clears:
                try:
                    self.function.clear(context)
                except (UserFunctionError, UnsupportedOperationError):
                    raise
                except Exception as error:
                    raise UserFunctionError(error, function=repr(self.function), key=key, window=window) from error

    def needs_cleanup(self) -> bool:
        """Whether :meth:`clean` does anything."""
        return self.plan.pane_info or self.plan.clears

    # -- state -------------------------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The keyed state (the backend's snapshot); later :meth:`changes` start from here."""
        self.backend.forget_changes()
        return self.backend.snapshot()

    def changes(self) -> dict[str, Any]:
        """The keyed state's entries changed since the last :meth:`snapshot` or :meth:`changes`."""
        return self.backend.take_changes()

    def restore(self, snapshot: dict[str, Any] | None, changes: list[dict[str, Any]]) -> None:
        """The keyed state of ``snapshot`` (``None``: none) followed by ``changes``."""
        data: dict[str, Any] = {"tables": {}, "kinds": {}, "ttl": []} if snapshot is None else snapshot
        for delta in changes:
            HeapKeyedStateBackend.apply_changes(data, delta)
        self.backend.restore(data)

    @staticmethod
    def rescaled(snapshots: list[dict[str, Any] | None], owner: Owner, count: int) -> list[dict[str, Any]]:
        """``count`` keyed-state snapshots holding the entries of ``snapshots``, each key's at its ``owner``."""
        return split_keyed_state(snapshots, owner, count)


def _pane_of(state: Any, max_timestamp: int, time: int, before: int, last: bool) -> PaneInfo | Callable[[], PaneInfo]:
    """The pane info of a firing (``pane_info.next_pane``, recorded in ``state`` for the current key), or for the
    window's last firing, which records nothing, what works it out when the function asks."""
    if last:
        return lambda: next_pane(state, max_timestamp, time, before, True)
    return next_pane(state, max_timestamp, time, before, False)
