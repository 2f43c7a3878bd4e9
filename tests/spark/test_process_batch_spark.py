"""``process_batch`` (a window function over panes as columns) gives the local runner's results on Spark, where
a keyed tumbling or sliding window runs it on the columnar operator: one job, one branch per case, with late
firings (allowed lateness) and late data (``tests/core/test_columnar_windows.py`` compares the operators on
random streams; ``tests/core/test_process_batch.py`` pins down the function's contract)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from panes.cli.explain import explain
from panes.datastream import ListSink, RuntimeExecutionMode, StreamEnvironment
from panes.local import LocalRunner
from panes.spark import SparkRunner
from panes.tags import OutputTag
from panes.watermarks import WatermarkStrategy
from panes.windowing import SlidingEventTimeWindows, TumblingEventTimeWindows

pytestmark = pytest.mark.spark

BATCHES = [
    [{"k": "a", "v": 1.0, "ts": 1}, {"k": "a", "v": 2.5, "ts": 2}, {"k": "b", "v": 3.0, "ts": 4}],
    [{"k": "a", "v": 4.0, "ts": 12}, {"k": "b", "v": 5.0, "ts": 5}, {"k": "a", "v": 6.0, "ts": 3}],
    [{"k": "a", "v": 7.0, "ts": 35}, {"k": "a", "v": 8.0, "ts": 8}, {"k": "b", "v": 9.0, "ts": 30}],
    [{"k": "c", "v": 1.5, "ts": 9}, {"k": "b", "v": 0.5, "ts": 33}, {"k": "c", "v": 2.0, "ts": 60}],
]
OUTPUT = "k STRING, window_start BIGINT, window_end BIGINT, n BIGINT, median DOUBLE, arrivals STRING"


def summary(panes: Any) -> Any:
    """Per pane: its size, the median of ``v`` and the values in the order they arrived."""
    grouped = panes.groupby(["k", "window_start", "window_end"], sort=False)
    return grouped.agg(
        n=("v", "size"), median=("v", "median"), arrivals=("v", lambda v: " ".join(map(str, v)))
    ).reset_index()


def summary_arrow(panes: pa.Table) -> dict[str, Any]:
    """:func:`summary` on a ``pyarrow.Table``."""
    keys = ["k", "window_start", "window_end"]
    grouped = panes.group_by(keys, use_threads=False).aggregate([("v", "list")])
    values = grouped["v_list"].to_pylist()
    return {
        **{key: grouped[key] for key in keys},
        "n": [len(v) for v in values],
        "median": [float(np.median(v)) for v in values],
        "arrivals": [" ".join(map(str, v)) for v in values],
    }


def run(env: StreamEnvironment) -> dict[str, list[Any]]:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    stream = env.from_micro_batches(BATCHES, type_info="k STRING, v DOUBLE, ts BIGINT")
    keyed = stream.assign_timestamps_and_watermarks(strategy).key_by("k")
    late: OutputTag[Any] = OutputTag("late")
    outputs = {name: ListSink() for name in ["tumbling", "sliding", "late"]}
    tumbling = keyed.window(TumblingEventTimeWindows.of(10)).allowed_lateness(5).side_output_late_data(late)
    results = tumbling.process_batch(summary, OUTPUT)
    results.sink_to(outputs["tumbling"])
    results.get_side_output(late).sink_to(outputs["late"])
    sliding = keyed.window(SlidingEventTimeWindows.of(20, 10)).allowed_lateness(30)
    sliding.process_batch(summary_arrow, OUTPUT, batch_format="pyarrow").sink_to(outputs["sliding"])
    assert explain(env.plan()).count("columnar (elements kept as columns") == 2
    env.execute()
    return {name: sorted(out.values, key=repr) for name, out in outputs.items()}


def test_process_batch_gives_the_same_results_on_both_runners(spark: Any) -> None:
    local = run(StreamEnvironment(LocalRunner()))
    assert local["late"], "some elements are too late even for the allowed lateness"
    assert any(row["arrivals"].count(" ") for row in local["tumbling"]), "some panes have several elements"
    assert len({(row["k"], row["window_start"]) for row in local["tumbling"]}) < len(local["tumbling"]), (
        "some panes fire again when a late element arrives"
    )
    assert run(StreamEnvironment(SparkRunner(spark, num_shards=2))) == local


def test_a_dataframe_source_is_typed_when_the_job_is_built(spark: Any) -> None:
    frame = spark.createDataFrame(
        [(e["k"], e["v"], e["ts"]) for batch in BATCHES for e in batch], "k string, v double, ts long"
    )
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    sink = ListSink()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    keyed = env.from_dataframe(frame).assign_timestamps_and_watermarks(strategy).key_by("k")
    keyed.window(TumblingEventTimeWindows.of(10)).process_batch(summary, OUTPUT).sink_to(sink)
    env.execute()
    counts = sorted((row["k"], row["window_start"], row["n"]) for row in sink.values)
    expected: dict[tuple[str, int], int] = {}
    for batch in BATCHES:
        for e in batch:
            expected[(e["k"], e["ts"] // 10 * 10)] = expected.get((e["k"], e["ts"] // 10 * 10), 0) + 1
    assert counts == sorted((k, start, n) for (k, start), n in expected.items())


def test_in_batch_mode_a_columnar_window_takes_each_keys_elements_in_timestamp_order(spark: Any) -> None:
    # BATCH execution sorts a keyed input by key and timestamp (arrival order among equal timestamps) on every
    # runner; the columnar host takes its elements in that order too, so an order-sensitive function and a float
    # sum give the local runner's results
    batches = [
        [{"k": "a", "v": 0.1, "ts": 5}, {"k": "a", "v": 0.2, "ts": 1}],
        [{"k": "a", "v": 0.3, "ts": 3}, {"k": "b", "v": 0.7, "ts": 2}, {"k": "b", "v": 0.1, "ts": 2}],
    ]

    def order(panes: Any) -> Any:
        grouped = panes.groupby(["k", "window_end"], sort=False)
        return grouped.agg(order=("v", lambda v: " ".join(map(str, v))), total=("v", "sum")).reset_index()

    def run_batch(env: StreamEnvironment) -> list[Any]:
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)
        sink = ListSink()
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
        stream = env.from_micro_batches(batches, type_info="k STRING, v DOUBLE, ts BIGINT")
        windows = stream.assign_timestamps_and_watermarks(strategy).key_by("k").window(TumblingEventTimeWindows.of(10))
        windows.process_batch(order, "k STRING, order STRING, total DOUBLE").sink_to(sink)
        env.execute()
        return sorted(sink.values, key=repr)

    local = run_batch(StreamEnvironment(LocalRunner()))
    expected = []
    for key in ("a", "b"):
        mine = sorted((e for batch in batches for e in batch if e["k"] == key), key=lambda e: e["ts"])  # stable
        total = 0.0
        for e in mine:
            total += e["v"]
        expected.append({"k": key, "order": " ".join(str(e["v"]) for e in mine), "total": total})
    assert local == expected
    assert run_batch(StreamEnvironment(SparkRunner(spark, num_shards=2))) == local
