"""Section 6: several outputs from one streaming query. ``foreachBatch`` works on ``transformWithStateInPandas``
Append output, but each action on the batch DataFrame runs the stateful operator again (two filtered writes:
10 processor calls instead of 5); ``persist()``, one ``partitionBy`` write, or the file sink with
``partitionBy`` run it once. The file sink read through Spark has every tag; a ``tag=`` subfolder read directly
bypasses ``_spark_metadata``."""

# ruff: noqa: N802, N803 (Spark's callback interfaces name their methods and arguments in camelCase)

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

from ._common import OUTPUT_DDL, check, explicit_stream, rows, scratch, session, watermarked

LISTS = [rows("a@1000", "b@2000"), rows("a@5000", "a@1500"), rows("b@1200", "a@6000")]


class Tagger(StatefulProcessor):
    """Tags a row ``late`` if ts <= the watermark, else ``main``; counts rows per key in ValueState (``info`` is
    the count after the row); appends ``pid key rows n_after`` per call to the file ``log``."""

    def __init__(self, log: str) -> None:
        self.log = log

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.n = handle.getValueState("n", "n LONG")

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[pd.DataFrame]:
        wm = int(timerValues.getCurrentWatermarkInMs())
        value = self.n.get()
        n = 0 if value is None else int(value[0])
        out = []
        for frame in rows:
            for k, ts in frame[["k", "ts"]].itertuples(index=False):
                n += 1
                out.append(("late" if ts <= wm else "main", k, int(ts), wm, str(n)))
        self.n.update((n,))
        with open(self.log, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()} key={key[0]} rows={len(out)} n_after={n}\n")
        yield pd.DataFrame(out, columns=["kind", "k", "t", "wm", "info"])


def two_writes(persist: bool) -> Callable[[Path], Callable[[DataFrame, int], None]]:
    def make(out: Path) -> Callable[[DataFrame, int], None]:
        def write(bdf: DataFrame, batch_id: int) -> None:
            if persist:
                bdf.persist()
            for tag in ("main", "late"):
                bdf.where(bdf.kind == tag).write.mode("overwrite").parquet(str(out / tag / f"batch={batch_id}"))
            if persist:
                bdf.unpersist()

        return write

    return make


def one_write(out: Path) -> Callable[[DataFrame, int], None]:
    def write(bdf: DataFrame, batch_id: int) -> None:
        bdf.write.mode("overwrite").partitionBy("kind").parquet(str(out / f"batch={batch_id}"))

    return write


def tagged(spark: SparkSession, path: str) -> dict[str, list[tuple[str, int, str]]]:
    got: dict[str, list[tuple[str, int, str]]] = {"main": [], "late": []}
    for r in spark.read.parquet(path).collect():
        got[r["kind"]].append((r["k"], r["t"], r["info"]))
    return {tag: sorted(v) for tag, v in got.items()}


def main() -> None:
    spark = session("side_outputs")
    expected = {
        "main": [("a", 1000, "1"), ("a", 5000, "2"), ("a", 6000, "4"), ("b", 2000, "1")],
        "late": [("a", 1500, "3"), ("b", 1200, "2")],
    }
    calls: dict[str, int] = {}
    modes: list[tuple[str, Any]] = [
        ("nopersist", two_writes(False)),
        ("persist", two_writes(True)),
        ("one_write_partitionBy", one_write),
        ("filesink_partitionBy", None),
    ]
    for name, make in modes:
        folder = scratch(f"side-{name}")
        log = folder / "calls.log"
        df = watermarked(explicit_stream(spark, folder, LISTS))
        out = df.groupBy("shard").transformWithStateInPandas(Tagger(str(log)), OUTPUT_DDL, "Append", "EventTime")
        writer = out.writeStream.option("checkpointLocation", str(folder / "ck")).trigger(availableNow=True)
        if make is None:
            writer = writer.format("parquet").partitionBy("kind").option("path", str(folder / "out"))
        else:
            writer = writer.foreachBatch(make(folder / "out"))
        writer.start().awaitTermination()
        lines = log.read_text(encoding="utf-8").splitlines()
        calls[name] = len(lines)
        print(f"{name}: processor calls: {len(lines)}")
        if name == "nopersist":
            print("  " + "\n  ".join(line.split(" ", 1)[1] for line in lines))
            got = {tag: tagged(spark, str(folder / "out" / tag))[tag] for tag in ("main", "late")}
        elif name == "filesink_partitionBy":
            got = tagged(spark, str(folder / "out"))
            direct = sorted(
                (r["k"], r["t"], r["info"]) for r in spark.read.parquet(str(folder / "out" / "kind=late")).collect()
            )
            print(f"  subfolder kind=late read directly: {direct}")
            check(
                direct == expected["late"],
                "a kind= subfolder of the file sink can be read directly (no _spark_metadata)",
            )
        elif name == "persist":
            got = {tag: tagged(spark, str(folder / "out" / tag))[tag] for tag in ("main", "late")}
        else:
            got = tagged(spark, str(folder / "out"))
        print(f"  main: {got['main']}  late: {got['late']}")
        check(got == expected, f"{name}: the outputs are correct, without duplicates", got)
    check(calls["nopersist"] == 10, "without persist(), each of two actions re-runs the stateful operator: 10 calls")
    check(
        calls["persist"] == calls["one_write_partitionBy"] == calls["filesink_partitionBy"] == 5,
        "persist(), one partitionBy write, or the partitioned file sink: 5 calls",
        calls,
    )
    spark.stop()


if __name__ == "__main__":
    main()
