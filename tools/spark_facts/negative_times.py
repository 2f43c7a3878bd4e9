"""Section 2 (g): Spark's watermark is clamped at 0: while every event time is <= 0 it stays 0, and timers
<= 0 fire at once. Shifting ``wm_ts`` (and timers) by a constant S makes negative watermarks exact: with
S = 62_135_596_800_000 (ms from 0001-01-01 to 1970-01-01), and with S = 2**52."""

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

SHIFT = 62_135_596_800_000


def main() -> None:
    spark = session("negative_times")
    folder = scratch("negative")
    lists = [rows("n@-5000:-6000,-100,0,1"), [], rows("n@-3000"), [], rows("n@1"), [], rows("n@3"), []]
    print("== no shift: n@-5000 (timers -6000,-100,0,1), [], n@-3000, [], n@1, [], n@3, []")
    batches = run(spark, hosted(watermarked(explicit_stream(spark, folder, lists)), Recorder()), folder / "ck")
    show(batches)
    fired = [[r[2] for r in b.rows if r[0] == "timer"] for b in batches]
    check(fired[0] == [-6000, -100, 0], "timers <= 0 fire at once, in batch 0, at watermark 0", fired[0])
    check(
        [ms(b.watermark) for b in batches[:7]] == [0] * 7,
        "the watermark stays 0 while wm_ts is -5001, -3001, 0 (clamped at 0)",
        [b.watermark for b in batches],
    )
    check(ms(batches[7].watermark) == 2 and fired[7] == [1], "wm_ts 2 moves it: batch 7 at wm 2 fires timer 1")

    for shift, label in [(SHIFT, "62135596800000"), (2**52, "2**52")]:
        print(f"== shift S = {label}: wm_ts = ts - 1 + S, timers at t + S; n@-5000 timers -6000,-5002,-5001,-5000, []")
        sub = scratch("shift")
        shifted = [rows("n@-5000:-6000,-5002,-5001,-5000"), []]
        src = explicit_stream(spark, sub, shifted)
        out = run(spark, hosted(watermarked(src, shift=shift), Recorder(shift=shift)), sub / "ck")
        show(out)
        check(out[0].watermark == "1970-01-01T00:00:00.000Z", "batch 0: raw watermark 0, meaning none yet")
        timers = [(r[2], r[3]) for r in out[1].rows if r[0] == "timer"]
        check(
            timers == [(-6000, -5001), (-5002, -5001), (-5001, -5001)],
            "batch 1: timers (t-S) -6000, -5002, -5001 fire at (wm-S) = -5001; -5000 waits",
            timers,
        )
    spark.stop()


if __name__ == "__main__":
    main()
