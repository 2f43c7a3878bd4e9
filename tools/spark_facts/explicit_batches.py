"""Section 1 (summary row 1): a Python streaming source whose offsets are list indexes, run with
``trigger(availableNow=True)``, gives exactly one micro-batch per list, in order, empty lists included; no
no-data batch between two lists; one trailing no-data batch only if the last list advanced the watermark.
Also: where the reader's methods run (the planner's Python process versus an executor Python worker)."""

from __future__ import annotations

import os
from collections import defaultdict

from ._common import (
    FIRST_LISTS,
    FIRST_RUN,
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
    spark = session("explicit_batches")
    folder = scratch("explicit")

    print("== one list per micro-batch: [[a@1000, b@2000], [a@5000], [a@500], [b@20000]], timer at ts+10")
    log = folder / "reader.log"
    src = explicit_stream(spark, folder, FIRST_LISTS, log=str(log))
    batches = run(spark, hosted(watermarked(src), Recorder(plus=10)), folder / "ck")
    show(batches)
    check([b.id for b in batches] == [0, 1, 2, 3, 4], "4 lists give batches 0..4 (one trailing)", len(batches))
    check({b.id: set(b.rows) for b in batches} == FIRST_RUN, "each batch emits what the doc lists")
    check([b.input_rows for b in batches] == [2, 1, 1, 1, 0], "numInputRows is 2,1,1,1,0")
    check(
        [ms(b.watermark) for b in batches] == [0, 1999, 4999, 4999, 19999],
        "watermark per batch is 0, 1999, 4999, 4999, 19999",
        [b.watermark for b in batches],
    )
    check(all(b.dropped == [0] for b in batches), "numRowsDroppedByWatermark is 0 in every batch")
    first = batches[1].rows
    check(
        first.index(("in", "a", 5000, 1999, "")) < first.index(("timer", "a", 1010, 1999, "cnt=1002")),
        "no no-data batch between lists: timer a@1010 (due at wm 1999) fires after batch 1's input rows",
        first,
    )
    check(batches[4].rows == [("timer", "a", 5010, 19999, "cnt=3003")], "the trailing no-data batch fires a@5010")

    driver = os.getpid()
    pids: dict[str, set[int]] = defaultdict(set)
    for line in log.read_text(encoding="utf-8").splitlines():
        pid, method = line.split()[:2]
        pids[method].add(int(pid))
    print("reader log (first lines):", *log.read_text(encoding="utf-8").splitlines()[:5], sep="\n  ")
    planner = pids["latestOffset"] | pids["partitions"] | pids["commit"]
    check(len(planner) == 1 and driver not in planner, "latestOffset/partitions/commit run in one Python process")
    check(
        not pids["read"] & (planner | {driver}),
        "read runs in an executor Python worker, not in the planner's process nor the driver's",
    )

    print("== variant A: [[a@1000, b@2000], [], [a@5000], [], [a@500], [], [b@20000], []]")
    folder_a = scratch("explicit-a")
    lists_a = [rows("a@1000", "b@2000"), [], rows("a@5000"), [], rows("a@500"), [], rows("b@20000"), []]
    batches_a = run(
        spark, hosted(watermarked(explicit_stream(spark, folder_a, lists_a)), Recorder(plus=10)), folder_a / "ck"
    )
    show(batches_a)
    check(len(batches_a) == 8, "8 lists give exactly 8 batches (the last list is [], no extra batch)", len(batches_a))
    check(
        batches_a[5].input_rows == 0 and batches_a[5].rows == [] and batches_a[5].watermark == batches_a[4].watermark,
        "an empty list gives a batch of its own even when the watermark did not move (batch 5)",
    )
    check(
        [ms(b.watermark) for b in batches_a] == [0, 1999, 1999, 4999, 4999, 4999, 4999, 19999],
        "the watermark never moves back: batch 6 still has 4999 after batch 4, whose largest wm_ts was 499",
        [b.watermark for b in batches_a],
    )
    check(
        [r[:3] for r in batches_a[1].rows] == [("timer", "a", 1010)],
        "the [] after a list is the no-data batch that fires its timers (batch 1: a@1010)",
    )
    spark.stop()


if __name__ == "__main__":
    main()
