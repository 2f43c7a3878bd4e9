"""What the probes share: a small local session, an explicit-batches streaming source, a recording
``transformWithStateInPandas`` processor, the pipeline of docs/spark-facts.md sections 1 and 2, and ``check``.

Nothing here is panes: the probes test Spark itself, so a Spark upgrade that changes a fact the runner relies on
fails a probe, not a panes test that would be hard to read."""

# ruff: noqa: N802, N803 (Spark's callback interfaces name their methods and arguments in camelCase)

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

ROOT = Path(__file__).resolve().parents[2]
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
INPUT_DDL = "k STRING, ts LONG, timers STRING"
OUTPUT_DDL = "kind STRING, k STRING, t LONG, wm LONG, info STRING"
Row = tuple[Any, ...]


class FactBroken(AssertionError):
    """Spark did not behave as docs/spark-facts.md says."""


def check(condition: bool, fact: str, seen: object = None) -> None:
    """Fail the probe, naming the fact and what was seen, unless ``condition`` holds."""
    if not condition:
        raise FactBroken(f"FACT BROKEN: {fact}" + ("" if seen is None else f"\n  seen: {seen!r}"))
    print(f"  ok: {fact}")


def session(app: str, **conf: str) -> SparkSession:
    """A plain local[2] session: 2 shuffle partitions, RocksDB state store, UTC, no UI. The repository is put on
    the JVM's ``PYTHONPATH`` so that Python workers import these probes' classes by reference."""
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    path = os.environ.get("PYTHONPATH", "")
    if str(ROOT) not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), path) if p)
    settings = {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        **{key.replace("__", "."): value for key, value in conf.items()},
    }
    builder = SparkSession.builder.master("local[2]").appName(app)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def scratch(name: str) -> Path:
    """A fresh temporary folder for one probe (checkpoints, input files, logs)."""
    return Path(tempfile.mkdtemp(prefix=f"spark-facts-{name}-"))


def ms(iso: str | None) -> int | None:
    """Milliseconds since the epoch of a progress timestamp such as ``1970-01-01T00:00:01.999Z``."""
    if iso is None:
        return None
    return round(datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp() * 1000)


FIRST_RUN: dict[int, set[Row]] = {
    0: {("in", "a", 1000, 0, ""), ("in", "b", 2000, 0, "")},
    1: {("in", "a", 5000, 1999, ""), ("timer", "a", 1010, 1999, "cnt=1002")},
    2: {("in", "a", 500, 4999, ""), ("timer", "a", 510, 4999, "cnt=2003"), ("timer", "b", 2010, 4999, "cnt=1001")},
    3: {("in", "b", 20000, 4999, "")},
    4: {("timer", "a", 5010, 19999, "cnt=3003")},
}
"""The output per batch of ``Recorder(plus=10)`` over ``FIRST_LISTS`` with ``availableNow`` (section 1)."""


def rows(*specs: str) -> list[list[Any]]:
    """``rows("a@1000", "b@2000:998,999")``: key ``a`` at ts 1000; after ``:`` the timers the row registers."""
    out: list[list[Any]] = []
    for spec in specs:
        head, _, timers = spec.partition(":")
        key, _, ts = head.partition("@")
        out.append([key, int(ts), timers])
    return out


FIRST_LISTS = [rows("a@1000", "b@2000"), rows("a@5000"), rows("a@500"), rows("b@20000")]
"""Section 1's lists: ``[[a@1000, b@2000], [a@5000], [a@500], [b@20000]]``."""


# ---------------------------------------------------------------------------------------------- the source


class _ListPartition(InputPartition):
    def __init__(self, index: int) -> None:
        self.index = index


def _log(path: str | None, line: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()} {line}\n")


class ExplicitReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets ``{"b": lists consumed}``; ``latestOffset`` moves at most one list per call. Options: ``path``
    (JSON ``{"batches": [[row, ...], ...]}``), ``avail`` (a file holding how many lists are released; all when
    absent), ``log`` (a file each call appends ``pid method ...`` to)."""

    def __init__(self, options: dict[str, str]) -> None:
        self.path = options["path"]
        self.avail = options.get("avail")
        self.log = options.get("log")
        self.target: int | None = None

    def _released(self) -> int:
        with open(self.path, encoding="utf-8") as f:
            count = len(json.load(f)["batches"])
        if self.avail:
            with open(self.avail, encoding="utf-8") as f:
                count = min(count, int(f.read().strip() or 0))
        return count

    def initialOffset(self) -> dict[str, int]:
        return {"b": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._released()
        _log(self.log, f"prepareForTriggerAvailableNow {self.target}")

    def latestOffset(self, start: dict[str, int], limit: Any) -> dict[str, int]:
        count = self._released() if self.target is None else self.target
        end = {"b": min(start["b"] + 1, count)} if start["b"] < count else dict(start)
        _log(self.log, f"latestOffset {start} -> {end}")
        return end

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        _log(self.log, f"partitions {start} {end}")
        return [_ListPartition(i) for i in range(start["b"], end["b"])]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, _ListPartition)
        _log(self.log, f"read {partition.index}")
        with open(self.path, encoding="utf-8") as f:
            batch = json.load(f)["batches"][partition.index]
        for row in batch:
            yield tuple(row)

    def commit(self, end: dict[str, int]) -> None:
        _log(self.log, f"commit {end}")


class ExplicitBatches(DataSource):
    """Spark data source ``explicit_batches``: one micro-batch per list (see ``ExplicitReader``)."""

    @classmethod
    def name(cls) -> str:
        return "explicit_batches"

    def schema(self) -> str:
        return self.options.get("schema", INPUT_DDL)

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return ExplicitReader(dict(self.options))


def explicit_stream(spark: SparkSession, folder: Path, lists: list[list[list[Any]]], **options: str) -> DataFrame:
    """A streaming DataFrame of ``lists``, one list per micro-batch (written to ``folder/lists.json``)."""
    path = folder / "lists.json"
    path.write_text(json.dumps({"batches": lists}), encoding="utf-8")
    spark.dataSource.register(ExplicitBatches)
    reader = spark.readStream.format("explicit_batches").option("path", str(path))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


# ------------------------------------------------------------------------------------------- the processor


class Recorder(StatefulProcessor):
    """Emits ``("in", k, ts, wm, timers)`` per input row and ``("timer", k, t, wm, info)`` per fired timer.

    Per row it registers ``ts + plus`` (unless ``plus`` is None) and the timers listed in the row's ``timers``.
    A ValueState ``cnt`` counts rows (+1) and fired timers (+1000); a fired timer's info is ``cnt=...``.
    ``chain``: a fired timer T < 1100 registers T+10 (at or below the watermark) and T+5000, and its info is
    ``listTimers=[...]``. ``shift``: timers are registered at ``t + shift`` and reported as ``expiry - shift``;
    the watermark is reported as ``raw - shift`` when raw > 0 (raw 0 is reported as 0)."""

    def __init__(self, plus: int | None = None, chain: bool = False, shift: int = 0) -> None:
        self.plus = plus
        self.chain = chain
        self.shift = shift

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.cnt = handle.getValueState("cnt", "n LONG")

    def _wm(self, timer_values: Any) -> int:
        raw = int(timer_values.getCurrentWatermarkInMs())
        return raw - self.shift if raw > 0 else raw

    def _count(self, delta: int) -> int:
        value = self.cnt.get()
        n = (0 if value is None else int(value[0])) + delta
        self.cnt.update((n,))
        return n

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[pd.DataFrame]:
        wm = self._wm(timerValues)
        out: list[Row] = []
        for frame in rows:
            for k, ts, timers in frame[["k", "ts", "timers"]].itertuples(index=False):
                self._count(1)
                due = [] if self.plus is None else [int(ts) + self.plus]
                due += [int(t) for t in str(timers or "").split(",") if t]
                for t in due:
                    self.handle.registerTimer(t + self.shift)
                out.append(("in", k, int(ts), wm, timers or ""))
        yield pd.DataFrame(out, columns=["kind", "k", "t", "wm", "info"])

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:
        t = int(expiredTimerInfo.getExpiryTimeInMs()) - self.shift
        n = self._count(1000)
        info = f"cnt={n}"
        if self.chain:
            if t < 1100:
                self.handle.registerTimer(t + 10 + self.shift)
                self.handle.registerTimer(t + 5000 + self.shift)
            info = f"listTimers={sorted(int(x) - self.shift for x in self.handle.listTimers())}"
        row = ("timer", key[0], t, self._wm(timerValues), info)
        yield pd.DataFrame([row], columns=["kind", "k", "t", "wm", "info"])


# --------------------------------------------------------------------------------------------- the pipeline


@dataclass
class Batch:
    """One micro-batch: its output rows (in collection order) and its progress."""

    id: int
    rows: list[Row] = field(default_factory=list)
    input_rows: int = 0
    watermark: str | None = None
    dropped: list[int] = field(default_factory=list)
    durations: dict[str, int] = field(default_factory=dict)
    commit_ms: list[int] = field(default_factory=list)

    def line(self) -> str:
        wm = self.watermark or "-"
        return f"batch {self.id} rows_in={self.input_rows} progress_wm={wm} dropped={self.dropped} {self.rows}"


def watermarked(src: DataFrame, delay: int = 0, shift: int = 0, keep: bool = False) -> DataFrame:
    """Flink's bounded out-of-orderness at micro-batch boundaries: ``wm_ts = ts - delay - 1 (+ shift)``,
    ``withWatermark("wm_ts", "0 seconds")``, then (unless ``keep``) ``wm_ts`` dropped; ``shard`` = ``k``."""
    df = src.withColumn("wm_ts", F.timestamp_millis(F.col("ts") - delay - 1 + shift)).withWatermark(
        "wm_ts", "0 seconds"
    )
    if not keep:
        df = df.drop("wm_ts")
    return df.withColumn("shard", F.col("k"))


def hosted(df: DataFrame, processor: StatefulProcessor) -> DataFrame:
    """``groupBy("shard").transformWithStateInPandas(processor)`` in Append mode with event time."""
    return df.groupBy("shard").transformWithStateInPandas(processor, OUTPUT_DDL, "Append", "EventTime")


def progress_of(query: Any, batches: dict[int, Batch]) -> list[Batch]:
    """Fill ``batches`` with each progress entry of ``query``; returns them by batch id."""
    for p in query.recentProgress:
        batch = batches.setdefault(p["batchId"], Batch(p["batchId"]))
        batch.input_rows = int(p["numInputRows"])
        batch.watermark = p.get("eventTime", {}).get("watermark")
        batch.dropped = [int(op.get("numRowsDroppedByWatermark", 0)) for op in p.get("stateOperators", [])]
        batch.durations = dict(p.get("durationMs", {}))
        batch.commit_ms = [int(op.get("commitTimeMs", 0)) for op in p.get("stateOperators", [])]
    return [batches[i] for i in sorted(batches)]


def run(
    spark: SparkSession,
    out: DataFrame,
    checkpoint: Path,
    available_now: bool = True,
    before_wait: Callable[[Any], None] | None = None,
) -> list[Batch]:
    """Run ``out`` with ``foreachBatch`` collecting each batch's rows, ``availableNow`` by default, to its end."""
    batches: dict[int, Batch] = {}

    def collect(bdf: DataFrame, batch_id: int) -> None:
        batches.setdefault(batch_id, Batch(batch_id)).rows = [tuple(r) for r in bdf.collect()]

    writer = out.writeStream.foreachBatch(collect).option("checkpointLocation", str(checkpoint))
    if available_now:
        writer = writer.trigger(availableNow=True)
    query = writer.start()
    if before_wait is not None:
        before_wait(query)
    query.awaitTermination()
    return progress_of(query, batches)


def show(batches: list[Batch]) -> None:
    for batch in batches:
        print(batch.line())


def kinds(batch: Batch, kind: str) -> list[tuple[str, int]]:
    """The ``(key, t)`` of a batch's rows of one kind, in order."""
    return [(r[1], r[2]) for r in batch.rows if r[0] == kind]
