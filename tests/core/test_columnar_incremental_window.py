"""A ``reduce`` function and a Python ``AggregateFunction`` on the columnar aligned operator
(``panes.windowing.columnar.incremental_panes``), with and without a window function after them, give the window
operator's results on random typed streams; the planner keeps what it cannot serve element by element.

A stream is a list of micro-batches, each processed at the watermark reached before it (as the Spark runner
does). Per batch, both operators emit the same results in the same order for each key (the order across keys
may differ), the same side outputs and the same late elements; the columnar operator may be restored from its
stored log (a snapshot and changes) between batches, and rescaled to other owners of the keys mid-stream.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from panes.datastream.windowed import WindowSpec
from panes.elements import StreamRecord
from panes.errors import UserFunctionError
from panes.functions import Count
from panes.functions.aggregators import FieldKey
from panes.functions.base import AggregateFunction, ReduceFunction
from panes.operators.rescaling import Owner
from panes.state import ValueStateDescriptor
from panes.time import LONG_MAX
from panes.types import RecordType
from panes.windowing import (
    EventTimeSessionWindows,
    ProcessWindowFunction,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
    WindowFunction,
)
from panes.windowing.assigners.base import WindowAssigner
from panes.windowing.columnar.aligned import ColumnarAlignedWindows
from panes.windowing.columnar.plan import plan_or_reason
from panes.windowing.functions import WindowContext
from panes.windowing.implementation import COLUMNAR_ALIGNED, choose, describe
from panes.windowing.internal_functions import aggregate_spec, as_window_function, reduce_spec
from panes.windowing.rows import WindowRow
from panes.windowing.triggers.event_time import EventTimeTrigger
from tests.core.test_columnar_process_window import PAIRS, SIDE, batches, value
from tests.core.test_columnar_windows import LATE, watermarks_of, window_operator_batches

_INPUT = RecordType.of("key STRING, ts BIGINT, v BIGINT")
assert _INPUT is not None
INPUT: RecordType = _INPUT
ASSIGNERS: dict[str, Callable[[], WindowAssigner[Any, Any]]] = {
    "tumbling": lambda: TumblingEventTimeWindows.of(100),
    "tumbling offset": lambda: TumblingEventTimeWindows.of(100, 30),
    "sliding": lambda: SlidingEventTimeWindows.of(100, 40),
}

# -- the functions ---------------------------------------------------------------------------------------------


def merged(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """A reduce function whose result depends on the order of a pane's elements (a new value each time)."""
    return {"key": a["key"], "ts": b["ts"], "vs": [*(a["vs"] if "vs" in a else [a["v"]]), b["v"]]}


class Folded(ReduceFunction[Any]):
    """:func:`merged` as a ``ReduceFunction`` class, emptying the pane (``None``) when the values so far sum to a
    multiple of 7 (the window operator then keeps the pane empty: it fires nothing until the next element)."""

    def reduce(self, value1: Any, value2: Any) -> Any:
        found = merged(value1, value2)
        total = sum(v for v in found["vs"] if v is not None)
        return None if total % 7 == 0 and total else found


class Collect(AggregateFunction[dict[str, Any], list[Any], Any]):
    """A list accumulator changed in place by ``add`` (as PyFlink users write them): the key, the count, the sum
    and the values in order; ``get_result`` is ``None`` for a pane whose values sum to a multiple of 5 (which
    then emits nothing)."""

    def create_accumulator(self) -> list[Any]:
        return [None, 0, 0, []]

    def add(self, value: dict[str, Any], accumulator: list[Any]) -> list[Any]:
        accumulator[0] = value["key"]
        accumulator[1] += 1
        accumulator[2] += value["v"] or 0
        accumulator[3].append(value["v"])
        return accumulator

    def get_result(self, accumulator: list[Any]) -> Any:
        key, n, total, vs = accumulator
        if total % 5 == 0 and total:
            return None
        return {"key": key, "n": n, "total": total, "vs": list(vs)}

    def merge(self, a: list[Any], b: list[Any]) -> list[Any]:
        return [a[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]]


class Renewed(Collect):
    """:class:`Collect` with a new accumulator from each ``add``, and ``None`` (an empty pane) after a 9."""

    def add(self, value: dict[str, Any], accumulator: list[Any]) -> list[Any] | None:  # type: ignore[override]
        if value["v"] == 9:
            return None
        return [value["key"], accumulator[1] + 1, accumulator[2] + (value["v"] or 0), [*accumulator[3], value["v"]]]


def with_bounds(key: Any, window: Any, results: Iterable[Any]) -> Any:
    """A plain window function (as the benchmark's): each result with its key and window."""
    for result in results:
        yield {"key": key, "start": window.start, "end": window.end, "result": result}


class Apply(WindowFunction[Any, Any, Any, Any]):
    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Any:
        items = list(inputs)
        yield (key, window.end, len(items), items[0])
        if window.end % 200 == 0:
            yield (PAIRS, (key, window.start))


FIRINGS = ValueStateDescriptor("firings")
TOTAL = ValueStateDescriptor("total")


class Stateful(ProcessWindowFunction[Any, Any, Any, Any]):
    """After the aggregate: per-window state, per-key state, pane info, side outputs, the watermark and
    ``clear``."""

    def process(self, key: Any, context: WindowContext[Any], elements: Iterable[Any]) -> Any:
        (result,) = list(elements)
        firings = context.window_state().get_state(FIRINGS)
        seen = (firings.value() or 0) + 1
        firings.update(seen)
        total = context.global_state().get_state(TOTAL)
        running = (total.value() or 0) + result["n"]
        total.update(running)
        info = context.pane()
        yield {"key": key, "end": context.window().end, "result": result, "seen": seen}
        context.output(SIDE, (key, running, (info.index, info.timing.value, info.is_last), context.current_watermark()))

    def clear(self, context: WindowContext[Any]) -> None:
        firings = context.window_state().get_state(FIRINGS)
        context.output(PAIRS, ("cleared", context.window().end, firings.value()))
        firings.clear()


FUNCTIONS = {
    "reduce": lambda: reduce_spec(merged),
    "reduce to None, WindowFunction": lambda: reduce_spec(Folded(), as_window_function(Apply())),
    "aggregate in place, plain function": lambda: aggregate_spec(Collect(), as_window_function(with_bounds)),
    "aggregate renewed": lambda: aggregate_spec(Renewed()),
    "aggregate, ProcessWindowFunction": lambda: aggregate_spec(Collect(), Stateful()),
    "built-in aggregate, plain function": lambda: aggregate_spec(Count(), as_window_function(with_bounds)),
    "aggregate, WindowRow with pane info": lambda: aggregate_spec(Renewed(), WindowRow(key="k", pane="pane")),
}
RESTORED = ["reduce", "aggregate in place, plain function", "aggregate, ProcessWindowFunction"]


def window_spec(function: str, assigner: str = "tumbling", lateness: int = 0, late: bool = False) -> WindowSpec:
    return WindowSpec(
        ASSIGNERS[assigner](),
        EventTimeTrigger(),
        None,
        lateness,
        LATE if late else None,
        FUNCTIONS[function](),
        FieldKey("key"),
        True,
    )


# -- both operators, batch by batch ------------------------------------------------------------------------------


def key_of(value: Any) -> Any:
    """The key a result or side output names (each of the functions above puts it first or under ``key``)."""
    if isinstance(value, dict):
        return value.get("key")
    return value[0] if isinstance(value, tuple) else None


@dataclass
class Outputs:
    """One batch's outputs: main and each side output (each value with its timestamp) in order per key, and the
    late elements and the side outputs of ``clear`` (which knows no key) as multisets."""

    per_key: dict[str, list[str]] = field(default_factory=dict)
    late: Counter[str] = field(default_factory=Counter)
    cleared: Counter[str] = field(default_factory=Counter)

    def add(self, tag: str | None, value: Any, timestamp: int | None) -> None:
        key = key_of(value)
        if key == "cleared":
            self.cleared[repr((value, timestamp))] += 1
        else:
            self.per_key.setdefault(repr((tag, key)), []).append(repr((value, timestamp)))


def generic(window: WindowSpec, data: list[list[Any]]) -> list[Outputs]:
    """The window operator's outputs per batch."""
    per_batch = []
    for collected in window_operator_batches(window, data, value):
        outputs = Outputs()
        for record in collected.elements:
            if isinstance(record, StreamRecord):
                outputs.add(None, record.value, record.timestamp)
        for tag in (SIDE, PAIRS):
            for record in collected.side.get(tag, []):
                outputs.add(tag.tag_id, record.value, record.timestamp)
        outputs.late.update(repr(r.value) for r in collected.side.get(LATE, []))
        per_batch.append(outputs)
    return per_batch


def columnar(
    window: WindowSpec, data: list[list[Any]], compact: list[bool] | None = None, rescale: tuple[int, int] | None = None
) -> list[Outputs]:
    """The columnar operator's outputs per batch. With ``compact``, the operators are rebuilt before every other
    batch from their stored logs: a snapshot, then one change per batch (``compact[b]``: batch ``b`` stores a new
    snapshot instead). With ``rescale`` ``(b, n)``: before batch ``b`` the operators' snapshots are rescaled to
    ``n`` owners of the keys, and each batch's elements go to their key's owner."""
    plan = plan_or_reason(window, INPUT)
    assert not isinstance(plan, str), plan
    assert plan.incremental is not None
    operators = [ColumnarAlignedWindows(plan)]
    logs = [[operators[0].snapshot_state()]]
    owner = Owner(128, 1)
    per_batch = []
    seq = 0
    for index, (mark, batch) in enumerate(zip([*watermarks_of(data), LONG_MAX], [*data, []], strict=True)):
        if rescale is not None and index == rescale[0]:
            owner = Owner(128, rescale[1])
            blobs = operators[0].rescale_snapshots([o.snapshot_state() for o in operators], owner, rescale[1])
            operators = [ColumnarAlignedWindows(plan) for _ in blobs]
            for operator, blob in zip(operators, blobs, strict=True):
                operator.restore_state(blob)
            logs = [[o.snapshot_state()] for o in operators]
        elif compact is not None and index % 2 == 1:
            operators = [ColumnarAlignedWindows(plan) for _ in operators]
            for operator, log in zip(operators, logs, strict=True):
                operator.restore_state(log[0], log[1:])
        outputs = Outputs()
        owners = owner.of_keys(pa.array([e[0] for e in batch], pa.string())) if batch else np.empty(0, np.int64)
        for number, operator in enumerate(operators):
            mine = [e for e, o in zip(batch, owners.tolist(), strict=True) if o == number]
            values = INPUT.encode([INPUT.conform(value(e)) for e in mine])
            seqs = np.arange(seq, seq + len(mine), dtype=np.int64)
            seq += len(mine)
            for out in (operator.advance(mark), operator.process(values, np.array([e[1] for e in mine]), seqs)):
                assert not out.panes
                for records in out.records:
                    for v, tag, ts in zip(records.values, records.tags, records.timestamps, strict=True):
                        outputs.add(tag, v, ts)
                for indices in out.late if plan.late_tag is not None else []:
                    outputs.late.update(repr(v) for v in INPUT.decode(values.take(pa.array(indices))))
        per_batch.append(outputs)
        if compact is not None:
            for operator, log in zip(operators, logs, strict=True):
                if compact[index % len(compact)]:
                    log[:] = [operator.snapshot_state()]
                else:
                    log.append(operator.snapshot_changes())
    return per_batch


@pytest.mark.parametrize("function", list(FUNCTIONS))
@pytest.mark.parametrize("assigner", list(ASSIGNERS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=batches, lateness=st.sampled_from([0, 0, 30, 200]), late=st.booleans())
def test_a_reduce_or_aggregate_function_on_columns_equals_the_window_operator(
    function: str, assigner: str, data: list[list[Any]], lateness: int, late: bool
) -> None:
    window = window_spec(function, assigner, lateness, late)
    assert columnar(window, data) == generic(window, data)


@pytest.mark.parametrize("function", RESTORED)
@pytest.mark.parametrize("assigner", ["tumbling", "sliding"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=batches,
    lateness=st.sampled_from([0, 30, 200]),
    compact=st.lists(st.booleans(), min_size=1, max_size=4),
    rescale=st.one_of(st.none(), st.tuples(st.integers(1, 6), st.integers(1, 4))),
)
def test_restored_and_rescaled_mid_stream_it_still_equals_the_window_operator(
    function: str,
    assigner: str,
    data: list[list[Any]],
    lateness: int,
    compact: list[bool],
    rescale: tuple[int, int] | None,
) -> None:
    window = window_spec(function, assigner, lateness, True)
    assert columnar(window, data, compact, rescale) == generic(window, data)


def test_a_pane_keeps_one_accumulator_not_its_elements() -> None:
    plan = plan_or_reason(window_spec("aggregate in place, plain function"), INPUT)
    assert not isinstance(plan, str)
    operator = ColumnarAlignedWindows(plan)
    count = 3_000
    values = INPUT.encode([value((f"k{i % 10}", i % 100, 1)) for i in range(count)])
    operator.process(values, np.arange(count, dtype=np.int64) % 100, np.arange(count, dtype=np.int64))
    (table,) = operator.windows.values()
    keys, accumulators = table.state()
    assert len(keys) == len(accumulators) == operator.open_panes() == 10
    assert [a[1] for a in accumulators.tolist()] == [count // 10] * 10


# -- failures --------------------------------------------------------------------------------------------------


def fails(function: Any, elements: list[tuple[str, int, int]]) -> tuple[UserFunctionError, UserFunctionError]:
    """The error of ``function`` (a window function spec) on ``elements`` (one batch, then the end of time),
    element by element and on columns."""
    window = WindowSpec(ASSIGNERS["tumbling"](), EventTimeTrigger(), None, 0, None, function, FieldKey("key"), True)
    with pytest.raises(UserFunctionError) as expected:
        list(window_operator_batches(window, [elements], value))
    with pytest.raises(UserFunctionError) as found:
        columnar(window, [elements])
    return expected.value, found.value


class FailingAdd(Collect):
    def add(self, value: dict[str, Any], accumulator: list[Any]) -> list[Any]:
        return [1 // (value["v"] - 3)]


class FailingResult(Collect):
    def get_result(self, accumulator: list[Any]) -> Any:
        return 1 // (accumulator[2] - 8)


@pytest.mark.parametrize(
    "function",
    [
        reduce_spec(lambda a, b: {**a, "v": 1 // (b["v"] - 3)}),
        aggregate_spec(FailingAdd()),
        aggregate_spec(FailingResult()),
        aggregate_spec(Collect(), as_window_function(lambda key, window, results: [1 // (window.end - 200)])),
    ],
    ids=["reduce", "add", "get_result", "window function"],
)
def test_a_failing_function_fails_naming_the_key_and_window_element_by_element_does(function: Any) -> None:
    expected, found = fails(function, [("a", 5, 1), ("b", 7, 2), ("b", 150, 5), ("b", 160, 3)])
    assert (found.key, found.window) == (expected.key, expected.window)
    assert (found.key, found.window.start, found.window.end) == ("b", 100, 200)
    assert type(found.cause) is type(expected.cause) is ZeroDivisionError


# -- what the planner refuses ----------------------------------------------------------------------------------


class OpensReduce(ReduceFunction[Any]):
    def open(self, runtime_context: Any) -> None:
        return None

    def reduce(self, value1: Any, value2: Any) -> Any:
        return value1


class ClosesAggregate(Collect):
    def close(self) -> None:
        return None


class RuntimeContextAggregate(Collect):
    def get_result(self, accumulator: list[Any]) -> Any:
        return self.get_runtime_context()  # type: ignore[attr-defined]


class OpensWindowFunction(WindowFunction[Any, Any, Any, Any]):
    def open(self, runtime_context: Any) -> None:
        return None

    def apply(self, key: Any, window: Any, inputs: Any) -> Any:
        yield key


@pytest.mark.parametrize(
    ("function", "reason"),
    [
        (reduce_spec(OpensReduce()), "its reduce function defines open(), which the columnar operator does not call"),
        (aggregate_spec(ClosesAggregate()), "its aggregate function defines close()"),
        (aggregate_spec(RuntimeContextAggregate()), "its aggregate function's code names get_runtime_context"),
        (reduce_spec(merged, as_window_function(OpensWindowFunction())), "its window function defines open()"),
    ],
)
def test_a_function_that_may_use_the_runtime_context_stays_element_by_element(function: Any, reason: str) -> None:
    window = WindowSpec(ASSIGNERS["tumbling"](), EventTimeTrigger(), None, 0, None, function, FieldKey("key"), True)
    planned = plan_or_reason(window, INPUT)
    assert isinstance(planned, str) and planned.startswith(reason), planned
    picked = choose(window, exact_order=False, columns=True, input_type=INPUT)
    assert picked.kind != COLUMNAR_ALIGNED and picked.not_columnar == planned


def test_sessions_and_an_error_output_stay_element_by_element() -> None:
    for function, kind in (("reduce", "reduce"), ("aggregate renewed", "aggregate")):
        sessions = window_spec(function)
        object.__setattr__(sessions, "assigner", EventTimeSessionWindows.with_gap(50))
        assert plan_or_reason(sessions, INPUT) == (
            f"its {kind} function runs on session windows, whose columnar operator keeps built-in aggregates only"
        )
        errors = window_spec(function)
        object.__setattr__(errors, "errors_to_output", True)
        reason = plan_or_reason(errors, INPUT)
        assert reason == f"a failing {kind} function goes to its error output (side_output_errors), element by element"


def test_reduce_and_aggregate_run_on_columns_and_explain_says_so() -> None:
    for function in FUNCTIONS:
        window = window_spec(function)
        picked = choose(window, exact_order=False, columns=True, input_type=INPUT)
        assert picked.kind == COLUMNAR_ALIGNED and picked.columnar is not None, function
        assert picked.columnar.incremental is not None and picked.columnar.output_type is None
        assert not picked.columnar.keeps_elements
        assert describe(picked, window) == (
            "columnar (one accumulator per pane, folded as micro-batches arrive; the window function called per "
            "pane when it fires)"
        )
    plan = plan_or_reason(window_spec("aggregate, WindowRow with pane info"), INPUT)
    assert not isinstance(plan, str) and plan.pane_info


def test_a_window_function_inside_panes_adapters_is_read_too() -> None:
    """``reconcile`` tags a job's window function inside an adapter of its own (``_Tagging.inner``): the planner
    reads the function inside, for pane info and for what keeps it element by element."""
    from panes.datastream.reconcile import _Tagging

    for inner, reason, pane_info in [
        (WindowRow(key="k", pane="pane"), None, True),
        (WindowRow(key="k"), None, False),
        (as_window_function(OpensWindowFunction()), "its window function defines open()", False),
    ]:
        window = window_spec("aggregate renewed")
        object.__setattr__(window, "function", aggregate_spec(Renewed(), _Tagging(inner)))
        planned = plan_or_reason(window, INPUT)
        if reason is None:
            assert not isinstance(planned, str) and planned.pane_info == pane_info, planned
        else:
            assert isinstance(planned, str) and planned.startswith(reason), planned
