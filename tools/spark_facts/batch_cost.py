"""Section 1, "Cost per batch": tiny micro-batches through the event-time ``transformWithStateInPandas``
pipeline into four sinks, and the mean of each batch's ``durationMs`` parts (the first batches left out). A
timing, so only printed; the probe asserts only that Spark reports these parts and that a tiny batch takes
under 10 s (a gross regression)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from ._common import (
    Recorder,
    check,
    explicit_stream,
    hosted,
    progress_of,
    rows,
    scratch,
    session,
    watermarked,
)

BATCHES = 12
SKIP = 3
PARTS = ["triggerExecution", "addBatch", "queryPlanning", "walCommit", "commitOffsets"]


def costs(spark: SparkSession, name: str, sink: str) -> dict[str, float]:
    folder = scratch(f"cost-{name}")
    lists = [rows(f"a@{1000 * (i + 1)}", f"b@{1000 * (i + 1) + 500}") for i in range(BATCHES)]
    out: DataFrame = hosted(watermarked(explicit_stream(spark, folder, lists)), Recorder(plus=10))
    writer = out.writeStream.option("checkpointLocation", str(folder / "ck")).trigger(availableNow=True)
    if sink == "noop":
        writer = writer.format("noop")
    elif sink == "parquet":
        writer = writer.format("parquet").option("path", str(folder / "out"))
    else:

        def write(bdf: DataFrame, batch_id: int, target: Path = folder / "out") -> None:
            bdf.write.mode("overwrite").parquet(str(target / f"batch={batch_id}"))

        writer = writer.foreachBatch(write)
    query: Any = writer.start()
    query.awaitTermination()
    batches = progress_of(query, {})
    if name == "noop":
        print(f"  first batch of this JVM: triggerExecution {batches[0].durations.get('triggerExecution')} ms")
    kept = [b for b in batches if SKIP <= b.id < BATCHES]
    return {part: statistics.mean(b.durations.get(part, 0) for b in kept) for part in PARTS}


def main() -> None:
    spark = session("batch_cost")
    print(f"{BATCHES} tiny batches per sink, mean over batches {SKIP}..{BATCHES - 1}, ms")
    print(f"  {'sink':<40}" + "".join(f"{p:>17}" for p in PARTS))
    table: dict[str, dict[str, float]] = {}
    for name, sink in [("noop", "noop"), ("parquet file sink", "parquet"), ("foreachBatch -> parquet", "fb")]:
        table[name] = costs(spark, name, sink)
    spark.conf.set("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
    table["noop, RocksDB changelog checkpointing"] = costs(spark, "noop-changelog", "noop")
    for name, parts in table.items():
        print(f"  {name:<40}" + "".join(f"{parts[p]:>17.0f}" for p in PARTS))
    check(
        all(0 < parts["triggerExecution"] < 10_000 for parts in table.values()),
        "every sink reports durationMs; a tiny batch takes under 10 s",
    )
    spark.stop()


if __name__ == "__main__":
    main()
