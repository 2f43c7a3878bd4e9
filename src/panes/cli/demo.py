"""The demonstration job, on local Spark streaming: what panes adds to Spark's own windows.

A generated click stream arrives in micro-batches, each holding about 10 s of event time: users' visits
(a few clicks seconds apart), slightly out of order, with some stragglers (a phone that was offline) and a
few clicks far too late. One query computes:

- clicks per page and minute (tumbling event-time windows) with an early-firing trigger
  (``ContinuousEventTimeTrigger``, every 20 s of event time) and 30 s of allowed lateness: each window gives
  *early* results (counts so far), an *on-time* result when the watermark passes its end, and *late updates*
  when stragglers within the lateness arrive; clicks beyond the lateness go to their own output (a late-data
  side output) instead of being dropped;
- sessions per user (event-time session windows, 30 s gap): clicks, pages and duration of each visit.

Watermarks are Flink's bounded out-of-orderness (5 s). Results are Parquet files (one folder per micro-batch,
exactly-once), summarised on the terminal with real (ISO-8601 UTC) times.
"""

from __future__ import annotations

import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from panes.datastream import OutputTag, StreamEnvironment
from panes.functions import Count
from panes.state import ValueStateDescriptor
from panes.time import format_instant
from panes.watermarks import WatermarkStrategy
from panes.windowing import ContinuousEventTimeTrigger, EventTimeSessionWindows, TumblingEventTimeWindows
from panes.windowing.functions import ProcessWindowFunction, WindowContext

PAGES = ["/home", "/search", "/product", "/cart", "/checkout", "/help"]
LATE: OutputTag[Any] = OutputTag("too-late-clicks")
START = 1_767_225_600_000  # 2026-01-01T00:00:00Z
BATCH_SPAN_MS = 10_000
"""Event time each micro-batch covers."""
OUT_OF_ORDERNESS_MS = 5_000
WINDOW_MS = 60_000
EARLY_EVERY_MS = 20_000
LATENESS_MS = 30_000
SESSION_GAP_MS = 30_000
SESSIONS_STEP = "visits per user"
DEFAULT_EVENTS = 9_000
DEFAULT_BATCHES = 12


def click_batches(events: int, batches: int, seed: int = 7) -> list[list[dict[str, Any]]]:
    """``events`` clicks arriving in ``batches`` micro-batches of :data:`BATCH_SPAN_MS` each.

    Clicks come in visits (3 to 10 clicks, 1 to 8 s apart) of users picked among ``events // 8``. A click
    arrives 0 to 3 s after it happened; 3 % arrive 12 to 35 s late (stragglers, mostly within the allowed
    lateness) and 1 % 70 to 150 s late (too late). A click arrives in the micro-batch of its arrival time (the
    last one for those arriving after the end)."""
    rng = random.Random(seed)
    span = batches * BATCH_SPAN_MS
    users = max(1, events // 8)
    arrivals: list[tuple[int, dict[str, Any]]] = []
    while len(arrivals) < events:
        user = f"user-{rng.randint(1, users):04d}"
        ts = START + rng.randrange(span)
        for _ in range(rng.randint(3, 10)):
            if len(arrivals) == events or ts >= START + span:
                break
            draw = rng.random()
            if draw < 0.01:
                delay = rng.randint(70_000, 150_000)
            elif draw < 0.04:
                delay = rng.randint(12_000, 35_000)
            else:
                delay = rng.randint(0, 3_000)
            arrivals.append((ts + delay, {"user": user, "page": rng.choice(PAGES), "ts": ts}))
            ts += rng.randint(1_000, 8_000)
    arrivals.sort(key=lambda pair: pair[0])
    out: list[list[dict[str, Any]]] = [[] for _ in range(batches)]
    for arrival, click in arrivals:
        out[min((arrival - START) // BATCH_SPAN_MS, batches - 1)].append(click)
    return out


class PageMinute(ProcessWindowFunction[int, dict[str, Any], str, Any]):
    """A window's count, labelled by when it fired: ``early`` (the watermark has not reached the window's end),
    ``on-time`` (the first firing once it has), ``late`` (later firings: stragglers within the lateness).
    ``firing`` numbers the window's results; both are kept in per-window state, cleared with the window."""

    ON_TIME = ValueStateDescriptor("on-time-fired")
    FIRINGS = ValueStateDescriptor("firings")

    def process(self, key: str, context: WindowContext[Any], elements: Iterable[int]) -> Iterable[dict[str, Any]]:
        window = context.window()
        firings = context.window_state().get_state(self.FIRINGS)
        firing = (firings.value() or 0) + 1
        firings.update(firing)
        if context.current_watermark() < window.max_timestamp():
            kind = "early"
        else:
            on_time = context.window_state().get_state(self.ON_TIME)
            kind = "late" if on_time.value() else "on-time"
            on_time.update(True)
        for clicks in elements:
            yield {"page": key, "minute": window.start, "clicks": clicks, "kind": kind, "firing": firing}

    def clear(self, context: WindowContext[Any]) -> None:
        context.window_state().get_state(self.FIRINGS).clear()
        context.window_state().get_state(self.ON_TIME).clear()


class Visit(ProcessWindowFunction[dict[str, Any], dict[str, Any], str, Any]):
    def process(
        self, key: str, context: WindowContext[Any], elements: Iterable[dict[str, Any]]
    ) -> Iterable[dict[str, Any]]:
        clicks = list(elements)
        window = context.window()
        yield {
            "user": key,
            "start": window.start,
            "seconds": (window.end - window.start - SESSION_GAP_MS) / 1000,
            "clicks": len(clicks),
            "pages": len({c["page"] for c in clicks}),
        }


def build(env: StreamEnvironment, batches: list[list[dict[str, Any]]], output: Path) -> None:
    clicks = env.from_micro_batches(batches).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(OUT_OF_ORDERNESS_MS).with_timestamp_assigner("ts")
    )
    visits = (
        clicks.key_by("user")
        .window(EventTimeSessionWindows.with_gap(SESSION_GAP_MS))
        .process(Visit())
        .name(SESSIONS_STEP)
    )
    per_page = (
        clicks.key_by("page")
        .window(TumblingEventTimeWindows.of(WINDOW_MS))
        .trigger(ContinuousEventTimeTrigger.of(EARLY_EVERY_MS))
        .allowed_lateness(LATENESS_MS)
        .side_output_late_data(LATE)
        .aggregate(Count(), PageMinute())
    )
    visits.sink_to_files(
        str(output / "sessions"), schema="user STRING, start BIGINT, seconds DOUBLE, clicks BIGINT, pages BIGINT"
    )
    per_page.sink_to_files(
        str(output / "page_counts"),
        schema="page STRING, minute BIGINT, clicks BIGINT, kind STRING, firing BIGINT",
    )
    per_page.get_side_output(LATE).sink_to_files(str(output / "late"), schema="user STRING, page STRING, ts BIGINT")


def read_rows(folder: Path) -> list[dict[str, Any]]:
    """The rows of a Parquet output folder (one sub-folder per micro-batch, ``batch`` added), [] when absent."""
    if not folder.exists():
        return []
    import pyarrow.dataset as ds

    rows: list[dict[str, Any]] = ds.dataset(str(folder), format="parquet", partitioning="hive").to_table().to_pylist()
    return rows


def window_story(results: list[dict[str, Any]]) -> str:
    """The results of the window with the most late updates, in firing order, as one line."""
    late = Counter((r["page"], r["minute"]) for r in results if r["kind"] == "late")
    if not late:
        return ""
    page, minute = late.most_common(1)[0][0]
    mine = sorted((r for r in results if (r["page"], r["minute"]) == (page, minute)), key=lambda r: r["firing"])
    parts: list[str] = []
    for kind in ("early", "on-time", "late"):
        counts = [str(r["clicks"]) for r in mine if r["kind"] == kind]
        if len(counts) > 5:
            counts = [*counts[:3], "...", f"{counts[-1]} ({len(counts)} updates)"]
        if counts:
            parts.append(f"{kind} {', '.join(counts)}")
    return f"  e.g. {page} in the minute from {format_instant(minute)}: " + "; ".join(parts)


def summarise(target: Path, sessions_late_dropped: int = 0) -> list[str]:
    """The demo's summary lines, read from its Parquet output; ``sessions_late_dropped`` is the sessions
    step's ``late_dropped`` counter (its late clicks are not written anywhere)."""
    results = read_rows(target / "page_counts")
    kinds = Counter(r["kind"] for r in results)
    late = read_rows(target / "late")
    sessions = read_rows(target / "sessions")
    users = len({s["user"] for s in sessions})
    clicks = sum(s["clicks"] for s in sessions)
    seconds = sum(s["seconds"] for s in sessions)
    windows = len({(r["page"], r["minute"]) for r in results})
    lines = [
        f"clicks per page and minute: {windows} windows, early results every {EARLY_EVERY_MS // 1000} s, "
        f"{LATENESS_MS // 1000} s allowed lateness",
        f"  early results   {kinds['early']:6d}  counts so far, before the watermark reached the window's end",
        f"  on-time results {kinds['on-time']:6d}  when the watermark passed the window's end",
        f"  late updates    {kinds['late']:6d}  stragglers within the lateness: the window fired again, corrected",
        f"  too-late clicks {len(late):6d}  beyond the lateness: kept in their own output, not dropped",
    ]
    story = window_story(results)
    if story:
        lines.append(story)
    if sessions:
        lines.append(
            f"sessions ({SESSION_GAP_MS // 1000} s gap): {len(sessions)} visits by {users} users, "
            f"{clicks / len(sessions):.1f} clicks and {seconds / len(sessions):.0f} s per visit"
        )
    if sessions_late_dropped:
        lines.append(
            f"  {sessions_late_dropped} clicks came after their visit had closed: dropped, as Flink does without "
            "allowed lateness or a late output"
        )
    lines.append(
        f"Parquet: {target / 'page_counts'}/ (page, minute, clicks, kind), {target / 'late'}/, {target / 'sessions'}/"
    )
    return lines


def run_demo(
    events: int | None = None,
    batches: int | None = None,
    output: str = "out/demo",
    shards: int = 4,
    master: str = "local[2]",
    remote: str | None = None,
    checkpoint: str | None = None,
    timeline: bool = False,
) -> int:
    """Run the demo on ``master`` (or the Spark Connect server ``remote``), keeping its state in
    ``checkpoint`` when given (a rerun then continues where a killed run stopped); with ``timeline``, also
    draw the sessions of a few users (:func:`draw_timeline`)."""
    from panes.live import LineView
    from panes.spark import SparkRunner, create_session

    events = DEFAULT_EVENTS if events is None else events
    batches = DEFAULT_BATCHES if batches is None else batches
    target = Path(output)
    if checkpoint is None:
        shutil.rmtree(target, ignore_errors=True)
    where = f"Spark Connect at {remote}" if remote else ("local Spark" if master.startswith("local") else master)
    print(f"panes demo: {events} clicks in {batches} micro-batches on {where} -> {target}/", flush=True)
    # the demo's keyed steps have `shards` shards: on a cluster, more shuffle partitions than that (Spark's
    # default 200) would only run empty tasks
    from panes.spark.settings import is_local

    fewer = {} if is_local(master) else {"spark.sql.shuffle.partitions": str(shards)}
    spark = create_session(master, app_name="panes-demo", remote=remote, config=fewer)

    show = LineView(sys.stdout, indent="  ")
    env = StreamEnvironment(SparkRunner(spark, num_shards=shards, checkpoint_location=checkpoint, on_progress=show))
    build(env, click_batches(events, batches), target)
    started = time.monotonic()
    result = env.execute("panes demo")
    print(f"done in {time.monotonic() - started:.1f} s over {result.details.get('batches', '?')} micro-batches")
    spark.stop()
    for line in summarise(target, result.metrics[SESSIONS_STEP].late_dropped):
        print(line)
    if timeline:
        data = click_batches(events, batches)
        print(draw_timeline(data, target), flush=True)
    sys.stdout.flush()
    return 0


def draw_timeline(batches: list[list[dict[str, Any]]], target: Path, users: int = 3) -> str:
    """The sessions of the first ``users`` users (by name) drawn as ``target/timeline.png`` and ``.html``
    (``panes.timeline``): the demo's job rerun on the local runner, which moves the watermark element by
    element (Flink's timing) where Spark moves it between micro-batches. Returns the line saying where."""
    from panes.timeline import record_timeline, write_html, write_png

    sample = sorted({click["user"] for batch in batches for click in batch})[:users]
    with tempfile.TemporaryDirectory(prefix="panes-demo-timeline-") as scratch:
        recorded = record_timeline(
            lambda env: build(env, batches, Path(scratch)), keys=sample, steps=[SESSIONS_STEP], job_name="panes demo"
        )
    png, page = write_png(recorded, target / "timeline.png"), write_html(recorded, target / "timeline.html")
    return f"timeline of {', '.join(sample)} (their sessions, drawn from a local-runner run): {png}, {page}"
