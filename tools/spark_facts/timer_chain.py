"""Section 2 (d'): a timer registered in ``handleExpiredTimer`` at or below the watermark does not fire in that
batch; the next batch that runs fires it (even when the watermark did not move), and without a next batch it
waits. Expired timers fire in ascending time across keys, and ``listTimers()`` still lists the firing timer.
Each fired timer T < 1100 registers T+10 and T+5000; lists ``[[a@1000], [b@5000], [], [c@100]]``, rows register
ts+10. One shuffle partition, so the order across keys is observable."""

from __future__ import annotations

from ._common import (
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
    spark = session("timer_chain", spark__sql__shuffle__partitions="1")
    folder = scratch("chain")
    lists = [rows("a@1000"), rows("b@5000"), [], rows("c@100")]
    batches = run(
        spark, hosted(watermarked(explicit_stream(spark, folder, lists)), Recorder(plus=10, chain=True)), folder / "ck"
    )
    show(batches)
    timers = [[(*r[1:3], r[4]) for r in b.rows if r[0] == "timer"] for b in batches]
    check(
        timers[2] == [("a", 1010, "listTimers=[1010, 1020, 6010]")],
        "batch 2 fires a@1010, which registers 1020 (<= wm 4999) and 6010; 1020 does not fire in batch 2; "
        "listTimers() lists the firing timer",
        timers[2],
    )
    check(
        timers[3] == [("c", 110, "listTimers=[110, 120, 5110]"), ("a", 1020, "listTimers=[1020, 1030, 6010, 6020]")],
        "batch 3 (watermark unchanged) fires c@110 and the leftover a@1020, in ascending time across keys; "
        "c@120 registered there does not fire",
        timers[3],
    )
    check(len(batches) == 4, "no batch follows: c@120 and a@1030 (<= wm) stay pending", len(batches))
    spark.stop()


if __name__ == "__main__":
    main()
