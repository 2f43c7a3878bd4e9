"""What a Spark job costs beyond its micro-batches: the fixed cost of each ``execute()`` in a warm session.

    .venv/bin/python bench/query_start.py               # 3 rounds
    .venv/bin/python bench/query_start.py --rounds 5

The job: ``n`` lists of one record each (``from_micro_batches``), monotonous watermarks, ``key_by``, tumbling
1.5-second windows reduced by a lambda, into a ``ListSink``, on ``local[2]`` with two shards. Each round runs it
with 1 list and with 6 lists in one warm session (the first round also pays for the JVM's and the Python workers'
start) and prints:

- the wall seconds of each ``execute()``, the cost of one more list (their difference over 5), and the fixed
  cost of an ``execute()`` (a one-list job less one list);
- for the one-list job, Spark's progress per micro-batch (``queryPlanning``, ``addBatch`` and the whole trigger,
  in ms, and the rows read) and the seconds from ``execute()`` to the first trigger: a job of ``n`` lists runs
  ``n`` micro-batches of input, one with the end-of-input sentinel, and Spark's no-data batch that fires at the
  final watermark.

Nothing is written; the figures are for reading (issue 45: a test or a short job pays this fixed cost per
``execute()``, beside ``bench/batch_cost.py``'s cost per micro-batch).
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def run(spark: Any, lists: int) -> tuple[float, float, list[dict[str, Any]]]:
    """One run of the job over ``lists`` one-record lists: its wall seconds, the epoch seconds it started at and
    Spark's progress per micro-batch."""
    from panes.datastream import ListSink, StreamEnvironment
    from panes.spark import SparkRunner
    from panes.watermarks import WatermarkStrategy
    from panes.windowing import TumblingEventTimeWindows

    env = StreamEnvironment(SparkRunner(spark, num_shards=2, quiet=True))
    batches = [[{"k": "a", "ts": i * 1_000}] for i in range(lists)]
    stamped = env.from_micro_batches(batches).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    )
    stamped.key_by("k").window(TumblingEventTimeWindows.of(1_500)).reduce(lambda a, b: a).sink_to(ListSink())
    started, clock = time.monotonic(), time.time()
    result = env.execute("query start")
    return time.monotonic() - started, clock, list(result.details["progress"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of a 1-list and a 6-list job (default 3)")
    arguments = parser.parse_args()
    from panes.spark import create_session

    spark = create_session("local[2]", app_name="query-start")
    try:
        for round_ in range(arguments.rounds):
            one, clock, progress = run(spark, 1)
            six, _, _ = run(spark, 6)
            per_list = (six - one) / 5
            print(
                f"round {round_ + 1}: 1 list {one:.2f} s, 6 lists {six:.2f} s; one more list {per_list:.2f} s, "
                f"fixed per execute() {one - per_list:.2f} s",
                flush=True,
            )
            first = datetime.fromisoformat(progress[0]["timestamp"].replace("Z", "+00:00")).timestamp()
            print(f"  execute() to the first trigger: {first - clock:.2f} s")
            for entry in progress:
                durations = entry["durationMs"]
                print(
                    f"  batch {entry['batchId']}: rows {entry['numInputRows']}, queryPlanning "
                    f"{durations.get('queryPlanning', 0)} ms, addBatch {durations.get('addBatch', 0)} ms, "
                    f"trigger {durations.get('triggerExecution', 0)} ms"
                )
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
