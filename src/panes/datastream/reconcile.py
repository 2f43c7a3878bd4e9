"""Correcting a window's results for the elements its late table kept: ``panes reconcile`` and :func:`reconcile`.

A streaming window's final result for a window covers the elements that were not too late; its late table
(``late_data_table``, ``panes.datastream.late_table``) holds the others. :func:`reconcile` runs the job's plan up to
that window twice in BATCH execution, where nothing is late, over the job's own (bounded, re-readable) sources:

- *as streamed*: without the late table's elements, the window's result for each window is what the streaming
  job's last firing of it emitted (in BATCH execution each window fires once, with all its elements);
- *complete*: with every element.

The corrections are the difference: every result of the first run that the second does not have, as a retraction
(``retract`` true), then every result of the second that the first does not have (``retract`` false), as rows of
the window's result type plus ``retract``, the form of ``retracting_fired_panes``
(``panes.windowing.accumulation``). Applied to a table holding each window's latest result (delete the rows
retracted, insert the others), they leave exactly what a BATCH run over all the data gives.

The job's sources must give the same elements again (files, explicit micro-batches, collections); elements are
matched to late rows by value and timestamp, each late row removing one element. Results are compared as values,
so a window whose result is the same either way gets no correction. Session windows are refused: a session
cleaned up before an element that would have joined it to the next one makes the stream's sessions differ from
a BATCH run's even without late data.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from panes.datastream.late_table import COLUMNS, LateRows
from panes.datastream.plan import (
    INHERIT,
    OneInputTransformation,
    Plan,
    SinkTransformation,
    Transformation,
    resolve_types,
)
from panes.datastream.runtime_mode import RuntimeExecutionMode
from panes.datastream.sinks import FileSink, ListSink
from panes.functions.stream import ProcessFunction
from panes.operators.stateless import ProcessOperator
from panes.types import RecordType
from panes.windowing.accumulation import RETRACT, change_row, retracting_type


@dataclass
class Corrections:
    """What :func:`reconcile` found: ``rows`` (retractions first, then new results; each a ``dict`` with
    ``retract``), their ``record_type`` (``None`` when the window's results have no declared type), the window
    step's uid, and how many late elements were read."""

    rows: list[dict[str, Any]]
    record_type: RecordType | None
    step_uid: str
    late_elements: int

    def write(self, path: str) -> str:
        """Write the rows as one Parquet file ``path`` (its folder is made); returns ``path``. ``TypeError`` when
        the window's results have no declared type."""
        import pyarrow.parquet as pq

        if self.record_type is None:
            raise TypeError("the window's results have no declared type: declare output_type= to write corrections")
        table = pa.Table.from_pylist(self.rows, schema=self.record_type.columns())
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        pq.write_table(table, path)
        return path


class _DropElements(ProcessFunction[Any, Any]):
    """Passes elements on, except one per ``(value, timestamp)`` in ``dropped`` (by ``repr`` of the canonical
    value)."""

    def __init__(self, dropped: Counter[tuple[str, int]], input_type: RecordType) -> None:
        self.dropped = dropped
        self.input_type = input_type

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        found = (repr(self.input_type.conform(value)), ctx.timestamp())
        if self.dropped[found] > 0:
            self.dropped[found] -= 1
            return
        yield value


def reconcile(build: Callable[[Any], None], late: str, runner: Any = "local") -> Corrections:
    """The corrections the late table under ``late`` makes to the results of the window step of ``build`` (a
    job's ``build(env)``) that writes it; see the module docstring. ``runner`` runs the two BATCH jobs.

    Raises ``ValueError`` when no window step of the job writes its late table to ``late``, when that window
    merges (sessions: see the message), or when the table holds rows of another step."""
    from panes.datastream import StreamEnvironment
    from panes.datastream.fingerprint import operator_uids

    env = StreamEnvironment(runner)
    build(env)
    plan = env.plan()
    window, late_rows = _late_table_step(plan, late)
    if late_rows.assigner.is_merging():
        raise ValueError(
            "panes reconcile corrects windows that do not merge (tumbling, sliding, global): a session window's "
            "streamed results can differ from a BATCH run over the same elements even without late data (a "
            "session cleaned up before an element that would have joined it to the next one starts a new "
            "session), so two BATCH runs cannot say what the stream emitted. Keep the late data table, and "
            "recompute the sessions in BATCH mode over all data instead"
        )
    uid = operator_uids(plan)[window.id]
    elements = _read(late, late_rows.input_type, uid)
    dropped = Counter((repr(value), timestamp) for value, timestamp in elements)
    types = resolve_types(plan, env.source_type)
    result_type = types.get((window.id, None))
    streamed = _batch_results(env, window, _DropElements(dropped, late_rows.input_type))
    complete = _batch_results(env, window, None)
    if getattr(getattr(window, "spec", None), "accumulation", None) == "retracting":
        # its rows carry the retract flag already; in BATCH execution a window fires once, retracting nothing
        streamed, complete = _results(streamed), _results(complete)
        result_type = _without_flag(result_type)
    if result_type is not None:
        streamed, complete = [result_type.conform(v) for v in streamed], [result_type.conform(v) for v in complete]
    before, after = Counter(map(repr, streamed)), Counter(map(repr, complete))
    rows = [change_row(value, True) for value in _taken(streamed, before - after)]
    rows += [change_row(value, False) for value in _taken(complete, after - before)]
    return Corrections(rows, retracting_type(result_type), uid, len(elements))


def _results(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A retracting window's rows of a BATCH run as its results (without the flag)."""
    assert not any(row[RETRACT] for row in rows), "a window of a BATCH run fires once"
    return [{name: value for name, value in row.items() if name != RETRACT} for row in rows]


def _without_flag(record_type: RecordType | None) -> RecordType | None:
    if record_type is None:
        return None
    fields = [field for field in record_type.columns() if field.name != RETRACT]
    return RecordType(pa.struct(fields), "dict")


def _taken(values: list[Any], wanted: Counter[str]) -> list[Any]:
    """The values whose ``repr`` is in ``wanted``, as many of each as it counts, in order."""
    left = Counter(wanted)
    taken = []
    for value in values:
        if left[repr(value)] > 0:
            left[repr(value)] -= 1
            taken.append(value)
    return taken


def _late_table_step(plan: Plan, late: str) -> tuple[Transformation, LateRows]:
    """The window step writing its late table to ``late``, and its :class:`LateRows`."""
    wanted = os.path.abspath(late)
    by_id = {t.id: t for t in plan.transformations()}
    for sink in plan.sinks:
        target = getattr(sink, "sink", None)
        if not isinstance(target, FileSink) or os.path.abspath(target.path) != wanted:
            continue
        rows = getattr(sink.inputs[0], "spec", None)
        if isinstance(rows, LateRows) and rows.window in by_id:
            return by_id[rows.window], rows
    raise ValueError(f"no window step of this job writes its late data table to {late}: give the path it was given")


def _read(late: str, input_type: RecordType, uid: str) -> list[tuple[Any, int]]:
    """The late table's elements (canonical values of ``input_type``) and timestamps."""
    import pyarrow.dataset as ds

    if not os.path.isdir(late):
        return []
    table = ds.dataset(late, format="parquet", partitioning="hive").to_table()
    if not table.num_rows:
        return []
    uids = set(table.column("step_uid").to_pylist())
    if uids != {uid}:
        other = sorted(str(u) for u in uids - {uid})
        raise ValueError(f"the late table {late} holds rows of step {', '.join(other)}, not of this job's {uid}")
    names = input_type.columns().names
    values = input_type.decode(pa.StructArray.from_arrays([table.column(n).combine_chunks() for n in names], names))
    return list(zip(values, table.column("event_time").to_pylist(), strict=True))


def _batch_results(env: Any, window: Transformation, drop: _DropElements | None) -> list[Any]:
    """The results of ``window`` in BATCH execution over its own input, less what ``drop`` drops."""
    step = window.another(inputs=(_before_keying(window.inputs[0], drop),))
    sink = ListSink()
    plan = Plan((SinkTransformation(name="Sink: reconcile", inputs=(step,), sink=sink),))
    mode = env.runtime_mode
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    try:
        env.execute_plan(plan, "reconcile")
    finally:
        env.set_runtime_mode(mode)
    return list(sink.values)


def _before_keying(node: Transformation, drop: _DropElements | None) -> Transformation:
    """``node`` with ``drop`` applied to what enters it: below the virtual steps (key partitioning, side
    outputs) that lead to it, so a keyed window stays keyed."""
    if drop is None:
        return node
    if node.is_virtual and node.inputs:
        return node.another(inputs=(_before_keying(node.inputs[0], drop),))
    return OneInputTransformation(
        name="Drop late data table rows",
        inputs=(node,),
        op_kind="process",
        spec=drop,
        operator_factory=lambda: ProcessOperator(drop),
        output_type=INHERIT,
        parallelism=node.parallelism,
    )


__all__ = ["COLUMNS", "Corrections", "reconcile"]
