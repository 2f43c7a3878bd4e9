"""A durable table of what came too late for a window: ``late_data_table(path)`` on a windowed stream.

Elements later than a window's allowed lateness are dropped by Flink (or sent to a side output, which a job
must then store itself). ``late_data_table(path)`` keeps them: every such element becomes a row of a Parquet
table under ``path``, written by the job's own file sink (the local runner writes one ``batch=0`` folder when the
job ends, Spark one ``batch=<n>`` folder per micro-batch that had any), with the element's fields and:

- ``step_uid``: the uid of the window step (set with ``.uid(...)``, else the one panes gives it, see
  ``panes.datastream.fingerprint``);
- ``event_time``: the element's timestamp (milliseconds);
- ``window_starts`` / ``window_ends``: the windows the assigner gives it, ``[start, end)`` (several for
  sliding windows; a session window's is the element's own ``[t, t + gap)``).

``panes.datastream.reconcile`` reads the table back and computes what those rows change in the window's
results. The window's input must have a declared record type with named fields (``TypeError`` when the job is
built otherwise); a field named like one of the four columns above is refused (``ValueError``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from panes.datastream.plan import Plan
from panes.functions.stream import ProcessFunction
from panes.types import RecordType
from panes.windowing.assigners.base import WindowAssigner

COLUMNS = ("step_uid", "event_time", "window_starts", "window_ends")
"""The columns a late table adds to the element's fields."""


def late_table_type(input_type: RecordType | None) -> RecordType:
    """The type of a late table's rows for elements of ``input_type`` (see the module docstring)."""
    if input_type is None or input_type.shape == "scalar":
        raise TypeError(
            "late_data_table needs the window's input as named columns: declare the type of the stream before "
            "the window (output_type= on the step before, or a typed source)"
        )
    fields = list(input_type.columns())
    clash = [field.name for field in fields if field.name in COLUMNS]
    if clash:
        raise ValueError(f"the window's input has a field named {clash[0]!r}, which a late table adds: rename it")
    added = [
        pa.field("step_uid", pa.string()),
        pa.field("event_time", pa.int64()),
        pa.field("window_starts", pa.list_(pa.int64())),
        pa.field("window_ends", pa.list_(pa.int64())),
    ]
    return RecordType(pa.struct(fields + added), "dict")


class _Clock:
    def __init__(self, now: int) -> None:
        self.now = now

    def get_current_processing_time(self) -> int:
        return self.now


class LateRows(ProcessFunction[Any, Any]):
    """Each late element as a late table's row. ``window`` is the window step's transformation id, whose uid the
    environment fills in when it makes the plan (:func:`fill_step_uids`)."""

    def __init__(self, assigner: WindowAssigner[Any, Any], input_type: RecordType, window: int) -> None:
        self.assigner = assigner
        self.input_type = input_type
        self.window = window
        self.uid: str | None = None

    def process_element(self, value: Any, ctx: Any) -> Iterator[dict[str, Any]]:
        timestamp = ctx.timestamp()
        clock = _Clock(ctx.timer_service().current_processing_time())
        windows = list(self.assigner.assign_windows(value, timestamp, clock))
        row = dict(zip(self.input_type.columns().names, _fields(self.input_type.conform(value)), strict=True))
        yield {
            **row,
            "step_uid": self.uid,
            "event_time": timestamp,
            "window_starts": [getattr(window, "start", None) for window in windows],
            "window_ends": [getattr(window, "end", None) for window in windows],
        }


def _fields(value: Any) -> Iterable[Any]:
    """The field values of a canonical record (a dict, a ``Row`` or a tuple), in order."""
    return value.values() if isinstance(value, dict) else tuple(value)


def writes_late_table(transformation: Any) -> bool:
    """Whether ``transformation`` is the step that makes a late table's rows (their count is not the job's
    results: progress figures leave it out)."""
    return isinstance(getattr(transformation, "spec", None), LateRows)


def fill_step_uids(plan: Plan) -> None:
    """Tell every :class:`LateRows` of ``plan`` the uid of its window step."""
    from panes.datastream.fingerprint import operator_uids

    specs = [getattr(t, "spec", None) for t in plan.transformations()]
    late_rows = [spec for spec in specs if isinstance(spec, LateRows)]
    if late_rows:
        uids = operator_uids(plan)
        for function in late_rows:
            function.uid = uids.get(function.window)
