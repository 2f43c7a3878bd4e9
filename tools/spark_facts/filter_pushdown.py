"""Section 2 (h): a filter after ``withWatermark`` that does not reference the watermark column is pushed below
the watermark operator, so an end-of-input sentinel it removes never moves the watermark; a filter on
``wm_ts`` stays above it, and the sentinel's watermark then runs a no-data batch that fires every timer. The
sentinels' ``wm_ts``: 253402300799999 (9999-12-31T23:59:59.999Z) and 9223372036854774 (2**63 // 1000 - 1)."""

from __future__ import annotations

import contextlib
import io
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812

from ._common import Recorder, check, explicit_stream, hosted, rows, run, scratch, session, show

TIMER = 250_000_000_000_000


def pipeline(src: DataFrame, keep: Column) -> DataFrame:
    df = src.withColumn("wm_ts", F.timestamp_millis(F.col("ts") - 1)).withWatermark("wm_ts", "0 seconds")
    return df.where(keep).drop("wm_ts").withColumn("shard", F.col("k"))


def optimized(df: DataFrame) -> list[str]:
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        df.explain(mode="extended")
    plan = text.getvalue().split("== Optimized Logical Plan ==")[1].split("== Physical Plan ==")[0]
    return [line for line in plan.splitlines() if line.strip()]


def line_of(plan: list[str], *words: str) -> int:
    return next(i for i, line in enumerate(plan) if all(w in line for w in words))


def main() -> None:
    spark = session("filter_pushdown")
    for name, sentinel_wm in [("k", 253402300799999), ("wm_ts", 253402300799999), ("wm_ts", 9223372036854774)]:
        folder = scratch("eos")
        lists = [rows(f"a@1000:{TIMER}"), rows(f"__eos__@{sentinel_wm + 1}")]
        src = explicit_stream(spark, folder, lists)
        keep: Any = F.col("k") != "__eos__" if name == "k" else F.col("wm_ts") < F.timestamp_millis(F.lit(sentinel_wm))
        df = pipeline(src, keep)
        plan = optimized(df)
        print(f"== filter on {name}, sentinel wm_ts {sentinel_wm}; optimized plan:", *plan, sep="\n  ")
        below = line_of(plan, "Filter") > line_of(plan, "EventTimeWatermark")
        batches = run(spark, hosted(df, Recorder(plus=10)), folder / "ck")
        show(batches)
        fired = [r[2] for b in batches for r in b.rows if r[0] == "timer"]
        if name == "k":
            check(below, "a filter on k is pushed below EventTimeWatermark")
            check(len(batches) == 2 and fired == [], "no batch after the sentinel: timers 1010 and 2.5e14 never fire")
        else:
            check(not below, "a filter on wm_ts stays above EventTimeWatermark")
            last = batches[-1]
            check(
                len(batches) == 3 and last.input_rows == 0 and fired == [1010, TIMER],
                "the sentinel's watermark runs a no-data batch that fires 1010 and 2.5e14",
                fired,
            )
            check(all(r[3] == sentinel_wm for r in last.rows), f"the processor sees watermark {sentinel_wm}")
            print(f"  progress watermark of the last batch: {last.watermark}")
    spark.stop()


if __name__ == "__main__":
    main()
