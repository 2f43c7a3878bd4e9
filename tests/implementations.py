"""Every window implementation, behind one way to replay a scenario file: the fixture that runs the window suites on
each implementation that supports the case.

``panes.windowing.implementation.choose`` picks one of five implementations for a window (``general``,
``evicting``, ``aligned``, ``columnar aligned``, ``columnar sessions``); the columnar aligned one is replayed
four times, with a ``process_batch`` function, with a ``ProcessWindowFunction`` (:data:`COLUMNAR_PROCESS`), and
with a ``reduce`` function and a Python ``AggregateFunction`` followed by one (:data:`COLUMNAR_REDUCE`,
:data:`COLUMNAR_AGGREGATE`).
:func:`verdict` asks it, per implementation, whether that one runs a scenario's window (``None``) or why not;
:func:`replay` replays the scenario on it and returns its panes and late elements as the scenario files record them
(``panes.testing.scenario.collect_result``). The columnar operators take typed records keyed by a field (``key
STRING, value BIGINT, ts BIGINT, seq BIGINT``) and, for ``columnar aligned``, a ``process_batch`` function
recording each pane's elements in order (:func:`pane_rows`) or a ``ProcessWindowFunction`` recording what the
scenarios' own pane function records (:class:`RecordPanes`), by itself or after a reduce function or an
``AggregateFunction`` that collect a pane's elements in order (:func:`collected`, :class:`Collected`, whose
results :class:`RecordFolded` records); ``columnar sessions`` run built-in
aggregates, so they record each pane's count and sum (:data:`FIELDS` says what each implementation records).
Elements reach a columnar operator one per batch, each at the watermark before it, as the harness feeds them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from panes.datastream.windowed import WindowSpec
from panes.functions import Aggregates, Count, Sum
from panes.functions.aggregators import FieldKey
from panes.functions.base import AggregateFunction
from panes.testing import OneInputOperatorHarness, WindowOperatorHarness
from panes.testing.scenario import LATE, PANE_FIELDS, Scenario, collect_result, key_of
from panes.time import LONG_MAX
from panes.types import RecordType
from panes.windowing.aligned import AlignedWindowOperator
from panes.windowing.batch_function import BatchWindowFunction
from panes.windowing.columnar.output import emitted, pane_values
from panes.windowing.functions import ProcessWindowFunction, WindowContext
from panes.windowing.implementation import (
    ALIGNED,
    COLUMNAR_ALIGNED,
    COLUMNAR_SESSIONS,
    EVICTING,
    GENERAL,
    Implementation,
    choose,
    columnar_operator,
)
from panes.windowing.internal_functions import aggregate_spec, process_spec, reduce_spec
from panes.windowing.rows import WindowRow
from panes.windowing.triggers.base import Trigger

COLUMNAR_PROCESS = "columnar aligned, ProcessWindowFunction"
"""The columnar aligned operator calling a ``ProcessWindowFunction`` per pane (``columnar.process_panes``)."""
COLUMNAR_REDUCE = "columnar aligned, reduce"
COLUMNAR_AGGREGATE = "columnar aligned, AggregateFunction"
"""The columnar aligned operator folding each pane into one accumulator with a reduce function or a Python
``AggregateFunction``, then calling a ``ProcessWindowFunction`` with its result (``columnar.incremental_panes``)."""
IMPLEMENTATIONS = (
    *(GENERAL, EVICTING, ALIGNED, COLUMNAR_ALIGNED, COLUMNAR_PROCESS),
    *(COLUMNAR_REDUCE, COLUMNAR_AGGREGATE, COLUMNAR_SESSIONS),
)
COLUMNAR = (COLUMNAR_ALIGNED, COLUMNAR_PROCESS, COLUMNAR_REDUCE, COLUMNAR_AGGREGATE, COLUMNAR_SESSIONS)
KIND = {COLUMNAR_PROCESS: COLUMNAR_ALIGNED, COLUMNAR_REDUCE: COLUMNAR_ALIGNED, COLUMNAR_AGGREGATE: COLUMNAR_ALIGNED}
"""The chooser's kind of each implementation that is not one itself."""

RECORD = RecordType.of("key STRING, value BIGINT, ts BIGINT, seq BIGINT")
"""The scenario elements as records, for the columnar operators."""
assert RECORD is not None
PANE_ROWS = "key STRING, window_end BIGINT, count BIGINT, sum BIGINT, values STRING, seqs STRING, ts STRING"

WITHOUT_ORDER = [f for f in PANE_FIELDS if f != "emit_seq"]
FIELDS = {
    GENERAL: PANE_FIELDS,
    EVICTING: PANE_FIELDS,
    # panes of different keys firing together may leave in another order (emit_seq)
    ALIGNED: WITHOUT_ORDER,
    # a process_batch function sees a pane's elements, not the watermark
    COLUMNAR_ALIGNED: [
        *("key", "window_start", "window_end", "values", "values_in_order", "count", "sum", "fire_index"),
        *("seqs", "seqs_in_order", "ts_in_order"),
    ],
    COLUMNAR_PROCESS: WITHOUT_ORDER,
    COLUMNAR_REDUCE: WITHOUT_ORDER,
    COLUMNAR_AGGREGATE: WITHOUT_ORDER,
    COLUMNAR_SESSIONS: ["key", "window_start", "window_end", "count", "sum", "fire_index"],
}
"""The pane fields each implementation records (late elements: all of theirs but ``emit_seq`` off the general
and evicting operators)."""


def pane_rows(panes: pd.DataFrame) -> pd.DataFrame:
    """A ``process_batch`` function: per pane, its count and sum, and its values, seqs and timestamps in the order
    the pane holds them (comma-separated)."""

    def joined(column: pd.Series) -> str:
        return ",".join(str(int(v)) for v in column)

    grouped = panes.groupby(["key", "window_end"], sort=False)
    return grouped.agg(
        count=("value", "size"),
        sum=("value", "sum"),
        values=("value", joined),
        seqs=("seq", joined),
        ts=("ts", joined),
    ).reset_index()


class RecordPanes(ProcessWindowFunction[dict[str, Any], dict[str, Any], Any, Any]):
    """What ``panes.testing.scenario.PaneFunction`` records of a pane (with ``pane_info``, also its pane info), over
    :data:`RECORD` records."""

    def __init__(self, pane_info: bool = False) -> None:
        self.pane_info = pane_info

    def process(self, key: Any, context: WindowContext[Any], elements: Iterable[dict[str, Any]]) -> Any:
        items = list(elements)
        window = context.window()
        values = [e["value"] for e in items]
        watermark = context.current_watermark()
        pane = {
            "key": key,
            "window_start": window.start,
            "window_end": window.end,
            "values": sorted(values),
            "values_in_order": values,
            "count": len(items),
            "sum": sum(values),
            "watermark": watermark,
            "end_of_input": watermark == LONG_MAX,
            "seqs": sorted(e["seq"] for e in items),
            "seqs_in_order": [e["seq"] for e in items],
            "ts_in_order": [e["ts"] for e in items],
        }
        if self.pane_info:
            info = context.pane()
            pane.update(pane_index=info.index, pane_timing=info.timing.value, pane_is_last=info.is_last)
        yield pane


def collected(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """A reduce function collecting a pane's elements in order (a new value each time)."""
    return {"elements": [*a.get("elements", [a]), b]}


class Collected(AggregateFunction[dict[str, Any], list[Any], list[Any]]):
    """An ``AggregateFunction`` collecting a pane's elements in order, in a list it changes in place."""

    def create_accumulator(self) -> list[Any]:
        return []

    def add(self, value: dict[str, Any], accumulator: list[Any]) -> list[Any]:
        accumulator.append(value)
        return accumulator

    def get_result(self, accumulator: list[Any]) -> list[Any]:
        return list(accumulator)

    def merge(self, a: list[Any], b: list[Any]) -> list[Any]:
        return a + b


class RecordFolded(RecordPanes):
    """:class:`RecordPanes` over the elements :func:`collected` or :class:`Collected` folded a pane into."""

    def process(self, key: Any, context: WindowContext[Any], elements: Iterable[Any]) -> Any:
        (result,) = elements
        if isinstance(result, dict):
            result = result.get("elements", [result])
        return super().process(key, context, result)


def window_spec(scenario: Scenario, implementation: str) -> WindowSpec:
    """The scenario's window as a window step: keyed by a function over tuples with the scenario's own pane
    function for the element-by-element operators, keyed by the ``key`` field of :data:`RECORD` records with a
    columnar function for the columnar ones."""
    setup = scenario.window_setup()
    trigger = setup.trigger or setup.assigner.get_default_trigger()
    if implementation == COLUMNAR_ALIGNED:
        function = process_spec(BatchWindowFunction(pane_rows, RECORD, PANE_ROWS, "pandas"))
    elif implementation == COLUMNAR_PROCESS:
        function = process_spec(RecordPanes(scenario.pane_function().pane_info))
    elif implementation == COLUMNAR_REDUCE:
        function = reduce_spec(collected, RecordFolded(scenario.pane_function().pane_info))
    elif implementation == COLUMNAR_AGGREGATE:
        function = aggregate_spec(Collected(), RecordFolded(scenario.pane_function().pane_info))
    elif implementation == COLUMNAR_SESSIONS:
        function = aggregate_spec(Aggregates(count=Count(), sum=Sum("value")), WindowRow())
    else:
        function = process_spec(scenario.pane_function())
    columnar = implementation in COLUMNAR
    key = FieldKey("key") if columnar else key_of
    return WindowSpec(
        setup.assigner,
        trigger,
        setup.evictor,
        setup.allowed_lateness,
        setup.late_data_tag,
        function,
        key,
        True,
        setup.accumulation,
        key_time=setup.key_time,
    )


def chosen(scenario: Scenario, implementation: str) -> Implementation:
    """What the chooser picks for the scenario's window on the host that would run ``implementation``: the
    harness (exact order), a host without it (the Spark runner's element path), one that runs columns."""
    spec = window_spec(scenario, implementation)
    if implementation in COLUMNAR:
        return choose(spec, exact_order=False, columns=True, input_type=RECORD)
    return choose(spec, exact_order=implementation in (GENERAL, EVICTING))


def verdict(scenario: Scenario, implementation: str) -> str | None:
    """``None`` when ``implementation`` runs the scenario's window, else why not (the chooser's reason)."""
    if scenario.has_processing_time() and implementation not in (GENERAL, EVICTING):
        return "it moves processing time, which only the element-by-element operators' harness replays"
    picked = chosen(scenario, implementation)
    if picked.kind == KIND.get(implementation, implementation):
        return None
    return picked.not_columnar or f"the chooser picks {picked.kind}"


def replay(scenario: Scenario, implementation: str) -> dict[str, Any]:
    """The scenario's panes and late elements on ``implementation`` (which must run it: :func:`verdict`)."""
    reason = verdict(scenario, implementation)
    if reason is not None:
        raise ValueError(f"{implementation} does not run {scenario.name}: {reason}")
    if implementation in COLUMNAR:
        return _replay_columnar(scenario, chosen(scenario, implementation))
    if implementation == ALIGNED:
        # the operator a host that need not keep Flink's order across keys creates (the Spark runner's)
        operator = window_spec(scenario, ALIGNED).create_aligned_operator()
        assert isinstance(operator, AlignedWindowOperator)
        return replay_on(scenario, OneInputOperatorHarness(operator))
    return replay_on(scenario, harness_for(scenario))


def harness_for(
    scenario: Scenario, trigger: Trigger[Any, Any] | None = None, accumulation: str | None = None
) -> WindowOperatorHarness:
    """The window operator (evicting when the scenario has an evictor) of the scenario on the harness, with
    ``trigger`` and ``accumulation`` instead of its own when given."""
    setup = scenario.window_setup()
    return WindowOperatorHarness(
        setup.assigner,
        scenario.pane_function(),
        key_selector=key_of,
        trigger=setup.trigger if trigger is None else trigger,
        evictor=setup.evictor,
        allowed_lateness=setup.allowed_lateness,
        late_data_tag=setup.late_data_tag,
        accumulation=setup.accumulation if accumulation is None else accumulation,
        key_time=setup.key_time,
    )


class Feeder:
    """Feeds scenario steps (:meth:`Scenario.steps`) to harnesses, recording what they emit, main and late output
    in emission order, as ``collect_result`` items."""

    def __init__(self) -> None:
        self.items: list[tuple[str, Any]] = []

    def drain(self, harness: OneInputOperatorHarness) -> None:
        self.items.extend(("main", value) for value in harness.extract_output_values())
        self.items.extend(("late", record) for record in harness.get_side_output(LATE))
        harness.clear_output()

    def step(self, harness: OneInputOperatorHarness, kind: str, item: Any) -> None:
        if kind == "element":
            harness.process_element(item, item[2])
        elif kind == "processing_time":
            harness.set_processing_time(item)
        else:
            harness.process_watermark(item)
        self.drain(harness)


def replay_on(scenario: Scenario, harness: OneInputOperatorHarness) -> dict[str, Any]:
    """Feed the scenario's steps to ``harness``, recording main and late output in emission order."""
    feeder = Feeder()
    for kind, item in scenario.steps():
        feeder.step(harness, kind, item)
    feeder.step(harness, "watermark", scenario.final_watermark)
    return collect_result(feeder.items)


def _replay_columnar(scenario: Scenario, implementation: Implementation) -> dict[str, Any]:
    plan = implementation.columnar
    assert plan is not None
    operator: Any = columnar_operator(plan)
    emitted_items: list[tuple[str, Any]] = []

    def record(out: Any, batch: list[tuple[Any, ...]]) -> None:
        for all_panes in out.panes:
            panes = emitted(plan, all_panes)
            rows = plan.output_type.decode(pane_values(plan, panes))
            starts, ends = panes.starts.tolist(), panes.ends.tolist()
            for row, start, end in zip(rows, starts, ends, strict=True):
                emitted_items.append(("main", _pane(row, start, end)))
        for records in out.records:  # a ProcessWindowFunction's panes (after a reduce or aggregate), as recorded
            assert set(records.tags) <= {None}
            emitted_items.extend(("main", pane) for pane in records.values)
        for indices in out.late if plan.late_tag is not None else []:
            emitted_items.extend(("late", batch[i]) for i in indices.tolist())

    for kind, item in scenario.steps():
        if kind == "watermark":
            record(operator.advance(item), [])
            continue
        batch = [item]
        values = RECORD.encode([{"key": item[0], "value": item[1], "ts": item[2], "seq": item[3]}])
        timestamps, seqs = np.array([item[2]], dtype=np.int64), np.array([item[3]], dtype=np.int64)
        record(operator.process(values, timestamps, seqs), batch)
    record(operator.advance(scenario.final_watermark), [])
    return collect_result(emitted_items)


def _pane(row: Any, start: int, end: int) -> dict[str, Any]:
    """A columnar result as the scenario files record a pane (the fields the implementation has)."""
    pane = {"key": row["key"], "window_start": start, "window_end": end, "count": row["count"], "sum": row["sum"]}
    if "values" in row:

        def numbers(text: str) -> list[int]:
            return [int(v) for v in text.split(",")] if text else []

        values, seqs = numbers(row["values"]), numbers(row["seqs"])
        pane.update(
            values=sorted(values),
            values_in_order=values,
            seqs=sorted(seqs),
            seqs_in_order=seqs,
            ts_in_order=numbers(row["ts"]),
        )
    return pane
