"""Section 5, ``transformWithStateInPandas`` on a batch DataFrame: the watermark is -1 even with
``withWatermark`` in the plan, and no timer fires, not even one at 500."""

from __future__ import annotations

from ._common import INPUT_DDL, Recorder, check, hosted, session, watermarked


def main() -> None:
    spark = session("tws_batch")
    src = spark.createDataFrame([("a", 1000, "500,1000,99999"), ("b", 2000, "")], INPUT_DDL)
    got = sorted(tuple(r) for r in hosted(watermarked(src), Recorder()).collect())
    print(got)
    check(
        got == [("in", "a", 1000, -1, "500,1000,99999"), ("in", "b", 2000, -1, "")],
        "in a batch query the processor sees watermark -1 and no timer fires",
        got,
    )
    spark.stop()


if __name__ == "__main__":
    main()
