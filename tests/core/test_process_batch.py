"""``process_batch``'s contract (``panes.windowing.batch_function``): what the function gets, what it may return,
and the errors for what it may not, at construction and at run time, on the local runner."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pytest

from panes.datastream import ListSink, StreamEnvironment
from panes.errors import UserFunctionError
from panes.tags import OutputTag
from panes.watermarks import WatermarkStrategy
from panes.windowing import CountTrigger, GlobalWindows, TumblingEventTimeWindows

BATCHES = [
    [{"k": "a", "v": 3, "ts": 1}, {"k": "b", "v": 1, "ts": 2}, {"k": "a", "v": 2, "ts": 4}],
    [{"k": "a", "v": 5, "ts": 12}, {"k": "b", "v": 7, "ts": 13}, {"k": "a", "v": 1, "ts": 25}],
]
SCHEMA = "k STRING, v BIGINT, ts BIGINT"


def windowed(env: StreamEnvironment, size: int = 10) -> Any:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    stream = env.from_micro_batches(BATCHES, type_info=SCHEMA).assign_timestamps_and_watermarks(strategy)
    return stream.key_by("k").window(TumblingEventTimeWindows.of(size))


def run(build: Any) -> list[Any]:
    env = StreamEnvironment()
    sink = ListSink()
    build(windowed(env)).sink_to(sink)
    env.execute()
    return sink.values


def test_the_function_gets_each_panes_elements_in_arrival_order_with_its_window() -> None:
    seen: list[pa.Table] = []

    def record(panes: pa.Table) -> dict[str, Any]:
        seen.append(panes)
        return {"n": [panes.num_rows]}

    results = run(lambda w: w.process_batch(record, "n BIGINT", batch_format="pyarrow"))
    assert all(table.column_names == ["k", "v", "ts", "window_start", "window_end"] for table in seen)
    panes = sorted(
        (t["k"][0].as_py(), t["window_start"][0].as_py(), t["window_end"][0].as_py(), t["v"].to_pylist()) for t in seen
    )
    # the window operator calls once per pane; each pane's rows in the order its elements arrived
    assert panes == [
        ("a", 0, 10, [3, 2]),
        ("a", 10, 20, [5]),
        ("a", 20, 30, [1]),
        ("b", 0, 10, [1]),
        ("b", 10, 20, [7]),
    ]
    assert sorted(r["n"] for r in results) == [1, 1, 1, 1, 2]


def test_results_with_a_window_end_column_may_be_several_or_none_per_pane() -> None:
    def each_value(panes: Any) -> Any:  # pandas: one row per element above 1, none for a pane without any
        return panes[panes["v"] > 1][["k", "v", "window_end"]]

    results = run(lambda w: w.process_batch(each_value, "k STRING, v BIGINT"))
    assert sorted((r["k"], r["v"]) for r in results) == [("a", 2), ("a", 3), ("a", 5), ("b", 7)]


def test_windows_without_a_time_range_have_null_window_columns() -> None:
    def bounds(panes: pa.Table) -> dict[str, Any]:
        return {"start": [panes["window_start"][0].as_py()], "n": [panes.num_rows]}

    env = StreamEnvironment()
    sink = ListSink()
    stream = env.from_micro_batches(BATCHES, type_info=SCHEMA)
    windows = stream.key_by("k").window(GlobalWindows.create()).trigger(CountTrigger.of(2))
    windows.process_batch(bounds, "start BIGINT, n BIGINT", batch_format="pyarrow").sink_to(sink)
    env.execute()
    # CountTrigger.of(2) fires (without purging) at every second element of a key
    counts = Counter(element["k"] for batch in BATCHES for element in batch)
    fired = sorted(n for count in counts.values() for n in range(2, count + 1, 2))
    assert sorted(r["n"] for r in sink.values) == fired
    assert {r["start"] for r in sink.values} == {None}


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda w: w.process_batch("not a function", "n BIGINT"), TypeError, "a function of a table"),
        (lambda w: w.process_batch(len, "n BIGINT", batch_format="polars"), ValueError, "'pandas' or 'pyarrow'"),
        (lambda w: w.process_batch(len, None), TypeError, "output_type as columns"),
        (lambda w: w.process_batch(len, pa.int64()), TypeError, "named columns"),
    ],
)
def test_bad_arguments_are_refused_when_the_job_is_built(build: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        build(windowed(StreamEnvironment()))


def test_an_untyped_input_or_a_window_column_in_it_is_refused() -> None:
    env = StreamEnvironment()
    untyped = env.from_micro_batches(BATCHES).key_by(lambda r: r["k"]).window(TumblingEventTimeWindows.of(10))
    with pytest.raises(TypeError, match="declare the type of the stream"):
        untyped.process_batch(len, "n BIGINT")
    clashing = env.from_micro_batches([[{"k": "a", "window_end": 1}]], type_info="k STRING, window_end BIGINT")
    with pytest.raises(ValueError, match="rename it"):
        clashing.key_by("k").window(GlobalWindows.create()).process_batch(len, "n BIGINT")


@pytest.mark.parametrize(
    ("function", "message"),
    [
        (lambda panes: [1, 2], "must return a pandas DataFrame"),
        (lambda panes: {"m": [1]}, "no column 'n' of its output_type"),
        (lambda panes: {"n": ["x"]}, "does not fit int64"),
        (lambda panes: {"n": [1, 2, 3]}, "returned 3 rows for 1 panes"),
        (lambda panes: 1 / 0, "ZeroDivisionError"),
    ],
)
def test_a_function_breaking_the_contract_fails_the_job_naming_the_step(function: Any, message: str) -> None:
    with pytest.raises(UserFunctionError, match=message) as failure:
        run(lambda w: w.process_batch(function, "n BIGINT"))
    assert failure.value.operator is not None and "Window(ProcessBatch)" in failure.value.operator


def test_with_an_error_output_a_failing_pane_goes_there() -> None:
    errors: OutputTag[Any] = OutputTag("errors")
    env = StreamEnvironment()
    sink, failed = ListSink(), ListSink()

    def only_small(panes: Any) -> Any:
        if panes["v"].max() > 6:
            raise ValueError("too big")
        return {"n": [len(panes)]}

    results = windowed(env).side_output_errors(errors).process_batch(only_small, "n BIGINT")
    results.sink_to(sink)
    results.get_side_output(errors).sink_to(failed)
    env.execute()
    assert sorted(r["n"] for r in sink.values) == [1, 1, 1, 2]
    assert len(failed.values) == 1 and "too big" in failed.values[0].reason
