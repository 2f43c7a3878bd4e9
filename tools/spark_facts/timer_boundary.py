"""Section 2 (a)-(f): event-time timers of ``transformWithStateInPandas`` with the watermark column dropped
before ``groupBy``. Late rows reach ``handleInputRows`` (nothing is dropped); ``getCurrentWatermarkInMs()`` is
0 in the first batch, then the largest ``wm_ts`` of the batches before, the same in both handlers and in the
progress; a timer fires when ``expiry <= watermark``; a timer registered at or below the watermark in
``handleInputRows`` fires in the same batch, after the input; no-data batches fire timers and run only when the
watermark advanced; ``handleExpiredTimer`` reads and updates ValueState."""

from __future__ import annotations

from ._common import (
    Recorder,
    check,
    explicit_stream,
    hosted,
    ms,
    rows,
    run,
    scratch,
    session,
    show,
    watermarked,
)


def main() -> None:
    spark = session("timer_boundary")
    folder = scratch("boundary")
    lists = [rows("a@1000:999,1000,1001"), [], rows("b@1500:998,999,1000"), [], rows("c@10:-200,1499,1500")]
    print("lists: [a@1000 timers 999,1000,1001], [], [b@1500 timers 998,999,1000], [], [c@10 timers -200,1499,1500]")
    batches = run(spark, hosted(watermarked(explicit_stream(spark, folder, lists)), Recorder()), folder / "ck")
    show(batches)
    fired = [[(r[1], r[2]) for r in b.rows if r[0] == "timer"] for b in batches]
    check(len(batches) == 5, "5 lists, 5 batches: c@10 does not advance the watermark, so no trailing batch")
    check([ms(b.watermark) for b in batches] == [0, 999, 999, 1499, 1499], "watermarks 0, 999, 999, 1499, 1499")
    check(
        all(r[3] == ms(b.watermark) for b in batches for r in b.rows),
        "getCurrentWatermarkInMs() is the progress watermark, the same in handleInputRows and handleExpiredTimer",
    )
    check(fired[1] == [("a", 999)], "(c) timer 999 fires at watermark 999, timer 1000 does not: expiry <= wm", fired[1])
    check(
        [r[0] for r in batches[2].rows] == ["in", "timer", "timer"] and fired[2] == [("b", 998), ("b", 999)],
        "(d) timers registered <= wm in handleInputRows fire in the same batch, after the input rows",
        batches[2].rows,
    )
    check(
        sorted(fired[3]) == [("a", 1000), ("a", 1001), ("b", 1000)] and batches[3].input_rows == 0,
        "(e) the no-data batch at wm 1499 fires a@1000, a@1001, b@1000",
    )
    check(
        ("in", "c", 10, 1499, "-200,1499,1500") in batches[4].rows and batches[4].dropped == [0],
        "(a) the late row c@10 (wm 1499) reaches handleInputRows; numRowsDroppedByWatermark 0",
    )
    check(fired[4] == [("c", -200), ("c", 1499)], "c@-200 and c@1499 fire; c@1500 stays pending (no batch follows)")
    check(all(b.dropped == [0] for b in batches), "numRowsDroppedByWatermark is 0 in every batch")
    counts = [r[4] for b in batches for r in b.rows if r[0] == "timer" and r[1] == "a"]
    check(
        counts == ["cnt=1001", "cnt=2001", "cnt=3001"],
        "(f) handleExpiredTimer reads and updates ValueState (+1000 per timer, read back later)",
        counts,
    )
    spark.stop()


if __name__ == "__main__":
    main()
