"""How fast window results reach PostgreSQL from Spark: panes' exactly-once ``JdbcSink`` (an upsert sink, its
commit-table bookkeeping included) against a hand-written Spark ``foreachBatch`` that upserts each micro-batch's
rows with psycopg's ``executemany`` from the tasks (``foreachPartition``, one transaction per partition, no
markers: at least once), in one process and one ``local[2]`` session.

The job is the same for both: ``--events`` events over ``--keys`` keys in ``--batches`` micro-batches (a streaming
query, ``trigger available_now`` over a new checkpoint), tumbling 10 s windows of event time firing early every
``--early`` elements and on time (``AnyOf(CountTrigger, EventTimeTrigger)``), each firing a row (key, window start
and end, count) upserted into a table keyed by (key, window_start, window_end). Rows per second are the rows the
window emitted over the wall time of ``env.execute()``; each figure is the best of ``--repeat`` runs after a warm-up
run (the two sinks' runs in turn, so neither has the warmer JVM), the table emptied before each, and both tables
must end equal (the window's final counts) for the figures to count. panes sends each key's last change of a
micro-batch's writer (``batches``), the hand-written sink every row.

    flock /tmp/panes-spark.lock .venv/bin/python bench/postgres_sink.py [--events 200000] [--repeat 3]

A throw-away server is started with ``scripts/postgres.sh`` and stopped at the end, unless ``--url`` names one
(libpq's ``postgresql://user:password@host:port/database``).
"""

from __future__ import annotations

import argparse
import random
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from panes.connectors.jdbc import JdbcConnectionOptions, JdbcSink
from panes.datastream import StreamExecutionEnvironment
from panes.functions import Count
from panes.spark import SparkRunner, create_session
from panes.spark.sinks import ForeachBatchSink
from panes.watermarks import WatermarkStrategy
from panes.windowing import AnyOf, CountTrigger, EventTimeTrigger, TumblingEventTimeWindows, WindowRow

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "postgres.sh"
TABLE = "window_counts"
RESULT = "key STRING, window_start BIGINT, window_end BIGINT, n BIGINT"
UPSERT = (
    f"INSERT INTO {TABLE} (key, window_start, window_end, n) VALUES (%s, %s, %s, %s) "
    "ON CONFLICT (key, window_start, window_end) DO UPDATE SET n = EXCLUDED.n"
)


@contextmanager
def server(url: str | None) -> Iterator[str]:
    """``url``, or the URL of a server of ``scripts/postgres.sh`` started for the run and stopped after it."""
    if url is not None:
        yield url
        return
    folder = tempfile.mkdtemp(prefix="bench-postgres-")
    done = subprocess.run(["bash", str(SCRIPT), "start", folder], check=True, capture_output=True, text=True)
    try:
        yield done.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", folder], check=False, capture_output=True)


def events(count: int, keys: int, batches: int) -> list[list[dict[str, Any]]]:
    """``count`` events in ``batches`` micro-batches, batch ``b`` holding times of its own minute (shuffled)."""
    rng = random.Random(7)
    per_batch = count // batches
    return [
        [{"key": f"k{rng.randrange(keys)}", "ts": b * 60_000 + rng.randrange(60_000)} for _ in range(per_batch)]
        for b in range(batches)
    ]


def window_results(env: Any, data: list[list[dict[str, Any]]], early: int) -> Any:
    """The job's window results over ``data`` (a stream of :data:`RESULT`)."""
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    windowed = (
        env.from_micro_batches(data, type_info="key STRING, ts BIGINT")
        .assign_timestamps_and_watermarks(strategy)
        .key_by("key")
        .window(TumblingEventTimeWindows.of(10_000))
        .trigger(AnyOf(CountTrigger.of(early), EventTimeTrigger()))
    )
    return windowed.aggregate(Count(), WindowRow(key="key", value="n"), output_type=RESULT)


def run_once(spark: Any, url: str, data: list[list[dict[str, Any]]], early: int, sink: Any, writers: int = 2) -> float:
    """Wall seconds of one streaming run of the window job into ``sink`` (a ``JdbcSink`` or ``ForeachBatchSink``)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"TRUNCATE {TABLE}")
        connection.execute("DROP TABLE IF EXISTS panes_sink_commits")
    runner = SparkRunner(spark, checkpoint_location=tempfile.mkdtemp(prefix="bench-cp-"), trigger="available_now")
    env = StreamExecutionEnvironment.get_execution_environment(runner)
    written = window_results(env, data, early).add_sink(sink)
    if isinstance(sink, JdbcSink):
        written.set_parallelism(writers)
    started = time.perf_counter()
    env.execute()
    return time.perf_counter() - started


def panes_sink(url: str) -> JdbcSink:
    options = JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url(url).build()
    return (
        JdbcSink.upsert_builder()
        .with_table(TABLE)
        .with_key_columns("key", "window_start", "window_end")
        .with_connection_options(options)
        .build()
    )


def hand_written_sink(url: str) -> ForeachBatchSink:
    """What a Spark user writes: ``foreachBatch``, each partition's rows upserted with ``executemany``."""

    def write_partition(rows: Iterator[Any]) -> None:
        import psycopg

        with psycopg.connect(url) as connection, connection.cursor() as cursor:
            cursor.executemany(UPSERT, [(r.key, r.window_start, r.window_end, r.n) for r in rows])

    def write_batch(dataframe: Any, batch_id: int) -> None:
        dataframe.foreachPartition(write_partition)

    return ForeachBatchSink(write_batch, schema=RESULT)


def table(url: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url) as connection:
        return connection.execute(f"SELECT * FROM {TABLE} ORDER BY 1, 2").fetchall()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=None, help="a server's libpq URL (default: start one)")
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--early", type=int, default=2, help="an early firing every this many elements")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import psycopg

    data = events(args.events, args.keys, args.batches)
    warm = events(2_000, 100, 2)
    spark = create_session("local[2]", app_name="postgres-sink")
    with server(args.url) as url:
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(
                f"CREATE TABLE IF NOT EXISTS {TABLE} (key text, window_start bigint, window_end bigint, n bigint, "
                "PRIMARY KEY (key, window_start, window_end))"
            )
        # the rows the window emits: one per firing (the same for both sinks)
        rows = count_firings(data, args.early)
        sinks = {"panes JdbcSink": panes_sink, "foreachBatch executemany": hand_written_sink}
        for make in sinks.values():
            run_once(spark, url, warm, args.early, make(url))
        # the sinks' runs in turn, so that neither has the warmer JVM
        times: dict[str, list[float]] = {name: [] for name in sinks}
        final: dict[str, list[tuple[Any, ...]]] = {}
        for _ in range(args.repeat):
            for name, make in sinks.items():
                times[name].append(run_once(spark, url, data, args.early, make(url)))
                final[name] = table(url)
        figures = {name: min(runs) for name, runs in times.items()}
        for name, best in figures.items():
            runs = ", ".join(f"{t:.2f}" for t in times[name])
            print(f"{name:25} {rows} rows in {best:6.2f} s: {rows / best:9,.0f} rows/s (runs: {runs} s)")
    same = final["panes JdbcSink"] == final["foreachBatch executemany"]
    ratio = figures["foreachBatch executemany"] / figures["panes JdbcSink"]
    verdict = "identical" if same else "DIFFER"
    windows = len(final["panes JdbcSink"])
    print(f"ratio panes / hand-written: {ratio:.2f} (final tables {verdict}, {windows} windows)")
    spark.stop()


def count_firings(data: list[list[dict[str, Any]]], early: int) -> int:
    """The rows the window emits, counted by running the job on the local runner (its firings are Spark's)."""
    from panes.datastream import ListSink, StreamEnvironment

    env = StreamEnvironment("local")
    out = ListSink()
    window_results(env, data, early).sink_to(out)
    env.execute()
    return len(out.values)


if __name__ == "__main__":
    main()
