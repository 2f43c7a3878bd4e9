"""The benchmark's workload: generated events, Spark's native windowed aggregation, and the same job on panes.

Events: N rows ``(key STRING, ts BIGINT, value BIGINT)`` over K keys, event times spread over an hour with
up to 5 s of disorder, written as one Parquet file per micro-batch, plus two more: one event ten hours
later (its watermark closes every window of the data, so both sides emit them all) and an empty file (a
micro-batch with no input and nothing due).
Values are integers, so sums are exact and results compare for equality. Both sides read the files as a
stream, one file per micro-batch, with a 5 s watermark delay, and write their windows as Parquet.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from panes.functions.base import AggregateFunction
from panes.windowing.functions import ProcessWindowFunction

BASE = 1_767_225_600_000  # 2026-01-01T00:00:00Z
SCHEMA = "key STRING, ts BIGINT, value BIGINT"
RESULT_COLUMNS = ["key", "window_start", "window_end", "n", "total"]


@dataclass(frozen=True)
class Case:
    """One benchmark case: a window (``tumbling``, ``sliding``, ``session``), keys, and the function: count+sum
    with built-in aggregates (``count_sum``), a Python ``ProcessWindowFunction`` (``python``), a ``reduce`` with
    a lambda over dicts (``reduce``) or a user ``AggregateFunction`` class (``aggregate``), the last two with a
    window function adding the window's bounds, as a PyFlink job writes them; or the distinct
    values and the sum of each pane (``n`` counts distinct values, where native Spark uses
    ``size(collect_set(value))``) by a ``ProcessWindowFunction`` (``distinct_python``) or by ``process_batch``
    with pandas (``distinct_batch``)."""

    window: str
    keys: int
    function: str = "count_sum"
    size_ms: int = 10_000
    slide_ms: int = 2_000
    gap_ms: int = 30_000
    per_key: bool = False
    """panes keeps event time per key (``watermark_per_key``: the same 5 s bound per key, a lag of an hour); no
    element is late either way, since the events' timestamps are at most 5 s out of order overall."""

    @property
    def name(self) -> str:
        shape = {
            "tumbling": f"tumbling {self.size_ms // 1000} s",
            "sliding": f"sliding {self.size_ms // 1000} s / {self.slide_ms // 1000} s",
            "session": f"session gap {self.gap_ms // 1000} s",
        }[self.window]
        what = {
            "count_sum": "count+sum",
            "python": "Python ProcessWindowFunction",
            "distinct_python": "distinct+sum, Python ProcessWindowFunction",
            "distinct_batch": "distinct+sum, process_batch (pandas)",
            "reduce": "count+sum, reduce(lambda)",
            "aggregate": "count+sum, Python AggregateFunction",
        }[self.function]
        return f"{shape}, {what}, {self.keys:,} keys" + (", time per key" if self.per_key else "")


def write_events(folder: str, events: int, keys: int, batches: int, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    ts = BASE + np.sort(rng.integers(0, 3_600_000, events)) + rng.integers(-5_000, 1, events)
    key = rng.integers(0, keys, events)
    value = rng.integers(0, 1_000, events)
    os.makedirs(folder)
    size = -(-events // batches)
    names = np.array([f"k{k}" for k in range(keys)], dtype=object)
    schema = pa.schema([("key", pa.string()), ("ts", pa.int64()), ("value", pa.int64())])
    for b in range(batches + 2):
        if b == batches:  # one event ten hours on: its watermark closes every window and session of the data
            table = pa.table({"key": ["flush"], "ts": [BASE + 36_000_000], "value": [0]}, schema=schema)
        else:
            part = slice(b * size, min(events, (b + 1) * size)) if b < batches else slice(0, 0)
            table = pa.table(
                {"key": pa.array(names[key[part]], pa.string()), "ts": ts[part], "value": value[part]},
                schema=schema,
            )
        path = os.path.join(folder, f"part-{b:04d}.parquet")
        pq.write_table(table, path)
        os.utime(path, (1_700_000_000 + b, 1_700_000_000 + b))


def stream(spark: Any, folder: str) -> Any:
    return spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(folder)


def native_query(spark: Any, case: Case, folder: str, output: str, checkpoint: str) -> Any:
    """Spark's own windowed aggregation of ``case`` (append mode, 5 s watermark), written as Parquet."""
    from pyspark.sql import functions as F

    events = stream(spark, folder).withColumn("event_time", F.timestamp_millis("ts"))
    events = events.withWatermark("event_time", "5 seconds")
    if case.window == "tumbling":
        window = F.window("event_time", f"{case.size_ms} milliseconds")
    elif case.window == "sliding":
        window = F.window("event_time", f"{case.size_ms} milliseconds", f"{case.slide_ms} milliseconds")
    else:
        window = F.session_window("event_time", f"{case.gap_ms} milliseconds")
    n = F.size(F.collect_set("value")) if case.function.startswith("distinct") else F.count("*")
    counted = events.groupBy("key", window.alias("w")).agg(n.cast("bigint").alias("n"), F.sum("value").alias("total"))
    result = counted.select(
        "key",
        F.unix_millis(F.col("w.start")).alias("window_start"),
        F.unix_millis(F.col("w.end")).alias("window_end"),
        "n",
        "total",
    )
    return (
        result.writeStream.format("parquet")
        .outputMode("append")
        .option("path", output)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )


def panes_job(
    spark: Any, case: Case, folder: str, output: str, checkpoint: str, shards: int | None, shard_keepers: bool = True
) -> Any:
    """The same job on panes (Flink's semantics: late rows go to a side output instead of being dropped)."""
    from panes.datastream import OutputTag, StreamEnvironment
    from panes.functions import Aggregates, Count, Sum
    from panes.spark import SparkRunner
    from panes.watermarks import WatermarkStrategy
    from panes.windowing import (
        EventTimeSessionWindows,
        SlidingEventTimeWindows,
        TumblingEventTimeWindows,
        WindowRow,
    )

    env = StreamEnvironment(
        SparkRunner(
            spark,
            num_shards=shards,
            trigger="available_now",
            checkpoint_location=checkpoint,
            shard_keepers=shard_keepers,
        )
    )
    events = env.from_dataframe(stream(spark, folder)).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(5_000).with_timestamp_assigner("ts")
    )
    if case.window == "tumbling":
        assigner: Any = TumblingEventTimeWindows.of(case.size_ms)
    elif case.window == "sliding":
        assigner = SlidingEventTimeWindows.of(case.size_ms, case.slide_ms)
    else:
        assigner = EventTimeSessionWindows.with_gap(case.gap_ms)
    late: OutputTag[Any] = OutputTag("late")
    windowed = events.key_by("key").window(assigner).side_output_late_data(late)
    if case.per_key:
        from panes.watermarks import PerKeyWatermarks

        per_key = PerKeyWatermarks.for_bounded_out_of_orderness(5_000).with_max_lag(3_600_000)
        windowed = windowed.watermark_per_key(per_key)
    row = WindowRow(key="key", start="window_start", end="window_end")
    if case.function == "count_sum":
        results = windowed.aggregate(Aggregates(n=Count(), total=Sum("value")), row)
    elif case.function == "reduce":
        results = windowed.reduce(
            lambda a, b: {"key": a["key"], "n": a.get("n", 1) + b.get("n", 1), "value": a["value"] + b["value"]},
            with_bounds,
            output_type=RESULT_DDL,
        )
    elif case.function == "aggregate":
        results = windowed.aggregate(CountSumAggregate(), with_bounds, output_type=RESULT_DDL)
    elif case.function == "distinct_batch":
        results = windowed.process_batch(distinct_sum, RESULT_DDL)
    else:
        function = DistinctSum() if case.function == "distinct_python" else CountSum()
        results = windowed.process(function, output_type=RESULT_DDL)
    results.sink_to_files(output)
    results.get_side_output(late).sink_to_files(output + "-late")
    return env


RESULT_DDL = "key STRING, window_start BIGINT, window_end BIGINT, n BIGINT, total BIGINT"


def local_job(folder: str, output: str, function: str = "count_sum") -> Any:
    """Tumbling 10 s count+sum on the local runner (in one Python process), over the same events: with
    built-in aggregates (``count_sum``) or a Python ``ProcessWindowFunction`` (``python``)."""
    import pyarrow.dataset as ds

    from panes.datastream import StreamEnvironment
    from panes.functions import Aggregates, Count, Sum
    from panes.watermarks import WatermarkStrategy
    from panes.windowing import TumblingEventTimeWindows, WindowRow

    events = ds.dataset(folder, format="parquet").to_table().to_pylist()
    row = WindowRow(key="key", start="window_start", end="window_end")
    env = StreamEnvironment("local")
    windowed = (
        env.from_collection(events, type_info=SCHEMA)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(5_000).with_timestamp_assigner("ts")
        )
        .key_by("key")
        .window(TumblingEventTimeWindows.of(10_000))
    )
    if function == "python":
        results = windowed.process(CountSum(), output_type=RESULT_DDL)
    else:
        results = windowed.aggregate(Aggregates(n=Count(), total=Sum("value")), row)
    results.sink_to_files(output)
    return env, len(events)


class CountSum(ProcessWindowFunction[Any, Any, Any, Any]):
    """A Python ProcessWindowFunction computing what the built-in aggregates compute, element by element."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        n = total = 0
        for element in elements:
            n += 1
            total += element["value"]
        window = context.window()
        yield {"key": key, "window_start": window.start, "window_end": window.end, "n": n, "total": total}


def with_bounds(key: Any, window: Any, results: Any) -> Any:
    """The window function of the ``reduce`` and ``aggregate`` cases: the reduced value with its window."""
    for result in results:
        yield {"key": key, "window_start": window.start, "window_end": window.end, "n": result.get("n", 1),
               "total": result["value"]}  # fmt: skip


class CountSumAggregate(AggregateFunction[Any, Any, Any]):
    """Count and sum as a PyFlink user writes an ``AggregateFunction``: a list accumulator ``[n, total]``."""

    def create_accumulator(self) -> Any:
        return [0, 0]

    def add(self, value: Any, accumulator: Any) -> Any:
        accumulator[0] += 1
        accumulator[1] += value["value"]
        return accumulator

    def get_result(self, accumulator: Any) -> Any:
        return {"n": accumulator[0], "value": accumulator[1]}

    def merge(self, a: Any, b: Any) -> Any:
        return [a[0] + b[0], a[1] + b[1]]


class DistinctSum(ProcessWindowFunction[Any, Any, Any, Any]):
    """The distinct values and the sum of a pane, element by element."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        values = [element["value"] for element in elements]
        window = context.window()
        yield {"key": key, "window_start": window.start, "window_end": window.end, "n": len(set(values)),
               "total": sum(values)}  # fmt: skip


def distinct_sum(panes: Any) -> Any:
    """:class:`DistinctSum` over many panes at once, with pandas."""
    grouped = panes.groupby(["key", "window_start", "window_end"], sort=False)["value"]
    return grouped.agg(n="nunique", total="sum").reset_index()


def same_results(spark: Any, native: str, panes: str) -> tuple[bool, int]:
    """Whether both outputs hold exactly the same rows (as multisets), and how many."""
    a = spark.read.schema(RESULT_DDL).parquet(native).select(*RESULT_COLUMNS)
    b = spark.read.schema(RESULT_DDL).parquet(panes).select(*RESULT_COLUMNS)
    count = a.count()
    same = count == b.count() and a.exceptAll(b).isEmpty() and b.exceptAll(a).isEmpty()
    return same, count
