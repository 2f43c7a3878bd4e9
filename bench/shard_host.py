"""One shard of a keyed window step on Spark's host, in one Python process without Spark: events per second.

    .venv/bin/python bench/shard_host.py                          # the three Python functions
    .venv/bin/python bench/shard_host.py --functions python --events 1000000
    .venv/bin/python bench/shard_host.py --repeat 5                # the fastest of 5 runs each (a noisy machine)
    .venv/bin/python bench/shard_host.py --clock cpu               # timed by CPU time (a loaded machine)
    .venv/bin/python bench/shard_host.py --functions count_sum --window session --keys 100000

What a Spark task's shard call runs (``panes.spark.shard.shard_host``: the rows of a micro-batch as Arrow in the
step's layout, the operator, the rows out, the state changes for the state store), timed alone: the suite's
tumbling 10 s windows over 10,000 keys (``workload.py``'s events: times over an hour with 5 s of disorder), in 10
micro-batches, each processed at the watermark the batch before it reached (as Spark's are), then one at the end of
time. Functions: a ``reduce`` with a lambda over dicts (``reduce``), a user ``AggregateFunction`` class
(``aggregate``), both followed by a plain window function, a Python ``ProcessWindowFunction`` (``python``: on this
typed stream, tumbling windows run all three on the columnar operator, sessions element by element) and the
built-in aggregates, which run on columns (``count_sum``); each line names the host. ``--window session``:
session windows with a 30 s gap instead of tumbling ones (the suite's session cases). This is the Python side of a
query; ``suite.py`` measures the whole of it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from panes.datastream import OutputTag, StreamEnvironment  # noqa: E402
from panes.functions import Aggregates, Count, Sum  # noqa: E402
from panes.spark.layout import ChannelCodes, Layout, Record  # noqa: E402
from panes.spark.linear import Step, linearize  # noqa: E402
from panes.spark.shard.definition import ShardDefinition  # noqa: E402
from panes.spark.shard.hosts import ShardHost, shard_host  # noqa: E402
from panes.time import LONG_MAX, LONG_MIN  # noqa: E402
from panes.watermarks import WatermarkStrategy  # noqa: E402
from panes.windowing import EventTimeSessionWindows, TumblingEventTimeWindows, WindowRow  # noqa: E402
from workload import RESULT_DDL, CountSum, CountSumAggregate, with_bounds  # noqa: E402

FUNCTIONS = ["reduce", "aggregate", "python", "count_sum"]
DISORDER = 5_000


WINDOWS = {"tumbling": TumblingEventTimeWindows.of(10_000), "session": EventTimeSessionWindows.with_gap(30_000)}


def keyed_step(function: str, window: str = "tumbling") -> tuple[Step, ChannelCodes, Layout, Any]:
    """The keyed window step of the suite's job with ``function`` over ``window`` (tumbling 10 s windows or
    sessions with a 30 s gap), its channel codes and layout, and the stream whose rows it reads."""
    env = StreamEnvironment("local")
    source = env.from_collection([], type_info="key STRING, ts BIGINT, value BIGINT")
    events = source.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(DISORDER).with_timestamp_assigner("ts")
    )
    late: OutputTag[Any] = OutputTag("late")
    windowed = events.key_by("key").window(WINDOWS[window]).side_output_late_data(late)
    if function == "reduce":
        results = windowed.reduce(
            lambda a, b: {"key": a["key"], "n": a.get("n", 1) + b.get("n", 1), "value": a["value"] + b["value"]},
            with_bounds,
            output_type=RESULT_DDL,
        )
    elif function == "aggregate":
        results = windowed.aggregate(CountSumAggregate(), with_bounds, output_type=RESULT_DDL)
    elif function == "python":
        results = windowed.process(CountSum(), output_type=RESULT_DDL)
    else:
        row = WindowRow(key="key", start="window_start", end="window_end")
        results = windowed.aggregate(Aggregates(n=Count(), total=Sum("value")), row)
    results.print()
    results.get_side_output(late).print()
    steps = linearize(env.plan())
    codes = ChannelCodes.of_steps(steps)
    (keyed,) = [step for step in steps if step.kind == "keyed"]
    return keyed, codes, Layout(codes, codes.code), events


def run(
    function: str, events: int, keys: int, batches: int, window: str = "tumbling", clock: str = "wall"
) -> tuple[float, int, str]:
    """Seconds the shard took for ``events`` events in ``batches`` micro-batches (by the wall clock, or with
    ``clock="cpu"`` this process's CPU time), the rows it returned and the host's kind."""
    timer = time.process_time if clock == "cpu" else time.perf_counter
    rng = np.random.default_rng(1)
    ts = 1_700_000_000_000 + np.sort(rng.integers(0, 3_600_000, events)) + rng.integers(-DISORDER, 1, events)
    key = rng.integers(0, keys, events)
    value = rng.integers(0, 1_000, events)
    step, codes, layout, stream = keyed_step(function, window)
    channel = (stream.transformation.id, None)
    size = -(-events // batches)
    inputs, marks = [], []
    for batch in range(batches):
        part = slice(batch * size, min(events, (batch + 1) * size))
        rows = [
            Record(channel, {"key": f"k{k}", "ts": t, "value": v}, t, batch * size + i + 1, 1)
            for i, (k, t, v) in enumerate(zip(key[part].tolist(), ts[part].tolist(), value[part].tolist(), strict=True))
        ]
        inputs.append([layout.encode(rows)])
        marks.append(int(ts[part].max()) - DISORDER - 1)
    host: ShardHost = shard_host(ShardDefinition("bench", step, codes, layout, 1, 128), 0)
    out = 0
    started = timer()
    for batch in range(batches + 1):
        watermark = LONG_MIN if batch == 0 else marks[batch - 1]
        result = host.run(
            inputs[batch] if batch < batches else [], LONG_MAX if batch == batches else watermark, 0, batch
        )
        out += sum(rows.num_rows for rows in result)
        host.changes()
    return timer() - started, out, type(host).__name__


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--functions", nargs="+", choices=FUNCTIONS, default=FUNCTIONS[:3])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--window", choices=sorted(WINDOWS), default="tumbling")
    parser.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="wall clock, or CPU time (a loaded machine)",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of each function; the fastest counts (the least disturbed)"
    )
    args = parser.parse_args()
    for function in args.functions:
        runs = [
            run(function, args.events, args.keys, args.batches, args.window, args.clock) for _ in range(args.repeat)
        ]
        seconds, out, kind = min(runs)
        print(
            f"{function:10s} {args.events / seconds:10,.0f} events/{'CPU ' if args.clock == 'cpu' else ''}s  "
            f"({seconds:.2f} s, {out:,} rows out, {kind})",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
