"""Section 7: the Row API (``transformWithState``) versus the pandas API (``transformWithStateInPandas``), and
Arrow. There is no Arrow-native TWS (eval types are pandas or Python rows only); the pandas path regroups each
Arrow batch row by row (``itertuples`` in ``worker.py``); the Row API costs less per call, the pandas API less
per row; packing rows into Arrow IPC blobs per shard with ``mapInArrow`` (after ``wm_ts`` is dropped) cuts the
pandas path's cost again, and the watermark still advances through ``mapInArrow``. Timings are printed; the
probe asserts the eval types, the ``itertuples`` line, the watermark through ``mapInArrow``, and that the Row
API is cheaper than the pandas API for many one-row calls."""

# ruff: noqa: N802, N803 (Spark's callback interfaces name their methods and arguments in camelCase)

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyspark.worker
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle
from pyspark.util import PythonEvalType

from ._common import check, ms, scratch, session

OUT = "k STRING, n LONG, distinct LONG"
PACKED = "shard STRING, n LONG, payload BINARY"


class _Part(InputPartition):
    def __init__(self, index: int) -> None:
        self.index = index


class GeneratedReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``batches`` micro-batches of ``rows`` rows over ``shards`` keys, as Arrow record batches."""

    def __init__(self, options: dict[str, str]) -> None:
        self.rows = int(options["rows"])
        self.shards = int(options["shards"])
        self.batches = int(options["batches"])

    def initialOffset(self) -> dict[str, int]:
        return {"b": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        return None

    def latestOffset(self, start: dict[str, int], limit: Any) -> dict[str, int]:
        return {"b": min(start["b"] + 1, self.batches)}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        return [_Part(i) for i in range(start["b"], end["b"])]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _Part)
        ids = np.arange(self.rows, dtype=np.int64)
        keys = pa.array((ids % self.shards).astype(str))
        ts = pa.array(partition.index * 1_000_000 + ids)
        yield pa.RecordBatch.from_arrays([keys, ts], names=["k", "ts"])


class Generated(DataSource):
    @classmethod
    def name(cls) -> str:
        return "generated_rows"

    def schema(self) -> str:
        return "k STRING, ts LONG"

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return GeneratedReader(dict(self.options))


class PandasCounter(StatefulProcessor):
    def init(self, handle: StatefulProcessorHandle) -> None:
        self.total = handle.getValueState("total", "n LONG")

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[pd.DataFrame]:
        frame = pd.concat(list(rows))
        ts = frame["ts"].to_numpy() if "ts" in frame else np.concatenate([_unpack(p) for p in frame["payload"]])
        self.total.update((len(ts),))
        yield pd.DataFrame([(str(key[0]), len(ts), len(np.unique(ts)))], columns=["k", "n", "distinct"])


class RowCounter(StatefulProcessor):
    def init(self, handle: StatefulProcessorHandle) -> None:
        self.total = handle.getValueState("total", "n LONG")

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Row]:
        ts = np.array([r.ts for r in rows], dtype=np.int64)
        self.total.update((len(ts),))
        yield Row(k=str(key[0]), n=len(ts), distinct=len(np.unique(ts)))


def _unpack(payload: bytes) -> Any:
    return pa.ipc.open_stream(payload).read_all().column("ts").to_numpy()


def pack(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One row per shard and input record batch: ``(shard, n, Arrow IPC stream of its rows)``."""
    for batch in batches:
        table = pa.Table.from_batches([batch])
        for shard in pa.compute.unique(table.column("shard")).to_pylist():
            part = table.filter(pa.compute.equal(table.column("shard"), shard)).select(["ts"])
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, part.schema) as writer:
                writer.write_table(part)
            yield pa.RecordBatch.from_pydict(
                {"shard": [shard], "n": [part.num_rows], "payload": [sink.getvalue().to_pybytes()]}
            )


def measure(spark: SparkSession, api: str, rows: int, shards: int, batches: int = 3) -> tuple[list[int], str | None]:
    """``addBatch`` ms of each data batch, and the last progress watermark."""
    folder = scratch(f"api-{api}")
    spark.dataSource.register(Generated)
    src = spark.readStream.format("generated_rows").option("rows", rows).option("shards", shards)
    df: DataFrame = src.option("batches", batches).load()
    df = df.withColumn("wm_ts", F.timestamp_millis(F.col("ts") - 1)).withWatermark("wm_ts", "0 seconds")
    df = df.drop("wm_ts").withColumn("shard", F.col("k"))
    if api == "packed":
        df = df.mapInArrow(pack, PACKED)
    grouped = df.groupBy("shard")
    if api == "row":
        out = grouped.transformWithState(RowCounter(), OUT, "Append", "EventTime")
    else:
        out = grouped.transformWithStateInPandas(PandasCounter(), OUT, "Append", "EventTime")
    query: Any = out.writeStream.format("noop").option("checkpointLocation", str(folder / "ck"))
    query = query.trigger(availableNow=True).start()
    query.awaitTermination()
    progress = [p for p in query.recentProgress if p["numInputRows"]]
    return [int(p["durationMs"]["addBatch"]) for p in progress], query.recentProgress[-1]["eventTime"].get("watermark")


def main() -> None:
    tws = sorted(name for name in dir(PythonEvalType) if "TRANSFORM_WITH_STATE" in name)
    print("transformWithState eval types:", tws)
    check(
        all("PANDAS" in name or "PYTHON_ROW" in name for name in tws) and not any("ARROW" in n for n in tws),
        "there is no Arrow-native transformWithState: only pandas and Python-row eval types",
    )
    source = inspect.getsource(pyspark.worker).splitlines()
    lines = [i + 1 for i, line in enumerate(source) if "pd.concat(data_pandas, axis=1).itertuples(index=False)" in line]
    print("worker.py lines regrouping the pandas path row by row:", lines)
    check(bool(lines), "the pandas TWS path regroups each Arrow batch row by row (itertuples in pyspark/worker.py)")

    spark = session("row_vs_pandas")
    print("addBatch ms per data batch (3 batches each; the first includes the query's start-up):")
    table: dict[tuple[str, int, int], list[int]] = {}
    for rows, shards in [(400_000, 8), (2000, 2000)]:
        for api in ("pandas", "row", "packed"):
            table[(api, rows, shards)], wm = measure(spark, api, rows, shards)
            print(f"  {rows:>7} rows / {shards:>4} shards  {api:<7} {table[(api, rows, shards)]}  watermark {wm}")
            if api == "packed":
                check(ms(wm) == 2 * 1_000_000 + rows - 2, "the watermark advances through mapInArrow", wm)
    many_calls = {api: min(table[(api, 2000, 2000)][1:]) for api in ("pandas", "row")}
    check(many_calls["row"] < many_calls["pandas"], "2000 one-row calls cost less with the Row API", many_calls)
    spark.stop()


if __name__ == "__main__":
    main()
