"""Correcting a window's results for the elements its late table kept: ``panes reconcile`` and :func:`reconcile`.

A streaming window's results cover the elements that were not too late; its late table (``late_data_table``,
``panes.datastream.late_table``) holds the others. :func:`reconcile` runs the job's plan up to that window twice
over the job's own (bounded, re-readable) sources:

- *as streamed*: in STREAMING execution, as the job ran, giving every row the window emitted, each firing's
  pane info included. The elements it finds too late must be the late table's (same values and timestamps, as
  many of each): otherwise the sources or the timing did not replay and ``ValueError`` says so;
- *complete*: in BATCH execution, where nothing is late, over every element.

Each run's output is applied to a table keyed by ``(key, window)``, as the window's accumulation mode says a
consumer applies it (:func:`table_of`): accumulating, each firing's rows replace the window's rows (the rows of
its last firing that emitted any); discarding, every row is added (a window holds one row per firing); retracting,
a ``retract`` row removes one equal row and the others are added. The corrections, for each window they change,
retract the rows the streamed table holds that the complete one does not (exactly as the stream emitted them,
pane columns included) and add the complete table's rows the streamed one does not hold, as rows of the
window's result type plus ``retract`` (the form of ``retracting_fired_panes``, ``panes.windowing.accumulation``);
applied to the streamed table (a retraction removes one equal row, any other row is added), they leave the
complete table. The windows they change are, in accumulating and retracting mode, those whose rows differ once
pane columns (``WindowRow(pane=...)``) are left out (a window whose results stay the same gets no rows, even
though BATCH execution numbers its panes otherwise); in discarding mode, those whose firings covered other
elements in the two runs (each run also runs a covering step, the window with a function that gives the values
each firing saw): the firings of a window split its elements by arrival, those of a BATCH run by timestamp, so
their rows differ while what they add up to does not, unless an element was too late, a trigger never fired
some (a count not reached) or a session merged otherwise.

Nothing late does not mean nothing to correct: a session cleaned up before an element that would have joined it
to the next one makes the stream's sessions differ from a BATCH run's, and a trigger that fires on counts alone
can leave other elements unfired; the corrections replace those windows by BATCH's too.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from panes.datastream.late_table import COLUMNS, LateRows
from panes.datastream.plan import (
    OneInputTransformation,
    Plan,
    SideOutputTransformation,
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
from panes.windowing.functions import ProcessWindowFunction, WindowContext
from panes.windowing.internal_functions import _IterableFunction, _SingleValueFunction, process_spec
from panes.windowing.rows import WindowRow

WindowId = tuple[Any, Any]
"""A window of a key: ``(key, window)``."""

Table = dict[WindowId, list[Any]]
"""Per window, the rows a consumer's table holds for it (see :func:`table_of`)."""


@dataclass
class Corrections:
    """What :func:`reconcile` found: ``rows`` (retractions first, then new results; each a ``dict`` with
    ``retract``), their ``record_type`` (``None`` when the window's results have no type panes knows or can
    read off the rows), the window step's uid, how many late elements were read, and the window's accumulation
    mode (``accumulating``, ``discarding`` or ``retracting``: how a consumer applies the rows)."""

    rows: list[dict[str, Any]]
    record_type: RecordType | None
    step_uid: str
    late_elements: int
    accumulation: str = "accumulating"

    def write(self, path: str) -> str:
        """Write the rows as one Parquet file ``path`` (its folder is made); returns ``path``. Without a
        ``record_type`` the columns are read off the rows (``pyarrow``); ``TypeError`` when they cannot be, saying
        where to declare the results' type."""
        import pyarrow.parquet as pq

        table = _arrow_table(self.rows, self.record_type)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        pq.write_table(table, path)
        return path


def _arrow_table(rows: list[dict[str, Any]], record_type: RecordType | None) -> pa.Table:
    """``rows`` as a table of ``record_type``, else of the columns read off the rows."""
    if record_type is not None:
        return pa.Table.from_pylist(rows, schema=record_type.columns())
    try:
        if rows:
            return pa.Table.from_pylist(rows)
    except (pa.ArrowException, TypeError, ValueError) as error:
        reason = f"their rows do not make columns ({error})"
    else:
        reason = "there are no rows to read the columns off"
    raise TypeError(
        f"the window's results have no type panes knows, and {reason}: declare the type of the window "
        "function's results, without the retract column, where the window is computed (output_type= of "
        ".aggregate(...), .reduce(...), .process(...) or .apply(...), e.g. output_type='key STRING, "
        "window_start BIGINT, window_end BIGINT, value BIGINT')"
    )


class _Fired:
    """A result of one firing of a window, with its key, window and the firing's id (unique: what
    :func:`reconcile`'s runs emit, to group results by window and firing)."""

    __slots__ = ("firing", "key", "value", "window")

    def __init__(self, key: Any, window: Any, firing: int, value: Any) -> None:
        self.key, self.window, self.firing, self.value = key, window, firing, value

    def __getstate__(self) -> tuple[Any, Any, int, Any]:
        return self.key, self.window, self.firing, self.value

    def __setstate__(self, state: tuple[Any, Any, int, Any]) -> None:
        self.key, self.window, self.firing, self.value = state


class _Tagging(ProcessWindowFunction[Any, Any, Any, Any]):
    """The window function ``inner``, each result tagged as a :class:`_Fired`."""

    def __init__(self, inner: ProcessWindowFunction[Any, Any, Any, Any]) -> None:
        self.inner = inner

    def open(self, runtime_context: Any) -> None:
        self.inner.open(runtime_context)

    def close(self) -> None:
        self.inner.close()

    def process(self, key: Any, context: WindowContext[Any], elements: Iterable[Any]) -> list[_Fired]:
        results = self.inner.process(key, context, elements) or ()
        window, firing = context.window(), uuid.uuid4().int
        return [_Fired(key, window, firing, value) for value in results]

    def clear(self, context: WindowContext[Any]) -> None:
        self.inner.clear(context)


def _tagged(spec: Any) -> Any:
    """The window ``spec`` (a ``WindowSpec``) with its results tagged (:class:`_Tagging`)."""
    function = spec.function
    wrapped = _Tagging(function.process_function)
    internal = _IterableFunction(wrapped) if function.kind == "process" else _SingleValueFunction(wrapped)
    return replace(spec, function=replace(function, function=internal, process_function=wrapped))


class _Covering(ProcessWindowFunction[Any, Any, Any, Any]):
    """Per firing, the elements it covers (the ``repr`` of each canonical value, sorted), as a :class:`_Fired`:
    what a discarding window's firings add up over."""

    def __init__(self, input_type: RecordType) -> None:
        self.input_type = input_type

    def process(self, key: Any, context: WindowContext[Any], elements: Iterable[Any]) -> list[_Fired]:
        covered = tuple(sorted(repr(self.input_type.conform(value)) for value in elements))
        return [_Fired(key, context.window(), uuid.uuid4().int, covered)]


def _covering_step(window: OneInputTransformation, input_type: RecordType) -> Transformation:
    """Another step with ``window``'s assigner, trigger, evictor, lateness and mode whose results are the
    elements each firing covers (:class:`_Covering`)."""
    return _another_window(window, replace(window.spec, function=process_spec(_Covering(input_type))))


class _Stamped(ProcessFunction[Any, Any]):
    """Each element as ``(repr of its canonical value, timestamp)``: how late elements are compared."""

    def __init__(self, input_type: RecordType) -> None:
        self.input_type = input_type

    def process_element(self, value: Any, ctx: Any) -> Iterator[tuple[str, int]]:
        yield repr(self.input_type.conform(value)), ctx.timestamp()


def reconcile(build: Callable[[Any], None], late: str, runner: Any = "local") -> Corrections:
    """The corrections the late table under ``late`` makes to the results of the window step of ``build`` (a
    job's ``build(env)``) that writes it; see the module docstring. ``runner`` runs the two jobs (default the
    local runner).

    Raises ``ValueError`` when no window step of the job writes its late table to ``late``, when the table holds
    rows of another step, or when the streaming run does not find the table's elements late (the sources or the
    timing did not replay)."""
    from panes.datastream import StreamEnvironment
    from panes.datastream.fingerprint import operator_uids

    env = StreamEnvironment(runner)
    build(env)
    plan = env.plan()
    window, late_rows = _late_table_step(plan, late)
    uid = operator_uids(plan)[window.id]
    elements = _read(late, late_rows.input_type, uid)
    streamed, found_late = _streamed(env, window, late_rows.input_type)
    _check_replayed(elements, found_late, late)
    complete = _complete(env, window, late_rows.input_type)
    changed = _changed_windows(window.spec, streamed, complete)
    rows = _correction_rows(streamed.table, complete.table, changed)
    result_type = _result_type(plan, env, window, late_rows.input_type)
    if result_type is not None:
        rows = [change_row(result_type.conform(_plain(row)), row[RETRACT]) for row in rows]
    return Corrections(rows, retracting_type(result_type), uid, len(elements), window.spec.accumulation)


def _plain(row: dict[str, Any]) -> Any:
    """A correction row without its flag."""
    return {name: value for name, value in row.items() if name != RETRACT}


# -- the two runs ------------------------------------------------------------------------------------------


@dataclass
class _Run:
    """What one of :func:`reconcile`'s runs leaves: the consumer's table (``table_of``) and, for a discarding
    window, per window the elements its firings covered (``None`` otherwise)."""

    table: Table
    covered: dict[WindowId, Counter[str]] | None


def _streamed(env: Any, window: OneInputTransformation, input_type: RecordType) -> tuple[_Run, list[tuple[str, int]]]:
    """What the streaming job leaves, and the elements it found too late."""
    step = _tagged_step(window)
    late = ListSink()
    tag = window.spec.late_data_tag
    assert tag is not None  # a late table needs the window's late output
    side = SideOutputTransformation(name="late elements", inputs=(step,), tag=tag)
    stamped = _process_step(side, _Stamped(input_type), "Late elements")
    run = _run(env, window, input_type, RuntimeExecutionMode.STREAMING, step, (stamped, late))
    return run, list(late.values)


def _complete(env: Any, window: OneInputTransformation, input_type: RecordType) -> _Run:
    """What a BATCH run over every element leaves."""
    return _run(env, window, input_type, RuntimeExecutionMode.BATCH, _tagged_step(window), None)


def _run(
    env: Any,
    window: OneInputTransformation,
    input_type: RecordType,
    mode: RuntimeExecutionMode,
    step: Transformation,
    late: tuple[Transformation, ListSink] | None,
) -> _Run:
    """Run ``step`` (the tagged window) in ``mode``, with ``late`` (a step and its sink) and, for a discarding
    window, the covering step beside it."""
    emitted, covering = ListSink(), ListSink()
    sinks = [SinkTransformation(name="Sink: reconcile", inputs=(step,), sink=emitted)]
    if late is not None:
        sinks.append(SinkTransformation(name="Sink: reconcile late", inputs=(late[0],), sink=late[1]))
    discarding = window.spec.accumulation == "discarding"
    if discarding:
        covers = _covering_step(window, input_type)
        sinks.append(SinkTransformation(name="Sink: reconcile covered", inputs=(covers,), sink=covering))
    _execute(env, Plan(tuple(sinks)), mode)
    covered: dict[WindowId, Counter[str]] | None = None
    if discarding:
        covered = {
            w: Counter(e for firing in rows for e in firing)
            for w, rows in table_of(covering.values, "discarding").items()
        }
    return _Run(table_of(emitted.values, window.spec.accumulation), covered)


def _tagged_step(window: OneInputTransformation) -> Transformation:
    """Another step computing ``window`` over its input, its results tagged (:class:`_Fired`, no schema)."""
    return _another_window(window, _tagged(window.spec))


def _another_window(window: OneInputTransformation, spec: Any) -> Transformation:
    """Another step over ``window``'s input running the window ``spec`` (a ``WindowSpec``), with no schema."""
    return window.another(
        spec=spec,
        operator_factory=spec.create_operator,
        batch_operator_factory=spec.create_batch_operator,
        output_type=None,
    )


def _process_step(node: Transformation, function: ProcessFunction[Any, Any], name: str) -> Transformation:
    return OneInputTransformation(
        name=name,
        inputs=(node,),
        op_kind="process",
        spec=function,
        operator_factory=lambda: ProcessOperator(function),
        output_type=None,
        parallelism=node.parallelism,
    )


def _execute(env: Any, plan: Plan, mode: RuntimeExecutionMode) -> None:
    before = env.runtime_mode
    env.set_runtime_mode(mode)
    try:
        env.execute_plan(plan, "reconcile")
    finally:
        env.set_runtime_mode(before)


def _check_replayed(elements: list[Late], found: list[tuple[str, int]], late: str) -> None:
    """``ValueError`` unless the streaming run found exactly the late table's elements late."""
    kept = Counter((repr(value), timestamp) for value, timestamp in elements)
    if kept != Counter(found):
        raise ValueError(
            f"the job run again in STREAMING mode finds {len(found)} elements too late where the late table "
            f"{late} holds {len(elements)} (or others): its sources must give the same elements in the same "
            "order and micro-batches again (and processing time must not decide what is late), or the table "
            "belongs to another run"
        )


# -- tables and corrections ------------------------------------------------------------------------------------


def table_of(emitted: Iterable[Any], mode: str) -> Table:
    """The table a consumer keeps from a window step's output ``emitted`` (its results tagged, as
    :func:`reconcile`'s runs emit them), per window: accumulating, the rows of its last firing that emitted any;
    discarding, every row; retracting, what is left when each ``retract`` row removes one equal row."""
    table: Table = {}
    last_firing: dict[WindowId, int] = {}
    for item in emitted:
        retract = mode == "retracting" and bool(item[RETRACT])
        fired: _Fired = item["value"] if mode == "retracting" else item
        window = (fired.key, fired.window)
        rows = table.setdefault(window, [])
        if mode == "accumulating" and last_firing.get(window, fired.firing) != fired.firing:
            rows.clear()
        last_firing[window] = fired.firing
        if retract:
            rows.remove(next(row for row in rows if repr(row) == repr(fired.value)))
        else:
            rows.append(fired.value)
    return {window: rows for window, rows in table.items() if rows}


def _changed_windows(spec: Any, streamed: _Run, complete: _Run) -> list[WindowId]:
    """The windows the corrections change (see the module docstring), in the order of the streamed table and
    then the complete one."""
    windows = list({**streamed.table, **complete.table})
    if streamed.covered is not None and complete.covered is not None:
        nothing: Counter[str] = Counter()
        return [w for w in windows if streamed.covered.get(w, nothing) != complete.covered.get(w, nothing)]
    strip = _pane_free(spec)
    return [
        w
        for w in windows
        if Counter(map(strip, streamed.table.get(w, []))) != Counter(map(strip, complete.table.get(w, [])))
    ]


def _pane_free(spec: Any) -> Callable[[Any], str]:
    """What a result is compared by when pane info does not count: its ``repr`` without ``WindowRow``'s pane
    columns."""
    function = spec.function.process_function
    pane = function.pane if isinstance(function, WindowRow) else None
    if pane is None:
        return repr
    names = {f"{pane}_index", f"{pane}_timing", f"{pane}_last"}

    def strip(value: Any) -> str:
        if isinstance(value, dict):
            return repr({name: field for name, field in value.items() if name not in names})
        return repr(value)

    return strip


def _correction_rows(streamed: Table, complete: Table, windows: list[WindowId]) -> list[dict[str, Any]]:
    """For ``windows``: the retractions of the streamed rows the complete table does not hold, then the complete
    rows the streamed table does not hold."""
    retracted, added = [], []
    for window in windows:
        before, after = streamed.get(window, []), complete.get(window, [])
        old, new = Counter(map(repr, before)), Counter(map(repr, after))
        retracted += [change_row(value, True) for value in _taken(before, old - new)]
        added += [change_row(value, False) for value in _taken(after, new - old)]
    return retracted + added


def _taken(values: list[Any], wanted: Counter[str]) -> list[Any]:
    """The values whose ``repr`` is in ``wanted``, as many of each as it counts, in order."""
    left = Counter(wanted)
    taken = []
    for value in values:
        if left[repr(value)] > 0:
            left[repr(value)] -= 1
            taken.append(value)
    return taken


# -- the result type --------------------------------------------------------------------------------------------


def _result_type(plan: Plan, env: Any, window: OneInputTransformation, input_type: RecordType) -> RecordType | None:
    """The type of the window function's results (without ``retract``): the step's declared or derived output
    type, else the one its built-in aggregation gives with the default trigger, as one mode (the type of a
    result does not depend on when the window fires), or ``None``."""
    from panes.windowing.columnar.plan import columnar_output_type

    spec = window.spec
    declared = resolve_types(plan, env.source_type).get((window.id, None))
    if spec.accumulation == "retracting":
        declared = _without_flag(declared)
    if declared is not None:
        return declared
    plain = replace(spec, trigger=spec.assigner.get_default_trigger(), evictor=None, accumulation="accumulating")
    return columnar_output_type(plain, input_type)


def _without_flag(record_type: RecordType | None) -> RecordType | None:
    if record_type is None:
        return None
    fields = [field for field in record_type.columns() if field.name != RETRACT]
    return RecordType(pa.struct(fields), "dict")


# -- the late table ---------------------------------------------------------------------------------------------

Late = tuple[Any, int]
"""A late table's element: its canonical value and timestamp."""


def _late_table_step(plan: Plan, late: str) -> tuple[OneInputTransformation, LateRows]:
    """The window step writing its late table to ``late``, and its :class:`LateRows`."""
    wanted = os.path.abspath(late)
    by_id = {t.id: t for t in plan.transformations()}
    for sink in plan.sinks:
        target = getattr(sink, "sink", None)
        if not isinstance(target, FileSink) or os.path.abspath(target.path) != wanted:
            continue
        rows = getattr(sink.inputs[0], "spec", None)
        window = by_id.get(rows.window) if isinstance(rows, LateRows) else None
        if isinstance(window, OneInputTransformation) and isinstance(rows, LateRows):
            return window, rows
    raise ValueError(f"no window step of this job writes its late data table to {late}: give the path it was given")


def _read(late: str, input_type: RecordType, uid: str) -> list[Late]:
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


__all__ = ["COLUMNS", "Corrections", "reconcile", "table_of"]
