"""Section 1, variant B: a query without a trigger, fed by releasing one more list at a time (a file the
source reads) and driven by ``processAllAvailable()``. Each release gives "data batch, then a no-data batch if
the watermark advanced", and ``processAllAvailable()`` returns only after that no-data batch. A released empty
list gives a batch of its own, as with ``availableNow``."""

from __future__ import annotations

import time
from typing import Any

from ._common import (
    Batch,
    Recorder,
    check,
    explicit_stream,
    hosted,
    progress_of,
    rows,
    scratch,
    session,
    watermarked,
)


def main() -> None:
    spark = session("process_all_available")
    folder = scratch("available")
    avail = folder / "avail"
    avail.write_text("0", encoding="utf-8")
    lists = [rows("a@1000", "b@2000"), rows("a@5000"), rows("a@500"), rows("b@20000"), []]
    src = explicit_stream(spark, folder, lists, avail=str(avail))
    batches: dict[int, Batch] = {}

    def collect(bdf: Any, batch_id: int) -> None:
        batches.setdefault(batch_id, Batch(batch_id)).rows = [tuple(r) for r in bdf.collect()]

    out = hosted(watermarked(src), Recorder(plus=10))
    query = out.writeStream.foreachBatch(collect).option("checkpointLocation", str(folder / "ck")).start()
    seen: dict[int, list[int]] = {}
    for released in range(1, len(lists) + 1):
        avail.write_text(str(released), encoding="utf-8")
        started = time.perf_counter()
        query.processAllAvailable()
        seen[released] = sorted(batches)
        print(
            f"released {released}: processAllAvailable {time.perf_counter() - started:.2f}s;"
            f" batches so far {seen[released]}"
        )
    started = time.perf_counter()
    query.processAllAvailable()
    print(f"extra processAllAvailable {time.perf_counter() - started:.2f}s")
    query.stop()
    done = progress_of(query, batches)
    for batch in done:
        print(batch.line())
    check(
        {k: seen[k] for k in (1, 2, 3, 4)}
        == {1: [0, 1], 2: [0, 1, 2, 3], 3: [0, 1, 2, 3, 4], 4: [0, 1, 2, 3, 4, 5, 6]},
        "each release gives its data batch, then a no-data batch when the watermark advanced, before "
        "processAllAvailable returns",
        seen,
    )
    check(
        seen[5] == list(range(8)) and done[7].input_rows == 0 and done[7].rows == [],
        "a released empty list gives a batch of its own (batch 7: no rows, the watermark unchanged)",
        seen[5],
    )
    check([b.id for b in done[:7] if b.input_rows == 0] == [1, 3, 6], "batches 1, 3 and 6 are the no-data batches")
    check(
        [r[:3] for r in done[1].rows] == [("timer", "a", 1010)]
        and [r[:3] for r in done[6].rows] == [("timer", "a", 5010)],
        "the no-data batches fire the timers due (a@1010 in batch 1, a@5010 in batch 6)",
    )
    spark.stop()


if __name__ == "__main__":
    main()
