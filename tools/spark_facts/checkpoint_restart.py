"""Section 4: restarts from a checkpoint. State and timers survive; batch ids continue after a clean stop; an
interrupted batch is replayed with the same id and offsets (its offset log entry also fixes
``batchWatermarkMs`` and ``batchTimestampMs``); the Parquet file sink stays exactly-once for Spark's reader
(``_spark_metadata``); a clean ``q.stop()`` from another thread interrupts a running batch at once, with
``q.exception()`` None, and the files the interrupted batch had written are deleted (none is left outside
``_spark_metadata``); splitting a run changes batch boundaries.

A processor's pickled list of seen timestamps lives in a ValueState blob; each row registers ts+10. The kill
variant of the doc (SIGKILL of the driver) is covered by the repository's fault tests, not here."""

# ruff: noqa: N802, N803 (Spark's callback interfaces name their methods and arguments in camelCase)

from __future__ import annotations

import json
import os
import pickle
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

from ._common import OUTPUT_DDL, check, explicit_stream, rows, scratch, session, watermarked

LISTS = [
    rows("a@1000", "b@1000"),
    rows("a@2000"),
    rows("a@3000", "b@777", "c@3000", "d@3000", "e@3000"),
    rows("a@2500"),
    rows("b@4000"),
    rows("a@6000"),
]


class BlobRecorder(StatefulProcessor):
    """``("in", k, ts, wm, "n=..")`` per row and ``("timer", k, t, wm, "n=.. sum=..")`` per fired timer; blocks
    on a row b@777 while the file ``block`` (an option) exists, after creating ``entered``."""

    def __init__(self, block: str) -> None:
        self.block = block

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.seen = handle.getValueState("seen", "blob BINARY")

    def _seen(self) -> list[int]:
        value = self.seen.get()
        return [] if value is None else list(pickle.loads(value[0]))

    def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[pd.DataFrame]:
        seen = self._seen()
        wm = int(timerValues.getCurrentWatermarkInMs())
        out = []
        for frame in rows:
            for k, ts in frame[["k", "ts"]].itertuples(index=False):
                if ts == 777 and os.path.exists(self.block):
                    Path(self.block + ".entered").touch()
                    deadline = time.monotonic() + 120
                    while os.path.exists(self.block) and time.monotonic() < deadline:
                        time.sleep(0.05)
                seen.append(int(ts))
                self.handle.registerTimer(int(ts) + 10)
                out.append(("in", k, int(ts), wm, f"n={len(seen)}"))
        self.seen.update((pickle.dumps(seen),))
        yield pd.DataFrame(out, columns=["kind", "k", "t", "wm", "info"])

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:
        seen = self._seen()
        t = int(expiredTimerInfo.getExpiryTimeInMs())
        row = ("timer", key[0], t, int(timerValues.getCurrentWatermarkInMs()), f"n={len(seen)} sum={sum(seen)}")
        yield pd.DataFrame([row], columns=["kind", "k", "t", "wm", "info"])


class Job:
    """The query over ``LISTS`` (released by the file ``avail``) into a Parquet file sink with a checkpoint."""

    def __init__(self, spark: SparkSession, name: str) -> None:
        self.spark = spark
        self.folder = scratch(name)
        self.avail = self.folder / "avail"
        self.block = self.folder / "block"
        self.release(len(LISTS))

    def release(self, count: int) -> None:
        self.avail.write_text(str(count), encoding="utf-8")

    def start(self, available_now: bool = True) -> Any:
        src = explicit_stream(self.spark, self.folder, LISTS, avail=str(self.avail))
        df = watermarked(src)
        out = df.groupBy("shard").transformWithStateInPandas(
            BlobRecorder(str(self.block)), OUTPUT_DDL, "Append", "EventTime"
        )
        writer = out.writeStream.format("parquet").option("path", str(self.folder / "out"))
        writer = writer.option("checkpointLocation", str(self.folder / "ck"))
        return writer.trigger(availableNow=True).start() if available_now else writer.start()

    def run(self) -> list[int]:
        query = self.start()
        query.awaitTermination()
        return [p["batchId"] for p in query.recentProgress]

    def logged(self, kind: str) -> list[int]:
        folder = self.folder / "ck" / kind
        return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit()) if folder.exists() else []

    def output(self) -> list[tuple[Any, ...]]:
        return sorted(tuple(r) for r in self.spark.read.parquet(str(self.folder / "out")).collect())

    def orphans(self) -> list[str]:
        listed: set[str] = set()
        for log in (self.folder / "out" / "_spark_metadata").iterdir():
            if not log.name.split(".")[0].isdigit() or log.name.endswith(".crc"):
                continue
            for line in log.read_text(encoding="utf-8").splitlines()[1:]:
                listed.add(Path(json.loads(line)["path"]).name)
        files = {p.name for p in (self.folder / "out").glob("*.parquet")}
        return sorted(files - listed)


def main() -> None:
    spark = session("checkpoint_restart")
    print("== reference: one availableNow run over 6 lists")
    ref = Job(spark, "restart-ref")
    ref_batches = ref.run()
    expected = ref.output()
    print(
        f"  batchIds {ref_batches}; offsets={ref.logged('offsets')} commits={ref.logged('commits')};"
        f" rows={len(expected)}"
    )
    offsets2 = (ref.folder / "ck" / "offsets" / "2").read_text(encoding="utf-8").splitlines()
    print(f"  offsets/2: {offsets2[1][:60]}... {offsets2[2:]}")
    meta = json.loads(offsets2[1])
    check(
        meta["batchWatermarkMs"] == 1999 and meta["batchTimestampMs"] > 0 and json.loads(offsets2[-1]) == {"b": 3},
        "the offset log keeps batchWatermarkMs, batchTimestampMs and the source's end offset",
    )

    print("== split: availableNow over 3 lists, then again over all 6, same checkpoint")
    split = Job(spark, "restart-split")
    split.release(3)
    first = split.run()
    print(f"  run 1: batchIds {first} offsets={split.logged('offsets')} commits={split.logged('commits')}")
    split.release(6)
    second = split.run()
    got = split.output()
    print(f"  run 2: batchIds {second}; rows={len(got)} distinct={len(set(got))} equal_to_ref={got == expected}")
    print(f"  missing: {sorted(set(expected) - set(got))}  extra: {sorted(set(got) - set(expected))}")
    check(first == [0, 1, 2, 3] and second[0] == 4, "run 1 ends with its trailing no-data batch 3; run 2 starts at 4")
    check(
        ("timer", "a", 3010, 3999, "n=5 sum=14500") in got,
        "state and timers survive: a@3010, registered in run 1, fires in run 2 with the counters continued",
        [r for r in got if r[0] == "timer"],
    )
    check(
        ("timer", "a", 2010, 2999, "n=3 sum=6000") in got and ("timer", "a", 2010, 2999, "n=4 sum=8500") in expected,
        "splitting a run changes batch boundaries: a@2010 fires before a@2500 arrives (n=3), not after (n=4)",
    )

    print("== stop: a query without a trigger; q.stop() while batch 2 blocks inside handleInputRows")
    stop = Job(spark, "restart-stop")
    stop.block.touch()
    query = stop.start(available_now=False)
    entered = Path(str(stop.block) + ".entered")
    while not entered.exists():
        time.sleep(0.05)
    deadline = time.monotonic() + 30
    while not stop.orphans() and time.monotonic() < deadline:
        time.sleep(0.1)  # the task of the other partition writes its file
    written = stop.orphans()
    print(f"  while batch 2 blocks, files of batch 2 not in _spark_metadata: {len(written)}")
    started = time.perf_counter()
    stopper = threading.Thread(target=query.stop)
    stopper.start()
    stopper.join()
    took = time.perf_counter() - started
    left = stop.orphans()
    waited = time.perf_counter()
    while stop.orphans() and time.perf_counter() - waited < 20:
        time.sleep(0.1)
    gone = not stop.orphans()
    print(
        f"  right after q.stop(): {len(left)}; "
        + (f"none {time.perf_counter() - waited:.1f}s later" if gone else "still there 20 s later")
    )
    check(bool(written), "the task of the partition that does not block wrote its file before the stop")
    before = stop.output()
    offsets, commits = stop.logged("offsets"), stop.logged("commits")
    print(f"  q.stop() returned after {took:.1f}s; offsets={offsets} commits={commits}; exception: {query.exception()}")
    print(f"  output before restart: rows={len(before)}")
    hashed = spark.createDataFrame([(k,) for k in "abcde"], "k STRING").selectExpr("k", "pmod(hash(k), 2) AS p")
    where = {r["k"]: r["p"] for r in hashed.collect()}
    print(f"  shuffle partition of each key of batch 2 (b@777 blocks): {where}")
    check(
        any(where[k] != where["b"] for k in "acde"),
        "batch 2 has rows in the partition that does not block, whose task ends before the stop",
    )
    check(took < 30 and query.exception() is None, "q.stop() interrupts the running batch; exception() is None")
    check(offsets == [0, 1, 2] and commits == [0, 1], "batch 2's offsets are logged, its commit is not")
    stop.block.unlink()
    after = stop.run()
    got = stop.output()
    orphans = stop.orphans()
    print(f"  after restart (availableNow): batchIds {after}; rows={len(got)} equal_to_ref={got == expected}")
    print(f"  parquet files={len(list((stop.folder / 'out').glob('*.parquet')))} orphans={len(orphans)}")
    check(after[0] == 2, "the interrupted batch is replayed with the same id, 2")
    check(got == expected, "the file sink read through Spark equals the uninterrupted run (exactly-once)")
    check(
        not orphans,
        "no orphan: after the replay every Parquet file of the folder is in _spark_metadata "
        "(the stopped attempt's file was deleted)",
        orphans,
    )
    spark.stop()


if __name__ == "__main__":
    main()
