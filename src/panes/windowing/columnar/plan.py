"""When a keyed window can be evaluated on columns, and the types it then has.

A window runs columnar when its input values are typed records (a struct), it is keyed by one of their
fields (``key_by("user")``), its assigner is ``TumblingEventTimeWindows`` (aligned), ``SlidingEventTimeWindows``
or ``EventTimeSessionWindows`` with a fixed gap, with the default ``EventTimeTrigger`` and no evictor, and its
function is an ``AggregateFunction`` with a vectorised form (built-ins, see ``panes.functions.aggregates``)
followed by nothing or by ``WindowRow``, or (tumbling and sliding windows) a ``process_batch`` function
(``panes.windowing.batch_function``), a ``ProcessWindowFunction`` that needs no runtime context
(``panes.windowing.columnar.function_reach``), or a ``reduce`` function or another (Python) ``AggregateFunction``
followed by nothing or by a window function (a ``WindowFunction``, a plain function or a ``ProcessWindowFunction``),
none of which needs a runtime context (``panes.windowing.columnar.incremental_panes``: one Python accumulator per
pane). Allowed lateness and a late-data side output are supported.
Everything else runs on the element-by-element window operator; both give the same results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from panes.functions.aggregates import Aggregates, BuiltinAggregate, vectorized_form
from panes.functions.aggregators import FieldKey
from panes.functions.base import AggregateFunction, ReduceFunction
from panes.types import RecordType
from panes.windowing.assigners.session import EventTimeSessionWindows
from panes.windowing.assigners.sliding import SlidingEventTimeWindows
from panes.windowing.assigners.stagger import WindowStagger
from panes.windowing.assigners.tumbling import TumblingEventTimeWindows
from panes.windowing.batch_function import BatchWindowFunction
from panes.windowing.columnar.function_reach import Reach, reach
from panes.windowing.functions import ProcessWindowFunction
from panes.windowing.internal_functions import PassThroughWindowFunction
from panes.windowing.rows import WindowRow
from panes.windowing.triggers.event_time import EventTimeTrigger


class WindowDescription(Protocol):
    """What a window transformation says about itself (``panes.datastream.windowed.WindowSpec``)."""

    @property
    def assigner(self) -> Any: ...

    @property
    def trigger(self) -> Any: ...

    @property
    def evictor(self) -> Any: ...

    @property
    def allowed_lateness(self) -> int: ...

    @property
    def late_data_tag(self) -> Any: ...

    @property
    def function(self) -> Any: ...

    @property
    def key_selector(self) -> Any: ...


@dataclass(frozen=True)
class Part:
    """One built-in aggregation: its name in the result, what it computes, and the input field it reads
    (its index in the input struct; ``None`` for ``Count``)."""

    name: str
    aggregate: BuiltinAggregate
    field: int | None
    field_type: pa.DataType | None


@dataclass(frozen=True)
class ColumnarWindow:
    """A window the columnar operators run (see the module docstring).

    ``kind`` is ``"aligned"`` (tumbling and sliding: ``size``, ``slide``, ``offset``; ``tumbling`` tells
    which, as they differ at the ends of the long range) or ``"session"`` (``gap``). ``key`` is the index of
    the key field in the input struct; ``result_type`` the type of a pane's result and ``output_type`` that of
    the emitted values (the result, or ``WindowRow``'s row)."""

    kind: str
    size: int
    slide: int
    offset: int
    gap: int
    key: int
    parts: tuple[Part, ...]
    scalar: bool
    form: Aggregates | None
    row: WindowRow | None
    lateness: int
    late_tag: str | None
    input_type: RecordType
    result_type: pa.DataType
    output_type: RecordType | None
    tumbling: bool = False
    batch: BatchWindowFunction | None = None
    """The user's function of panes as columns (``process_batch``), which keeps every element of a pane; ``None``
    for built-in aggregations (``parts`` and ``form``)."""
    process: ProcessWindowFunction[Any, Any, Any, Any] | None = None
    """The user's ``ProcessWindowFunction``, called per pane with the pane's elements decoded
    (``panes.windowing.columnar.process_panes``), or, after ``incremental``, with the pane's result alone; its
    results are Python values, so ``output_type`` is ``None`` (the step's declared type, if any, is checked where
    they leave)."""
    incremental: ReduceFunction[Any] | AggregateFunction[Any, Any, Any] | None = None
    """The user's ``reduce`` function (``incremental_kind`` ``"reduce"``) or ``AggregateFunction``
    (``"aggregate"``), folding each pane's elements into one Python accumulator as they arrive
    (``panes.windowing.columnar.incremental_panes``); ``process`` is then the window function after it
    (``PassThroughWindowFunction`` when there is none)."""
    incremental_kind: str | None = None

    pane_info: bool = False
    """Whether the ``ProcessWindowFunction`` asks for pane info (its code names ``pane``: ``function_reach``)."""
    clears: bool = False
    """Whether the ``ProcessWindowFunction`` defines ``clear``, which the operator calls at a window's cleanup."""

    @property
    def keeps_elements(self) -> bool:
        """Whether a window keeps its elements (a ``process_batch`` or ``ProcessWindowFunction`` function) rather
        than accumulators (built-in aggregates' columns, or ``incremental``'s Python accumulators)."""
        return self.batch is not None or (self.process is not None and self.incremental is None)


def _field_index(struct: pa.StructType, field: int | str) -> int | None:
    if isinstance(field, str):
        index = struct.get_field_index(field)
        return None if index < 0 else index
    return field if 0 <= field < struct.num_fields else None


def _part_type(part: BuiltinAggregate, field_type: pa.DataType | None) -> pa.DataType | None:
    """The result type of a built-in aggregation of a field of ``field_type`` (``None``: not columnar)."""
    if part.kind == "count":
        return pa.int64()
    if field_type is None:
        return None
    numeric_int = pa.types.is_integer(field_type)
    numeric_float = pa.types.is_floating(field_type)
    if part.kind == "sum":
        return pa.int64() if numeric_int else pa.float64() if numeric_float else None
    if part.kind == "avg":
        return pa.float64() if numeric_int or numeric_float else None
    if part.kind in ("min", "max"):
        return field_type if numeric_int or numeric_float else None
    return None


def plan_columnar(spec: WindowDescription, input_type: RecordType | None) -> ColumnarWindow | None:
    """The columnar form of the window ``spec`` over values of ``input_type``, or ``None`` when it has none
    (runners ask ``panes.windowing.implementation.choose``, which uses :func:`plan_or_reason`)."""
    planned = plan_or_reason(spec, input_type)
    return planned if isinstance(planned, ColumnarWindow) else None


AGGREGATE_IDIOM = "aggregate(Count()), aggregate(Sum('field')), aggregate(Aggregates(...)), optionally with WindowRow"


def plan_or_reason(spec: WindowDescription, input_type: RecordType | None) -> ColumnarWindow | str:
    """The columnar form of ``spec`` over values of ``input_type``, or why it has none and what would give it
    one (see the module docstring)."""
    if input_type is None:
        return (
            "its input has no declared type: declare one upstream (output_type= on the step before, a typed "
            "source such as from_files or from_collection(..., type_info=...))"
        )
    if input_type.shape == "scalar":
        return "its input values are not records: give them a row type with named fields"
    if spec.evictor is not None:
        return "it has an evictor"
    mode = getattr(spec, "accumulation", "accumulating")
    if mode != "accumulating":
        return f"its fired panes are {mode}: the columnar path accumulates"
    if type(spec.trigger) is not EventTimeTrigger:
        return "its trigger is not the default event-time trigger"
    if not isinstance(spec.key_selector, FieldKey):
        return "it is keyed by a function: key by a field name instead (key_by('user'))"
    assigner = spec.assigner
    if type(assigner) is TumblingEventTimeWindows and assigner.stagger is WindowStagger.ALIGNED:
        kind, size, slide, offset, gap = "aligned", assigner.size, assigner.size, assigner.global_offset, 0
    elif type(assigner) is SlidingEventTimeWindows:
        kind, size, slide, offset, gap = "aligned", assigner.size, assigner.slide, assigner.offset, 0
    elif type(assigner) is EventTimeSessionWindows:
        kind, size, slide, offset, gap = "session", 0, 0, 0, assigner.gap
    else:
        return "its windows are not event-time tumbling (aligned), sliding or fixed-gap session windows"
    struct = input_type.arrow_type
    key = _field_index(struct, spec.key_selector.field)
    if key is None:
        return f"its key field {spec.key_selector.field!r} is not a field of its input type"
    late = spec.late_data_tag
    common: dict[str, Any] = {
        "kind": kind,
        "size": size,
        "slide": slide,
        "offset": offset,
        "gap": gap,
        "key": key,
        "lateness": spec.allowed_lateness,
        "late_tag": None if late is None else late.tag_id,
        "input_type": input_type,
        "tumbling": type(assigner) is TumblingEventTimeWindows,
    }
    function = spec.function
    if isinstance(function.process_function, BatchWindowFunction):
        return _plan_batch(spec, input_type, function.process_function, common)
    process = function.process_function
    if function.kind == "process" and isinstance(process, ProcessWindowFunction):
        return _plan_process(spec, process, common)
    if function.kind == "reduce" and function.reduce is not None:
        return _plan_incremental(spec, "reduce", function.reduce, process, common)
    if function.kind != "aggregate" or function.aggregate is None:
        return f"its function is a {function.kind}, not a built-in aggregate: {AGGREGATE_IDIOM}"
    form = vectorized_form(function.aggregate)
    row = process if isinstance(process, WindowRow) else None
    if form is None or (row is None and type(process) is not PassThroughWindowFunction):
        # a Python AggregateFunction, or a built-in one followed by a window function other than WindowRow
        if form is not None and kind == "session":
            return "its window function after the aggregate is not WindowRow (which adds the key and window as columns)"
        return _plan_incremental(spec, "aggregate", function.aggregate, process, common)
    if row is not None and row.pane is not None and kind == "session":
        return "its WindowRow adds pane info (pane=...), which sessions count per firing element by element"
    parts = []
    result_fields = []
    for name, part in form.parts.items():
        index = None if part.field is None else _field_index(struct, part.field)
        if part.field is not None and index is None:
            return f"the aggregate's field {part.field!r} is not a field of its input type"
        field_type = None if index is None else struct.field(index).type
        part_type = _part_type(part, field_type)
        if part_type is None:
            return f"the aggregate cannot run on columns of the type of {part.field!r} ({field_type})"
        parts.append(Part(name, part, index, field_type))
        result_fields.append(pa.field(name, part_type))
    result_type = result_fields[0].type if form.scalar else pa.struct(result_fields)
    if row is not None:
        try:
            output = row.row_type(struct.field(key).type, result_type)
        except (TypeError, ValueError) as error:
            return f"WindowRow cannot make its row from the key and the result ({error})"
    else:
        output = RecordType(result_type, "scalar" if form.scalar else "dict")
    return ColumnarWindow(
        parts=tuple(parts),
        scalar=form.scalar,
        form=form,
        row=row,
        result_type=result_type,
        output_type=output,
        **common,
    )


def _plan_batch(
    spec: WindowDescription, input_type: RecordType, function: BatchWindowFunction, common: dict[str, Any]
) -> ColumnarWindow | str:
    """The columnar form of a window evaluated by ``process_batch``'s function (``common``: the fields it shares
    with every columnar window), or why it has none."""
    if common["kind"] != "aligned":
        return "its process_batch function runs on session windows, whose columnar operator keeps aggregates only"
    if getattr(spec, "errors_to_output", False):
        return "a failing process_batch function goes to its error output (side_output_errors), pane by pane"
    if input_type.arrow_type != function.input_type.arrow_type:
        return f"its input at run time ({input_type!r}) is not the type process_batch was given"
    output = function.output_type
    return ColumnarWindow(
        parts=(),
        scalar=False,
        form=None,
        row=None,
        result_type=output.arrow_type,
        output_type=output,
        batch=function,
        **common,
    )


def _plan_process(
    spec: WindowDescription, function: ProcessWindowFunction[Any, Any, Any, Any], common: dict[str, Any]
) -> ColumnarWindow | str:
    """The columnar form of a window evaluated by a ``ProcessWindowFunction`` over its buffered elements, or why
    it has none (``panes.windowing.columnar.function_reach`` says which functions the columnar context serves)."""
    if common["kind"] != "aligned":
        return "its ProcessWindowFunction runs on session windows, whose columnar operator keeps aggregates only"
    if getattr(spec, "errors_to_output", False):
        return "a failing ProcessWindowFunction goes to its error output (side_output_errors), pane by pane"
    found = reach(function)
    if found.reason is not None:
        return found.reason
    return _python_panes(function, found, common)


def _plan_incremental(
    spec: WindowDescription,
    kind: str,
    function: ReduceFunction[Any] | AggregateFunction[Any, Any, Any],
    process: ProcessWindowFunction[Any, Any, Any, Any],
    common: dict[str, Any],
) -> ColumnarWindow | str:
    """The columnar form of a window evaluated by a ``reduce`` function or a Python ``AggregateFunction``
    (``kind``), one accumulator per pane, then the window function ``process``, or why it has none."""
    if common["kind"] != "aligned":
        return f"its {kind} function runs on session windows, whose columnar operator keeps built-in aggregates only"
    if getattr(spec, "errors_to_output", False):
        return f"a failing {kind} function goes to its error output (side_output_errors), element by element"
    folding = reach(function, f"{kind} function")
    if folding.reason is not None:
        return folding.reason
    found = reach(process, "window function")
    if found.reason is not None:
        return found.reason
    return _python_panes(process, found, common, incremental=function, incremental_kind=kind)


def _python_panes(
    process: ProcessWindowFunction[Any, Any, Any, Any], found: Reach, common: dict[str, Any], **incremental: Any
) -> ColumnarWindow:
    """A columnar window whose panes a Python ``process`` function evaluates (its results Python values), what
    ``function_reach`` ``found`` it to need, and (``incremental``) the reduce or aggregate function before it."""
    return ColumnarWindow(
        parts=(),
        scalar=False,
        form=None,
        row=None,
        result_type=pa.null(),
        output_type=None,
        process=process,
        pane_info=found.pane_info,
        clears=found.clears,
        **incremental,
        **common,
    )


def columnar_output_type(spec: WindowDescription, input_type: RecordType | None) -> RecordType | None:
    """The type of a window's results when it runs columnar (what ``Derived`` output types compute)."""
    plan = plan_columnar(spec, input_type)
    return None if plan is None else plan.output_type
