"""Accumulation modes of a windowed stream (``panes.windowing.accumulation``): discarding results add up to the
accumulating ones; applying every retraction and result in order leaves each window's final result, the result
of a BATCH run over all the data (hypothesis, merging windows included)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from panes.datastream import ListSink, RuntimeExecutionMode, StreamEnvironment
from panes.functions import Sum
from panes.types import Types
from panes.watermarks import WatermarkStrategy
from panes.windowing import (
    ContinuousEventTimeTrigger,
    CountTrigger,
    EventTimeSessionWindows,
    GlobalWindows,
    PurgingTrigger,
    TumblingEventTimeWindows,
    WindowRow,
)

STRATEGY = WatermarkStrategy.for_bounded_out_of_orderness(3).with_timestamp_assigner("ts")

BATCHES = st.lists(
    st.lists(
        st.fixed_dictionaries({"k": st.sampled_from("ab"), "v": st.integers(1, 9), "ts": st.integers(0, 40)}),
        min_size=1,
        max_size=6,
    ),
    min_size=1,
    max_size=5,
)


def run(batches: list[list[dict[str, Any]]], mode: str, kind: str, batch: bool = False) -> list[dict[str, Any]]:
    env = StreamEnvironment()
    if batch:
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    out = ListSink()
    assigner = TumblingEventTimeWindows.of(10) if kind == "tumbling" else EventTimeSessionWindows.with_gap(4)
    stream = env.from_micro_batches(batches, type_info="k STRING, v BIGINT, ts BIGINT")
    windowed = (
        stream.assign_timestamps_and_watermarks(STRATEGY)
        .key_by("k")
        .window(assigner)
        .trigger(ContinuousEventTimeTrigger.of(3))
        .allowed_lateness(100)
    )
    if mode != "batch":
        windowed = getattr(windowed, f"{mode}_fired_panes")()
    windowed.aggregate(Sum("v"), WindowRow(key="k", value="total")).sink_to(out)
    env.execute()
    return list(out.values)


@settings(max_examples=40, deadline=None)
@given(BATCHES, st.sampled_from(["tumbling", "sessions"]))
def test_discarding_results_add_up_to_the_accumulating_ones_and_retractions_leave_the_batch_result(
    batches: list[list[dict[str, Any]]], kind: str
) -> None:
    def final(rows: list[dict[str, Any]]) -> dict[tuple[Any, ...], int]:
        last: dict[tuple[Any, ...], int] = {}
        for row in rows:
            last[(row["k"], row["window_start"], row["window_end"])] = row["total"]
        return last

    accumulating = run(batches, "accumulating", kind)
    discarding: dict[tuple[Any, ...], int] = defaultdict(int)
    for row in run(batches, "discarding", kind):
        discarding[(row["k"], row["window_start"], row["window_end"])] += row["total"]
    table: dict[tuple[Any, ...], int] = defaultdict(int)
    for row in run(batches, "retracting", kind):
        table[(row["k"], row["window_start"], row["window_end"])] += -row["total"] if row["retract"] else row["total"]
    applied = {window: total for window, total in table.items() if total}
    batch = final(run(batches, "accumulating", kind, batch=True))
    if kind == "tumbling":  # (sessions merge: a merged window's earlier results are under the windows it merged)
        assert dict(discarding) == final(accumulating) == batch
    assert applied == {window: total for window, total in batch.items() if total}


def test_a_retracting_window_emits_rows_with_the_retract_flag_and_its_type() -> None:
    env = StreamEnvironment()
    out = ListSink()
    stream = env.from_collection([("a", 1), ("a", 2), ("a", 3)], type_info=Types.TUPLE([Types.STRING(), Types.LONG()]))
    windowed = stream.key_by(lambda t: t[0]).count_window(5).trigger(CountTrigger.of(1)).retracting_fired_panes()
    result = windowed.reduce(lambda a, b: (a[0], a[1] + b[1]))
    result.sink_to(out)
    from panes.datastream.plan import resolve_types

    types = resolve_types(env.plan())
    assert types[(result.transformation.id, None)].ddl() == "_1 STRING, _2 BIGINT, retract BOOLEAN"
    env.execute()
    assert out.values == [
        {"_1": "a", "_2": 1, "retract": False},
        {"_1": "a", "_2": 1, "retract": True},
        {"_1": "a", "_2": 3, "retract": False},
        {"_1": "a", "_2": 3, "retract": True},
        {"_1": "a", "_2": 6, "retract": False},
    ]


def test_a_purge_ends_what_a_retracting_window_takes_back() -> None:
    env = StreamEnvironment()
    out = ListSink()
    stream = env.from_collection([1, 2, 3, 4], type_info=Types.LONG())
    windowed = stream.window_all(GlobalWindows.create())
    windowed.trigger(PurgingTrigger.of(CountTrigger.of(2))).retracting_fired_panes().reduce(lambda a, b: a + b).sink_to(
        out
    )
    env.execute()
    assert out.values == [{"value": 3, "retract": False}, {"value": 7, "retract": False}]


def test_an_unknown_mode_and_a_result_with_its_own_retract_column_are_refused() -> None:
    from panes.windowing.accumulation import change_row, check_mode

    with pytest.raises(ValueError, match="accumulation mode is one of"):
        check_mode("summing")
    with pytest.raises(ValueError, match="cannot have a column 'retract'"):
        change_row({"retract": 1}, False)
