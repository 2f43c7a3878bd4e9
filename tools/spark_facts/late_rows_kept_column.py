"""Section 2 (a), the control: with ``wm_ts`` kept in the grouped input, Spark drops late rows, but by the
watermark of the batch before (``eventTimeWatermarkForLateEvents``), while ``getCurrentWatermarkInMs()`` and
timers use the current one. Lists ``[[a@1000], [a@5000], [a@500, a@4999, a@5000, a@5001]]``: in batch 2 only
a@500 (wm_ts 499 <= 999) is dropped; a@4999 (wm_ts 4998 <= 4999) is kept."""

from __future__ import annotations

from ._common import (
    Recorder,
    check,
    explicit_stream,
    hosted,
    kinds,
    ms,
    rows,
    run,
    scratch,
    session,
    show,
    watermarked,
)


def main() -> None:
    spark = session("late_rows_kept_column")
    folder = scratch("kept")
    lists = [rows("a@1000"), rows("a@5000"), rows("a@500", "a@4999", "a@5000", "a@5001")]
    df = watermarked(explicit_stream(spark, folder, lists), keep=True)
    batches = run(spark, hosted(df, Recorder()), folder / "ck")
    show(batches)
    late = batches[2]
    check(late.input_rows == 4 and ms(late.watermark) == 4999, "batch 2 reads 4 rows at watermark 4999")
    check(late.dropped == [1], "numRowsDroppedByWatermark is 1 in batch 2", late.dropped)
    check(
        kinds(late, "in") == [("a", 4999), ("a", 5000), ("a", 5001)],
        "only a@500 is dropped: the late filter uses the previous batch's watermark (999), not 4999",
        kinds(late, "in"),
    )
    check(all(r[3] == 4999 for r in late.rows), "the processor sees the current watermark, 4999")
    spark.stop()


if __name__ == "__main__":
    main()
