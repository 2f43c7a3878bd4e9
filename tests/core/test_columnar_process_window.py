"""A ``ProcessWindowFunction`` on the columnar aligned operator (``panes.windowing.columnar.process_panes``) gives
the window operator's results on random typed streams, and the planner keeps what it cannot serve element by
element (``columnar.function_reach``).

A stream is a list of micro-batches, each processed at the watermark reached before it (as the Spark runner
does). Per batch, both operators emit the same results (as a multiset: the order across keys may differ), the
same side outputs and the same late elements; the columnar operator may be restored from its stored log
(a snapshot and changes) between batches, and rescaled to other owners of the keys mid-stream.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from panes.datastream.windowed import WindowSpec
from panes.elements import StreamRecord
from panes.errors import UnsupportedOperationError, UserFunctionError
from panes.functions.aggregators import FieldKey
from panes.operators.rescaling import Owner
from panes.state import ValueStateDescriptor
from panes.tags import OutputTag
from panes.time import LONG_MAX
from panes.types import RecordType
from panes.windowing import (
    EventTimeSessionWindows,
    ProcessWindowFunction,
)
from panes.windowing.columnar.aligned import ColumnarAlignedWindows
from panes.windowing.columnar.plan import plan_or_reason
from panes.windowing.functions import WindowContext
from panes.windowing.implementation import COLUMNAR_ALIGNED, choose, describe
from panes.windowing.internal_functions import process_spec
from panes.windowing.triggers.event_time import EventTimeTrigger
from tests.core.test_columnar_windows import ASSIGNERS as ALL_ASSIGNERS
from tests.core.test_columnar_windows import LATE, watermarks_of, window_operator_batches

SIDE: OutputTag[Any] = OutputTag("side")
PAIRS: OutputTag[Any] = OutputTag("pairs")
INPUT = RecordType.of("key STRING, ts BIGINT, v BIGINT")
assert INPUT is not None

ASSIGNERS = {name: make for name, make in ALL_ASSIGNERS.items() if name != "session"}


class Recording(ProcessWindowFunction[dict[str, Any], Any, str, Any]):
    """Records a pane whole (its elements in order, the window, the watermark) and sends side outputs both ways
    (``context.output`` and yielded ``(tag, value)`` pairs)."""

    def process(self, key: str, context: WindowContext[Any], elements: Iterable[dict[str, Any]]) -> Any:
        items = list(elements)
        window = context.window()
        vs = [e["v"] for e in items]
        context.output(SIDE, {"key": key, "n": len(items)})
        yield {"key": key, "start": window.start, "end": window.end, "vs": vs, "ts": [e["ts"] for e in items]}
        yield {"key": key, "watermark": context.current_watermark(), "max": window.max_timestamp()}
        if len(items) % 2 == 0:
            yield (PAIRS, (key, sum(v for v in vs if v is not None)))


FIRINGS = ValueStateDescriptor("firings")
TOTAL = ValueStateDescriptor("total")


class Stateful(ProcessWindowFunction[dict[str, Any], Any, str, Any]):
    """Uses the whole context: per-window state (its firings), per-key state (a running count over windows),
    pane info, and ``clear`` (a side output with the window's state, which it then clears)."""

    def process(self, key: str, context: WindowContext[Any], elements: Iterable[dict[str, Any]]) -> Any:
        items = list(elements)
        firings = context.window_state().get_state(FIRINGS)
        seen = (firings.value() or 0) + 1
        firings.update(seen)
        total = context.global_state().get_state(TOTAL)
        running = (total.value() or 0) + len(items)
        total.update(running)
        info = context.pane()
        pane = (info.index, info.timing.value, info.is_last)
        yield {"key": key, "end": context.window().end, "vs": [e["v"] for e in items], "seen": seen, "pane": pane}
        context.output(SIDE, {"key": key, "running": running, "watermark": context.current_watermark()})

    def clear(self, context: WindowContext[Any]) -> None:
        firings = context.window_state().get_state(FIRINGS)
        context.output(PAIRS, ("cleared", context.window().end, firings.value()))
        firings.clear()


FUNCTIONS = {"recording": Recording, "stateful": Stateful}


def window_spec(function: Any, assigner: str = "tumbling", lateness: int = 0, late: bool = False) -> WindowSpec:
    return WindowSpec(
        ASSIGNERS[assigner](),
        EventTimeTrigger(),
        None,
        lateness,
        LATE if late else None,
        process_spec(function),
        FieldKey("key"),
        True,
    )


def value(element: tuple[str, int, int | None]) -> dict[str, Any]:
    key, ts, v = element
    return {"key": key, "ts": ts, "v": v}


Outputs = tuple[Counter[str], Counter[str], Counter[str]]
"""One batch's results: main, late and other side outputs (each value with its timestamp), as multisets."""


def generic(window: WindowSpec, data: list[list[Any]]) -> list[Outputs]:
    """The window operator's outputs per batch."""
    per_batch = []
    for collected in window_operator_batches(window, data, value):
        main = Counter(repr((r.value, r.timestamp)) for r in collected.elements if isinstance(r, StreamRecord))
        late = Counter(repr(r.value) for r in collected.side.get(LATE, []))
        tags = (SIDE, PAIRS)
        side = Counter(repr((tag.tag_id, r.value, r.timestamp)) for tag in tags for r in collected.side.get(tag, []))
        per_batch.append((main, late, side))
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
        main: Counter[str] = Counter()
        late: Counter[str] = Counter()
        side: Counter[str] = Counter()
        owners = owner.of_keys(pa.array([e[0] for e in batch], pa.string())) if batch else np.empty(0, np.int64)
        for number, operator in enumerate(operators):
            mine = [e for e, o in zip(batch, owners.tolist(), strict=True) if o == number]
            values = INPUT.encode([INPUT.conform(value(e)) for e in mine])
            seqs = np.arange(seq, seq + len(mine), dtype=np.int64)
            seq += len(mine)
            outputs = [operator.advance(mark), operator.process(values, np.array([e[1] for e in mine], np.int64), seqs)]
            for out in outputs:
                assert not out.panes
                for records in out.records:
                    for v, tag, ts in zip(records.values, records.tags, records.timestamps, strict=True):
                        if tag is None:
                            main[repr((v, ts))] += 1
                        else:
                            side[repr((tag, v, ts))] += 1
                for indices in out.late if plan.late_tag is not None else []:
                    late.update(repr(v) for v in INPUT.decode(values.take(pa.array(indices))))
        per_batch.append((main, late, side))
        if compact is not None:
            for operator, log in zip(operators, logs, strict=True):
                if compact[index % len(compact)]:
                    log[:] = [operator.snapshot_state()]
                else:
                    log.append(operator.snapshot_changes())
    return per_batch


times = st.integers(-300, 1500)
elements = st.tuples(st.sampled_from(["a", "b", "c", "d", "e"]), times, st.one_of(st.none(), st.integers(-5, 9)))
batches = st.lists(st.lists(elements, max_size=8), min_size=1, max_size=8)


@pytest.mark.parametrize("function", list(FUNCTIONS))
@pytest.mark.parametrize("assigner", list(ASSIGNERS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=batches, lateness=st.sampled_from([0, 0, 30, 200]), late=st.booleans())
def test_a_process_window_function_on_columns_equals_the_window_operator(
    function: str, assigner: str, data: list[list[Any]], lateness: int, late: bool
) -> None:
    window = window_spec(FUNCTIONS[function](), assigner, lateness, late)
    expected = generic(window, data)
    assert sum(sum(main.values()) for main, _, _ in expected) > 0 or not any(data)
    assert columnar(window, data) == expected


@pytest.mark.parametrize("function", list(FUNCTIONS))
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
    window = window_spec(FUNCTIONS[function](), assigner, lateness, True)
    expected = generic(window, data)
    assert columnar(window, data, compact, rescale) == expected


# -- what the planner refuses ----------------------------------------------------------------------------------


class Opens(ProcessWindowFunction[Any, Any, Any, Any]):
    def open(self, runtime_context: Any) -> None:
        return None

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield key


class Closes(ProcessWindowFunction[Any, Any, Any, Any]):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield key

    def close(self) -> None:
        return None


def reads_the_runtime_context(function: Any) -> Any:
    return function.get_runtime_context()


class RuntimeContextThroughAHelper(ProcessWindowFunction[Any, Any, Any, Any]):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield reads_the_runtime_context(self)


@pytest.mark.parametrize(
    ("function", "reason"),
    [
        (Opens(), "its function defines open(), which the columnar operator does not call"),
        (Closes(), "its function defines close(), which the columnar operator does not call"),
        (RuntimeContextThroughAHelper(), "its function's code names get_runtime_context"),
        (lambda key, context, elements: [context.runtime_context], "its function's code names runtime_context"),
    ],
)
def test_a_function_that_may_use_the_runtime_context_stays_element_by_element(function: Any, reason: str) -> None:
    planned = plan_or_reason(window_spec(function), INPUT)
    assert isinstance(planned, str) and planned.startswith(reason), planned
    picked = choose(window_spec(function), exact_order=False, columns=True, input_type=INPUT)
    assert picked.kind != COLUMNAR_ALIGNED and picked.not_columnar == planned


def reads_pane_info(context: Any) -> Any:
    return context.pane().index


class PaneInfoThroughAHelper(ProcessWindowFunction[Any, Any, Any, Any]):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield reads_pane_info(context)


def test_pane_info_is_kept_for_functions_whose_code_names_it_and_clear_for_those_that_define_it() -> None:
    for function, pane_info, clears in [
        (Recording(), False, False),
        (Stateful(), True, True),
        (PaneInfoThroughAHelper(), True, False),
        (lambda key, context, elements: [context.pane()], True, False),
    ]:
        planned = plan_or_reason(window_spec(function), INPUT)
        assert not isinstance(planned, str), planned
        assert (planned.pane_info, planned.clears) == (pane_info, clears), function


def test_sessions_and_an_error_output_stay_element_by_element() -> None:
    sessions = window_spec(Recording())
    object.__setattr__(sessions, "assigner", EventTimeSessionWindows.with_gap(50))
    assert plan_or_reason(sessions, INPUT) == (
        "its ProcessWindowFunction runs on session windows, whose columnar operator keeps aggregates only"
    )
    errors = window_spec(Recording())
    object.__setattr__(errors, "errors_to_output", True)
    reason = plan_or_reason(errors, INPUT)
    assert isinstance(reason, str) and reason.startswith("a failing ProcessWindowFunction goes to its error output")


def test_a_plain_function_and_a_callable_run_on_columns_and_explain_says_so() -> None:
    for function in (Recording(), lambda key, context, elements: [len(list(elements))]):
        window = window_spec(function)
        picked = choose(window, exact_order=False, columns=True, input_type=INPUT)
        assert picked.kind == COLUMNAR_ALIGNED and picked.columnar is not None
        assert picked.columnar.process is not None and picked.columnar.output_type is None
        assert describe(picked, window) == (
            "columnar (elements kept as columns; the ProcessWindowFunction called per pane when it fires)"
        )


def fire(function: Any) -> Any:
    plan = plan_or_reason(window_spec(function), INPUT)
    assert not isinstance(plan, str), plan
    operator = ColumnarAlignedWindows(plan)
    operator.process(INPUT.encode([value(("a", 5, 1))]), np.array([5], np.int64), np.array([0], np.int64))
    return operator.advance(LONG_MAX)


def test_pane_info_the_reading_misses_fails_rather_than_giving_other_results() -> None:
    name = "".join(["pa", "ne"])

    def hidden(key: Any, context: Any, elements: Any) -> Any:
        return [getattr(context, name)()]

    with pytest.raises(UnsupportedOperationError, match="only for functions whose code names it"):
        fire(hidden)


def test_a_failing_function_fails_naming_its_key_and_window() -> None:
    with pytest.raises(UserFunctionError) as raised:
        fire(lambda key, context, elements: [1 // 0])
    assert raised.value.key == "a" and (raised.value.window.start, raised.value.window.end) == (0, 100)
    assert isinstance(raised.value.cause, ZeroDivisionError)


def test_a_buffered_element_is_kept_as_arrow_columns() -> None:
    plan = plan_or_reason(window_spec(Recording()), INPUT)
    assert not isinstance(plan, str)
    operator = ColumnarAlignedWindows(plan)
    count = 10_000
    values = INPUT.encode([value((f"k{i}", i % 100, i)) for i in range(count)])
    operator.process(values, np.arange(count, dtype=np.int64) % 100, np.arange(count, dtype=np.int64))
    (table,) = operator.windows.values()
    _, kept = table.state()
    assert isinstance(kept, pa.StructArray) and len(kept) == count and operator.open_panes() == count
    assert kept.nbytes < 40 * count  # Arrow: the key's bytes and offset, two int64s, validity
