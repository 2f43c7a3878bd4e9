"""``panes explain`` says, per keyed window step, whether it runs on columns on Spark and, when not, why."""

from __future__ import annotations

from typing import Any

import pytest

from panes.cli.explain import explain
from panes.datastream import StreamEnvironment
from panes.functions import Aggregates, Count, Max
from panes.functions.base import ReduceFunction
from panes.watermarks import WatermarkStrategy
from panes.windowing import CountEvictor, EventTimeSessionWindows, TumblingEventTimeWindows, WindowRow

STRATEGY = WatermarkStrategy.for_bounded_out_of_orderness(5_000).with_timestamp_assigner("ts")


def explained(build: Any) -> list[str]:
    """The lines of ``panes explain`` for a job of watermarked clicks that ``build`` takes on to a file sink."""
    env = StreamEnvironment()
    stream = env.from_files("clicks", schema="user STRING, page STRING, ts BIGINT").assign_timestamps_and_watermarks(
        STRATEGY
    )
    build(stream).sink_to_files("out")
    return explain(env.plan()).splitlines()


def columnar_lines(build: Any) -> list[str]:
    return [line.split("on Spark: ", 1)[1] for line in explained(build) if "|    on Spark: " in line]


def test_the_documented_idiom_runs_on_columns() -> None:
    lines = columnar_lines(
        lambda s: (
            s.key_by("page")
            .window(TumblingEventTimeWindows.of(60_000))
            .aggregate(Aggregates(clicks=Count(), last=Max("ts")), WindowRow())
        )
    )
    assert lines == ["columnar (whole micro-batches of each window at once)"]


def test_a_reduce_or_python_aggregate_function_runs_on_columns() -> None:
    lines = columnar_lines(
        lambda s: (
            s.key_by("page")
            .window(TumblingEventTimeWindows.of(60_000))
            .reduce(lambda a, b: b, lambda key, window, results: [(key, window.end, *results)])
        )
    )
    assert lines == [
        "columnar (one accumulator per pane, folded as micro-batches arrive; the window function called per pane "
        "when it fires)"
    ]


class Opens(ReduceFunction[Any]):
    """A reduce function with ``open``, which the columnar operator does not call."""

    def open(self, runtime_context: Any) -> None:
        return None

    def reduce(self, value1: Any, value2: Any) -> Any:
        return value1


@pytest.mark.parametrize(
    ("build", "reason"),
    [
        (lambda s: s.key_by(lambda r: r["page"]).window(TumblingEventTimeWindows.of(60_000)).aggregate(Count()),
         "keyed by a function"),
        (lambda s: s.key_by("page").window(TumblingEventTimeWindows.of(60_000)).evictor(CountEvictor.of(2))
         .aggregate(Count()), "it has an evictor"),
        (lambda s: s.key_by("page").window(EventTimeSessionWindows.with_gap(60_000)).reduce(lambda a, b: a),
         "its reduce function runs on session windows, whose columnar operator keeps built-in aggregates only"),
        (lambda s: s.key_by("page").window(TumblingEventTimeWindows.of(60_000)).reduce(Opens()),
         "its reduce function defines open(), which the columnar operator does not call"),
        (lambda s: s.map(lambda r: r).key_by("page").window(TumblingEventTimeWindows.of(60_000)).aggregate(Count()),
         "its input has no declared type"),
        (lambda s: s.key_by("page").window(TumblingEventTimeWindows.of(60_000)).aggregate(Max("nope")),
         "the aggregate's field 'nope' is not a field of its input type"),
        (lambda s: s.key_by("page").window(EventTimeSessionWindows.with_gap(60_000)).aggregate(
            Count(), WindowRow(pane="pane")), "its WindowRow adds pane info"),
    ],
)  # fmt: skip
def test_a_window_off_the_columnar_path_says_why(build: Any, reason: str) -> None:
    [line] = columnar_lines(build)
    assert line.startswith("element by element, because") and reason in line, line


def pages(panes: Any) -> Any:
    return panes.groupby(["page", "window_end"], sort=False).size().reset_index(name="n")


def test_a_process_batch_window_says_how_often_it_calls_the_function() -> None:
    tumbling = columnar_lines(
        lambda s: (
            s.key_by("page").window(TumblingEventTimeWindows.of(60_000)).process_batch(pages, "page STRING, n BIGINT")
        )
    )
    assert tumbling == ["columnar (elements kept as columns; one call of the function per shard and firing)"]
    [sessions] = columnar_lines(
        lambda s: s.key_by("page").window(EventTimeSessionWindows.with_gap(60_000)).process_batch(pages, "n BIGINT")
    )
    assert sessions.startswith("element by element (one call of the function per pane), because its process_batch")


def stage_lines(build: Any) -> list[str]:
    return [line.split(": ", 1)[1] for line in explained(build) if ". keyed step " in line]


def test_the_spark_stage_says_whether_a_python_function_is_called_per_pane() -> None:
    def windowed(stream: Any) -> Any:
        return stream.key_by("page").window(TumblingEventTimeWindows.of(60_000))

    built_in = stage_lines(lambda s: windowed(s).aggregate(Aggregates(clicks=Count()), WindowRow()))
    reduced = stage_lines(lambda s: windowed(s).reduce(lambda a, b: b))
    assert built_in == ["applyInArrow per shard over the whole input, on Arrow columns (vectorised)"]
    assert reduced == [
        "applyInArrow per shard over the whole input, on Arrow columns, the user's Python function called per pane"
    ]
