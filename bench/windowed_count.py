"""panes versus Spark's native windowed aggregation, in the same Spark session, on the same files.

Workload (as in shared/notes/measurements.md): N events, K keys, event times spread over an hour with up
to 5 s of disorder, tumbling 10 s event-time windows, count and sum per (key, window), watermark delay 5 s,
Parquet files read as a stream, one file per micro-batch. Prints events per second of each and the ratio
panes / native. Timing starts after the JVM and Python workers are warm (a small warm-up query first).

    .venv/bin/python bench/windowed_count.py --events 200000 --keys 1000 --batches 10
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def write_events(folder: str, events: int, keys: int, batches: int, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    base = 1_767_225_600_000
    ts = base + np.sort(rng.integers(0, 3_600_000, events)) + rng.integers(-5_000, 1, events)
    key = rng.integers(0, keys, events)
    value = rng.random(events)
    os.makedirs(folder)
    size = -(-events // batches)
    for b in range(batches):
        part = slice(b * size, min(events, (b + 1) * size))
        table = pa.table({"key": pa.array([f"k{k}" for k in key[part]]), "ts": ts[part], "value": value[part]})
        path = os.path.join(folder, f"part-{b:04d}.parquet")
        pq.write_table(table, path)
        os.utime(path, (1_700_000_000 + b, 1_700_000_000 + b))


def native(spark: Any, folder: str, batches: int, checkpoint: str) -> tuple[float, int]:
    from pyspark.sql import functions as F

    stream = (
        spark.readStream.schema("key STRING, ts BIGINT, value DOUBLE")
        .option("maxFilesPerTrigger", 1)
        .parquet(folder)
        .withColumn("event_time", F.timestamp_millis("ts"))
        .withWatermark("event_time", "5 seconds")
        .groupBy("key", F.window("event_time", "10 seconds"))
        .agg(F.count("*").alias("n"), F.sum("value").alias("total"))
    )
    results: list[int] = []
    started = time.monotonic()
    query = (
        stream.writeStream.outputMode("append")
        .foreachBatch(lambda frame, _: results.append(frame.count()))
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return time.monotonic() - started, sum(results)


def panes_run(spark: Any, folder: str, shards: int | None) -> tuple[float, int]:
    from panes.datastream import ListSink, StreamEnvironment
    from panes.functions import AggregateFunction
    from panes.spark import SparkRunner
    from panes.watermarks import WatermarkStrategy
    from panes.windowing import TumblingEventTimeWindows

    class CountSum(AggregateFunction[dict[str, Any], tuple[int, float], tuple[int, float]]):
        def create_accumulator(self) -> tuple[int, float]:
            return (0, 0.0)

        def add(self, value: dict[str, Any], acc: tuple[int, float]) -> tuple[int, float]:
            return (acc[0] + 1, acc[1] + value["value"])

        def get_result(self, acc: tuple[int, float]) -> tuple[int, float]:
            return acc

        def merge(self, a: tuple[int, float], b: tuple[int, float]) -> tuple[int, float]:
            return (a[0] + b[0], a[1] + b[1])

    results = ListSink()
    frame = (
        spark.readStream.schema("key STRING, ts BIGINT, value DOUBLE").option("maxFilesPerTrigger", 1).parquet(folder)
    )
    env = StreamEnvironment(SparkRunner(spark, num_shards=shards, trigger="available_now"))
    (
        env.from_dataframe(frame)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(5_000).with_timestamp_assigner("ts")
        )
        .key_by("key")
        .window(TumblingEventTimeWindows.of(10_000))
        .aggregate(CountSum(), lambda key, window, results: [(key, window.start, *r) for r in results])
        .sink_to(results)
    )
    started = time.monotonic()
    env.execute("bench")
    return time.monotonic() - started, len(results.records)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--shards", type=int, default=None, help="panes shards (default: the runner's)")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from panes.spark import create_session

    spark = create_session(app_name="panes-bench")
    work = tempfile.mkdtemp(prefix="panes-bench-")
    try:
        write_events(f"{work}/warm", 1_000, 10, 2)
        native(spark, f"{work}/warm", 2, f"{work}/ck-warm-native")
        panes_run(spark, f"{work}/warm", args.shards)
        write_events(f"{work}/events", args.events, args.keys, args.batches)
        native_s, native_windows = native(spark, f"{work}/events", args.batches, f"{work}/ck-native")
        panes_s, panes_windows = panes_run(spark, f"{work}/events", args.shards)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"workload: {args.events} events, {args.keys} keys, {args.batches} micro-batches, 10 s tumbling windows")
    print(f"native Spark : {native_s:7.1f} s  {args.events / native_s:9.0f} events/s  {native_windows} windows emitted")
    print(f"panes        : {panes_s:7.1f} s  {args.events / panes_s:9.0f} events/s  {panes_windows} windows emitted")
    print(f"ratio panes/native throughput: {native_s / panes_s:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
