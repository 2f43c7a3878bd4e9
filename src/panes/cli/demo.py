"""The demonstration job, on local Spark streaming.

A generated click stream (users browsing pages, events out of order by up to a few seconds, a few
stragglers minutes late) arrives as micro-batches. Two windowed results come out of one query:

- sessions per user (event-time session windows, 30 s gap): clicks, pages and duration of each visit;
- clicks per page per minute (tumbling event-time windows, 10 s allowed lateness): late events inside the
  lateness re-fire their window, later ones go to a late-data side output instead of being dropped.

Watermarks are Flink's bounded out-of-orderness (5 s). Results are written as Parquet (one directory per
micro-batch, exactly-once) and summarised on the terminal.
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from panes.datastream import OutputTag, StreamEnvironment
from panes.functions import AggregateFunction
from panes.state import ValueStateDescriptor
from panes.watermarks import WatermarkStrategy
from panes.windowing import EventTimeSessionWindows, TumblingEventTimeWindows
from panes.windowing.functions import ProcessWindowFunction, WindowContext

PAGES = ["/home", "/search", "/product", "/cart", "/checkout", "/help"]
LATE: OutputTag[Any] = OutputTag("late-clicks")
START = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def click_batches(events: int, batches: int, seed: int = 7) -> list[list[dict[str, Any]]]:
    """``events`` clicks over ``batches`` micro-batches, 100 ms apart in event time on average."""
    rng = random.Random(seed)
    clicks = []
    for i in range(events):
        ts = START + i * 100 + rng.randint(-3_000, 500)
        if rng.random() < 0.01:
            ts -= rng.randint(20_000, 120_000)  # a straggler from a phone that was offline
        clicks.append({"user": f"user-{rng.randint(1, 150):03d}", "page": rng.choice(PAGES), "ts": ts})
    size = -(-events // batches)
    return [clicks[i : i + size] for i in range(0, events, size)]


class CountClicks(AggregateFunction[dict[str, Any], int, int]):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: dict[str, Any], accumulator: int) -> int:
        return accumulator + 1

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, acc_a: int, acc_b: int) -> int:
        return acc_a + acc_b


class PageMinute(ProcessWindowFunction[int, dict[str, Any], str, Any]):
    """Emits a window's count; firings after the first are late updates (counted in per-window state)."""

    FIRINGS = ValueStateDescriptor("firings")

    def process(self, key: str, context: WindowContext[Any], elements: Iterable[int]) -> Iterable[dict[str, Any]]:
        firings = context.window_state().get_state(self.FIRINGS)
        count = firings.value() or 0
        firings.update(count + 1)
        for clicks in elements:
            yield {"page": key, "minute": context.window().start, "clicks": clicks, "update": count > 0}

    def clear(self, context: WindowContext[Any]) -> None:
        context.window_state().get_state(self.FIRINGS).clear()


class Visit(ProcessWindowFunction[dict[str, Any], dict[str, Any], str, Any]):
    def process(
        self, key: str, context: WindowContext[Any], elements: Iterable[dict[str, Any]]
    ) -> Iterable[dict[str, Any]]:
        clicks = list(elements)
        window = context.window()
        yield {
            "user": key,
            "start": window.start,
            "seconds": (window.end - window.start) / 1000,
            "clicks": len(clicks),
            "pages": len({c["page"] for c in clicks}),
        }


def build(env: StreamEnvironment, batches: list[list[dict[str, Any]]], output: Path) -> None:
    clicks = env.from_micro_batches(batches).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(5_000).with_timestamp_assigner("ts")
    )
    visits = clicks.key_by("user").window(EventTimeSessionWindows.with_gap(30_000)).process(Visit())
    per_page = (
        clicks.key_by("page")
        .window(TumblingEventTimeWindows.of(60_000))
        .allowed_lateness(10_000)
        .side_output_late_data(LATE)
        .aggregate(CountClicks(), PageMinute())
    )
    visits.sink_to_files(
        str(output / "sessions"), schema="user STRING, start BIGINT, seconds DOUBLE, clicks BIGINT, pages BIGINT"
    )
    per_page.sink_to_files(
        str(output / "page_counts"), schema="page STRING, minute BIGINT, clicks BIGINT, `update` BOOLEAN"
    )
    per_page.get_side_output(LATE).sink_to_files(str(output / "late"), schema="user STRING, page STRING, ts BIGINT")


def run_demo(
    events: int = 20_000,
    batches: int = 10,
    output: str = "out/demo",
    shards: int = 4,
    master: str = "local[2]",
    remote: str | None = None,
    checkpoint: str | None = None,
) -> int:
    """Run the demo on ``master`` (or the Spark Connect server ``remote``), keeping its state in
    ``checkpoint`` when given (a rerun then continues where a killed run stopped)."""
    from panes.spark import SparkRunner, create_session

    target = Path(output)
    if checkpoint is None:
        shutil.rmtree(target, ignore_errors=True)
    where = f"Spark Connect at {remote}" if remote else ("local Spark" if master.startswith("local") else master)
    print(f"panes demo: {events} clicks in {batches} micro-batches on {where} -> {target}/")
    spark = create_session(master, app_name="panes-demo", remote=remote)
    env = StreamEnvironment(SparkRunner(spark, num_shards=shards, checkpoint_location=checkpoint))
    build(env, click_batches(events, batches), target)
    started = time.monotonic()
    result = env.execute("panes demo")
    elapsed = time.monotonic() - started
    sessions = spark.read.parquet(str(target / "sessions"))
    pages = spark.read.parquet(str(target / "page_counts"))
    late = spark.read.parquet(str(target / "late")) if (target / "late").exists() else None
    print(f"done in {elapsed:.1f} s over {result.details.get('batches', '?')} micro-batches")
    print(f"sessions: {sessions.count()}  (avg {sessions.agg({'clicks': 'avg'}).first()[0]:.1f} clicks per visit)")
    print(
        f"page-minute results: {pages.filter('NOT `update`').count()} on time, "
        f"{pages.filter('`update`').count()} late updates"
    )
    latest = pages.groupBy("page", "minute").max("clicks").withColumnRenamed("max(clicks)", "clicks")
    for row in latest.groupBy("page").sum("clicks").orderBy("page").collect():
        print(f"  {row['page']:10s} {row['sum(clicks)']:6d} clicks")
    print(f"late clicks kept aside (beyond 10 s of allowed lateness): {0 if late is None else late.count()}")
    spark.stop()
    return 0
