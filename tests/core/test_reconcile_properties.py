"""``panes reconcile`` for every trigger and accumulation mode, over tumbling windows and sessions
(``panes.datastream.reconcile``).

The property, on random streams in micro-batches with elements too late even for the allowed lateness, for
early-firing triggers (counts, ``AfterWatermark`` with early and late parts, composites, continuous event time)
and each accumulation mode, with and without pane columns: a consumer's table keyed by ``(key, window)`` that
applies the streaming job's output as its mode says (accumulating: a row replaces its window's row; discarding:
rows add up; retracting: a ``retract`` row removes its equal) and then the corrections (a retraction removes a row
equal to it, pane columns included, which the table must hold; other rows are added) holds what applying the
output of one BATCH run over all the data gives. Rows are compared without their pane columns (a window the
corrections leave alone keeps the stream's pane info); in discarding mode, where a window's firings split its
elements by arrival in the stream and by timestamp in BATCH execution, each window's rows are compared by what
they add up to. With sessions, the corrections may change windows with nothing late (a session the stream split).
"""

from __future__ import annotations

import tempfile
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from panes.datastream import ListSink, RuntimeExecutionMode, StreamEnvironment
from panes.datastream.reconcile import reconcile
from panes.functions import Sum
from panes.watermarks import WatermarkStrategy
from panes.windowing import (
    AfterWatermark,
    AnyOf,
    ContinuousEventTimeTrigger,
    CountTrigger,
    EventTimeSessionWindows,
    EventTimeTrigger,
    Repeatedly,
    TumblingEventTimeWindows,
    WindowRow,
)
from panes.windowing.triggers import AfterEach

SCHEMA = "k STRING, v BIGINT, ts BIGINT"
PANE_COLUMNS = ("pane_index", "pane_timing", "pane_last")

TRIGGERS = {
    "default": lambda: None,
    "count 2": lambda: CountTrigger.of(2),
    "early count 3": lambda: AfterWatermark(early=CountTrigger.of(3)),
    "early count 2, late count 2": lambda: AfterWatermark(early=CountTrigger.of(2), late=CountTrigger.of(2)),
    "count 2 or end": lambda: AnyOf(CountTrigger.of(2), EventTimeTrigger()),
    "repeatedly count 2 then end": lambda: Repeatedly(AfterEach(CountTrigger.of(2), EventTimeTrigger())),
    "continuous 4": lambda: ContinuousEventTimeTrigger.of(4),
}

ASSIGNERS = {
    "tumbling": lambda: TumblingEventTimeWindows.of(10),
    "session": lambda: EventTimeSessionWindows.with_gap(4),
}

FIRE_AT_END_AND_ON_LATE = {"default", "early count 3", "count 2 or end", "continuous 4"}
"""Triggers that fire when the watermark passes a window's end and on each element after it: with them, a window
of a tumbling stream with nothing too late ends as BATCH's does. Under the others it can keep elements it never
fires (a count not reached), which ones depending on arrival, and the corrections then mend windows with nothing
late (as they do sessions the stream split)."""

elements = st.tuples(st.sampled_from("ab"), st.integers(0, 50), st.integers(1, 9))
streams = st.lists(st.lists(elements, max_size=6), min_size=1, max_size=6)


def job(
    batches: list[list[Any]], late: str, sink: ListSink, trigger: str, mode: str, pane: bool, assigner: str = "tumbling"
) -> Any:
    """A tumbling 10 ms window, 5 ms of allowed lateness, over ``batches`` of ``(key, timestamp, value)``."""

    def build(env: StreamEnvironment) -> None:
        rows = [[{"k": k, "v": v, "ts": ts} for k, ts, v in batch] for batch in batches]
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
        stream = env.from_micro_batches(rows, type_info=SCHEMA).assign_timestamps_and_watermarks(strategy)
        windowed = stream.key_by("k").window(ASSIGNERS[assigner]()).allowed_lateness(5)
        chosen = TRIGGERS[trigger]()
        if chosen is not None:
            windowed = windowed.trigger(chosen)
        windowed = getattr(windowed.late_data_table(late), f"{mode}_fired_panes")()
        windowed.aggregate(Sum("v"), WindowRow(pane="pane" if pane else None)).sink_to(sink)

    return build


Row = tuple[tuple[str, Any], ...]
Table = dict[tuple[Any, ...], Counter[Row]]


def window_of(row: dict[str, Any]) -> tuple[Any, ...]:
    return row["key"], row["window_start"], row["window_end"]


def result(row: dict[str, Any]) -> Row:
    """A row as the table holds it (without the flag)."""
    return tuple(sorted((name, value) for name, value in row.items() if name != "retract"))


def consumed(rows: list[dict[str, Any]], mode: str) -> Table:
    """The table a consumer keeps from a window step's output in ``mode``."""
    table: Table = {}
    for row in rows:
        held = table.setdefault(window_of(row), Counter())
        if mode == "accumulating":
            held.clear()
        if mode == "retracting" and row["retract"]:
            assert held[result(row)] > 0, f"the stream retracts {row}, which it did not emit"
            held[result(row)] -= 1
        else:
            held[result(row)] += 1
    return table


def corrected(table: Table, corrections: list[dict[str, Any]]) -> Table:
    """``table`` with the corrections applied: a retraction removes the equal row (which it must hold)."""
    table = {window: Counter(held) for window, held in table.items()}
    for row in corrections:
        held = table.setdefault(window_of(row), Counter())
        if row["retract"]:
            assert held[result(row)] > 0, f"a correction retracts {row}, which the table does not hold"
            held[result(row)] -= 1
        else:
            held[result(row)] += 1
    return table


def compared(table: Table, mode: str) -> dict[tuple[Any, ...], Any]:
    """What the property compares per window: the rows without pane columns (discarding: their total)."""
    found: dict[tuple[Any, ...], Any] = {}
    for window, held in table.items():
        rows = [dict(row) for row in (+held).elements()]
        if not rows:
            continue
        if mode == "discarding":
            found[window] = sum(row["value"] for row in rows)
        else:
            found[window] = Counter(repr({n: v for n, v in row.items() if n not in PANE_COLUMNS}) for row in rows)
    return found


def run(build: Any, mode: RuntimeExecutionMode = RuntimeExecutionMode.STREAMING) -> list[dict[str, Any]]:
    sink = ListSink()
    env = StreamEnvironment().set_runtime_mode(mode)
    build(sink)(env)
    env.execute()
    return list(sink.values)


@settings(max_examples=50, deadline=None)
@given(
    batches=streams,
    trigger=st.sampled_from(sorted(TRIGGERS)),
    mode=st.sampled_from(["accumulating", "discarding", "retracting"]),
    pane=st.booleans(),
    assigner=st.sampled_from(sorted(ASSIGNERS)),
)
def test_the_stream_with_its_corrections_gives_the_batch_result_over_all_data(
    batches: list[list[Any]], trigger: str, mode: str, pane: bool, assigner: str
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        late = f"{folder}/late"
        streamed = run(lambda sink: job(batches, late, sink, trigger, mode, pane, assigner))
        corrections = reconcile(job(batches, late, ListSink(), trigger, mode, pane, assigner), late)
        complete = run(
            lambda sink: job(batches, f"{late}-unused", sink, trigger, mode, pane, assigner), RuntimeExecutionMode.BATCH
        )
    table = corrected(consumed(streamed, mode), corrections.rows)
    assert compared(table, mode) == compared(consumed(complete, mode), mode)
    if assigner != "session" and trigger in FIRE_AT_END_AND_ON_LATE:
        assert (corrections.late_elements == 0) <= (corrections.rows == [])  # nothing late: nothing to correct
    columns = {"key", "window_start", "window_end", "value", "retract", *(PANE_COLUMNS if pane else ())}
    assert all(set(row) == columns for row in corrections.rows)
