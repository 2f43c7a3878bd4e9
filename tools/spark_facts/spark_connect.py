"""Section 8, Spark Connect: a server from pyspark's ``sbin/start-connect-server.sh`` (started and stopped by
the repository's ``tests/deploy/servers.py``) and a ``SparkSession.builder.remote`` client. A Python streaming
data source, ``transformWithStateInPandas`` in event time, ``mapInArrow``, ``applyInArrow``, ``persist``,
``isEmpty``, ``toArrow``, ``createDataFrame(pa.Table)`` and ``spark.read.parquet`` work; ``foreachBatch``'s
function runs on the server (a list the client holds stays empty); ``spark.sparkContext`` is absent; a
streaming observation reaches the client's progress in another form than in classic Spark, and the progress has
no ``numInputRows`` of its own, only each source's."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from tests.deploy.servers import connect_server

from ._common import FIRST_LISTS, FIRST_RUN, Recorder, check, explicit_stream, hosted, scratch, watermarked


def doubled(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        yield pa.RecordBatch.from_pydict({"id": pa.compute.multiply(batch.column("id"), 2)})


def counted(key: tuple[Any, ...], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield pa.RecordBatch.from_pydict({"g": [key[0].as_py()], "n": [sum(b.num_rows for b in batches)]})


def dataframe_calls(spark: SparkSession, folder: Path) -> None:
    df = spark.createDataFrame(pa.table({"id": [1, 2, 3, 4]}))
    check(sorted(r.id for r in df.mapInArrow(doubled, "id LONG").collect()) == [2, 4, 6, 8], "mapInArrow works")
    grouped = df.groupBy((F.col("id") % 2).alias("g")).applyInArrow(counted, "g LONG, n LONG")
    check(sorted(tuple(r) for r in grouped.collect()) == [(0, 2), (1, 2)], "applyInArrow works")
    kept = df.persist()
    check(not kept.isEmpty() and kept.toArrow().num_rows == 4, "persist, isEmpty, toArrow work")
    kept.unpersist()
    df.write.parquet(str(folder / "ids"))
    check(spark.read.parquet(str(folder / "ids")).count() == 4, "createDataFrame(pa.Table), read.parquet work")


def streaming(spark: SparkSession, folder: Path) -> None:
    out = folder / "batches.jsonl"
    held: list[int] = []

    def collect(bdf: DataFrame, batch_id: int) -> None:
        held.append(batch_id)  # a copy of the list, on the server
        rows = [list(r) for r in bdf.collect()]
        with open(out, "a", encoding="utf-8") as f:
            f.write(json.dumps({"id": batch_id, "pid": os.getpid(), "rows": rows}) + "\n")

    src = explicit_stream(spark, folder, FIRST_LISTS)
    df = watermarked(src).observe("seen", F.count(F.lit(1)).alias("rows"))
    query: Any = hosted(df, Recorder(plus=10)).writeStream.foreachBatch(collect)
    query = query.option("checkpointLocation", str(folder / "ck")).trigger(availableNow=True).start()
    query.awaitTermination()
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    got = {d["id"]: {tuple(r) for r in d["rows"]} for d in lines}
    for batch_id in sorted(got):
        print(f"  batch {batch_id} {sorted(got[batch_id])}")
    check(got == FIRST_RUN, "the explicit-batches source and the event-time TWS give classic Spark's batches")
    check(held == [] and os.getpid() not in {d["pid"] for d in lines}, "foreachBatch's function runs on the server")
    progress = query.recentProgress[1]
    observed = progress["observedMetrics"]["seen"]
    print(f"  a streaming observation in the client's progress: {observed!r}")
    rows_in = dict(progress).get("numInputRows", "absent")
    source_rows = progress["sources"][0]["numInputRows"]
    print(f"  the client's progress of batch 1: numInputRows {rows_in}, the source's {source_rows}")
    check(
        rows_in in (None, "absent") and source_rows == 1,
        "the client's progress has no numInputRows of its own (None), only each source's count",
        (rows_in, source_rows),
    )
    check(
        isinstance(observed, dict) or "values" in str(observed),
        "a streaming observation reaches the client as Row(values=[...], schema=...), not a Row of named values",
        observed,
    )


def main() -> None:
    folder = scratch("connect")
    with connect_server(folder) as url:
        print(f"a Spark Connect server on loopback; client {url.split(':')[0]}://127.0.0.1:<port>")
        spark = SparkSession.builder.remote(url).getOrCreate()
        try:
            try:
                spark.sparkContext  # noqa: B018
                has_context = True
            except Exception as e:
                has_context = False
                print(f"  spark.sparkContext: {type(e).__name__}")
            check(not has_context, "spark.sparkContext is absent on a Connect session")
            dataframe_calls(spark, folder)
            streaming(spark, folder)
        finally:
            spark.stop()


if __name__ == "__main__":
    main()
