"""Section 1, variant D: an ``availableNow`` query restarted once per list on the same checkpoint. Each run
ends with its own trailing no-data batch, so the batches equal variant B's (no-data batches 1, 3 and 6) and
state and timers carry across runs; the cost is a query start per list."""

from __future__ import annotations

import time

from ._common import (
    Batch,
    Recorder,
    check,
    explicit_stream,
    hosted,
    rows,
    run,
    scratch,
    session,
    show,
    watermarked,
)


def main() -> None:
    spark = session("restart_per_list")
    folder = scratch("restart-per-list")
    avail = folder / "avail"
    lists = [rows("a@1000", "b@2000"), rows("a@5000"), rows("a@500"), rows("b@20000")]
    everything: list[Batch] = []
    for released in range(1, len(lists) + 1):
        avail.write_text(str(released), encoding="utf-8")
        src = explicit_stream(spark, folder, lists, avail=str(avail))
        started = time.perf_counter()
        batches = run(spark, hosted(watermarked(src), Recorder(plus=10)), folder / "ck")
        new = [b for b in batches if b.id not in {e.id for e in everything}]
        print(f"run {released}: {time.perf_counter() - started:.2f}s, batchIds {[b.id for b in new]}")
        show(new)
        everything += new
    check([b.id for b in everything] == list(range(7)), "batch ids continue across runs: 0..6", len(everything))
    check([b.id for b in everything if b.input_rows == 0] == [1, 3, 6], "no-data batches 1, 3, 6, as variant B")
    check(
        ("timer", "a", 5010, 19999, "cnt=3003") in everything[6].rows,
        "state and timers survive restarts: a@5010 (registered in run 2) fires in run 4 with cnt=3003",
        everything[6].rows,
    )
    spark.stop()


if __name__ == "__main__":
    main()
