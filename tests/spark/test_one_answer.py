"""One job, one answer: over bounded input the local runner and Spark move the watermark at the same points (where
a step of the input ends), so windows with allowed lateness and a late-data output, and keyed event-time timers,
give identical outputs on both. The issue's two repros, then a property test over random bounded jobs."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from panes.datastream import KeyedProcessFunction, ListSink, OutputTag, StreamEnvironment
from panes.functions.aggregates import Count
from panes.local import LocalRunner
from panes.state import ValueStateDescriptor
from panes.watermarks import WatermarkStrategy
from panes.windowing import EventTimeSessionWindows, SlidingEventTimeWindows, TumblingEventTimeWindows

pytestmark = pytest.mark.spark

MINUTE = 60_000


def environment(runner: str, spark: Any) -> StreamEnvironment:
    if runner == "local":
        return StreamEnvironment(LocalRunner())
    from panes.spark import SparkRunner

    return StreamEnvironment(SparkRunner(spark, num_shards=3))


def comparable(values: list[Any]) -> list[Any]:
    return sorted(map(repr, values))


# -- repro 1: a click stream in Parquet, one-minute windows, 10 s lateness, a late-data output ------------------


def write_clicks(folder: Path, files: int = 3, rows: int = 2_000, seed: int = 5) -> None:
    """Click rows in ``files`` Parquet files, mostly in order, every 40th a minute or two late."""
    rng = random.Random(seed)
    folder.mkdir()
    ts = 1_767_225_600_000
    for index in range(files):
        users, pages, times = [], [], []
        for row in range(rows):
            ts += rng.randint(0, 400)
            late = rng.randint(MINUTE, 2 * MINUTE) if row % 40 == 39 else 0
            users.append(f"u{rng.randint(1, 50)}")
            pages.append(rng.choice(["/home", "/cart", "/help", "/pay"]))
            times.append(ts - late)
        table = pa.table({"user": users, "page": pages, "ts": pa.array(times, pa.int64())})
        pq.write_table(table, folder / f"part-{index:03d}.parquet")


def click_counts(env: StreamEnvironment, folder: Path) -> tuple[ListSink, ListSink]:
    late: OutputTag[Any] = OutputTag("late")
    counts = (
        env.from_files(str(folder), schema="user STRING, page STRING, ts BIGINT")
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(5_000).with_timestamp_assigner("ts")
        )
        .key_by("page")
        .window(TumblingEventTimeWindows.of(MINUTE))
        .allowed_lateness(10_000)
        .side_output_late_data(late)
        .aggregate(Count())
    )
    sink, late_sink = ListSink(), ListSink()
    counts.sink_to(sink)
    counts.get_side_output(late).sink_to(late_sink)
    return sink, late_sink


def test_a_bounded_file_job_counts_the_same_on_both_runners(spark: Any, tmp_path: Path) -> None:
    write_clicks(tmp_path / "clicks")
    results = {}
    for runner in ("local", "spark"):
        env = environment(runner, spark)
        sink, late = click_counts(env, tmp_path / "clicks")
        env.execute(f"clicks on {runner}")
        results[runner] = (comparable(sink.values), comparable(late.values))
    assert results["local"] == results["spark"]
    counts, late_rows = results["local"]
    assert counts and not late_rows, "one step of input: the watermark moves only at the end, nothing is late"


# -- repro 2: a KeyedProcessFunction that alerts when no newer event came within 5 minutes ------------------------


class Inactivity(KeyedProcessFunction[Any, Any, Any]):
    """An event-time timer five minutes after each event; it alerts when no newer event of the key came since."""

    def open(self, runtime_context: Any) -> None:
        self.last = runtime_context.get_state(ValueStateDescriptor("last"))

    def process_element(self, value: Any, ctx: Any) -> Any:
        if (self.last.value() or -1) < value["ts"]:
            self.last.update(value["ts"])
        ctx.timer_service().register_event_time_timer(value["ts"] + 5 * MINUTE)
        return iter(())

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        if timestamp == self.last.value() + 5 * MINUTE:
            yield (ctx.get_current_key(), timestamp, ctx.timer_service().current_watermark())


def activity(count: int = 400, seed: int = 3) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    ts = 0
    rows = []
    for _ in range(count):
        ts += rng.choice([1_000, 30_000, 4 * MINUTE, 7 * MINUTE])
        rows.append({"user": f"u{rng.randint(1, 8)}", "ts": ts - rng.randint(0, 2 * MINUTE)})
    return rows


@pytest.mark.parametrize("batch_size", [None, 37])
def test_keyed_timers_over_a_collection_alert_the_same_on_both_runners(spark: Any, batch_size: int | None) -> None:
    rows = activity()
    results = {}
    for runner in ("local", "spark"):
        env = environment(runner, spark)
        sink = ListSink()
        (
            env.from_collection(rows, batch_size=batch_size)
            .assign_timestamps_and_watermarks(
                WatermarkStrategy.for_bounded_out_of_orderness(MINUTE).with_timestamp_assigner("ts")
            )
            .key_by("user")
            .process(Inactivity())
            .sink_to(sink)
        )
        env.execute(f"alerts on {runner}")
        results[runner] = comparable(sink.values)
    assert results["local"] == results["spark"]
    assert results["local"], "some users were inactive for five minutes"


# -- the property: random bounded jobs, identical outputs ----------------------------------------------------------


class Timers(KeyedProcessFunction[Any, Any, Any]):
    """A timer ``delay`` after each element; each firing reports the key, the time, the watermark and the count of
    the key's elements so far."""

    def __init__(self, delay: int) -> None:
        self.delay = delay

    def open(self, runtime_context: Any) -> None:
        self.seen = runtime_context.get_state(ValueStateDescriptor("seen"))

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.seen.update((self.seen.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(value[1] + self.delay)
        return iter(())

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield ("timer", ctx.get_current_key(), timestamp, ctx.timer_service().current_watermark(), self.seen.value())


ASSIGNERS = {
    "tumbling": lambda: TumblingEventTimeWindows.of(1_000),
    "sliding": lambda: SlidingEventTimeWindows.of(1_000, 500),
    "session": lambda: EventTimeSessionWindows.with_gap(400),
}

events = st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 4_000)), min_size=1, max_size=40)
jobs = st.fixed_dictionaries(
    {
        "events": events,
        "batch_size": st.one_of(st.none(), st.integers(1, 15)),
        "bound": st.sampled_from([0, 100, 700]),
        "lateness": st.sampled_from([0, 300, 1_500]),
        "assigner": st.sampled_from(sorted(ASSIGNERS)),
        "delay": st.sampled_from([0, 250, 1_000]),
    }
)


def random_job(env: StreamEnvironment, job: dict[str, Any]) -> ListSink:
    late: OutputTag[Any] = OutputTag("late")
    sink = ListSink()
    stream = env.from_collection(job["events"], batch_size=job["batch_size"]).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(job["bound"]).with_timestamp_assigner(lambda e, _: e[1])
    )
    windows = (
        stream.key_by(lambda e: e[0])
        .window(ASSIGNERS[job["assigner"]]())
        .allowed_lateness(job["lateness"])
        .side_output_late_data(late)
        .process(lambda key, ctx, items: [("pane", key, ctx.window().start, sorted(e[1] for e in items))])
    )
    windows.sink_to(sink)
    windows.get_side_output(late).map(lambda e: ("late", *e)).sink_to(sink)
    stream.key_by(lambda e: e[0]).process(Timers(job["delay"])).sink_to(sink)
    return sink


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(job=jobs)
def test_random_bounded_jobs_give_one_answer_on_both_runners(spark: Any, job: dict[str, Any]) -> None:
    outputs = {}
    for runner in ("local", "spark"):
        env = environment(runner, spark)
        sink = random_job(env, job)
        env.execute(f"random job on {runner}")
        outputs[runner] = comparable(sink.values)
    assert outputs["local"] == outputs["spark"], job
    # nothing lost: every element is in a fired pane or in the late output (the end of input fires every window)
    covered = {(kind_key[1], ts) for kind_key, ts in _elements(sink.values)}
    assert covered == set(job["events"])


def _elements(values: list[Any]) -> list[tuple[Any, int]]:
    """(the output's (kind, key), element timestamp) for each element a pane or the late output holds."""
    found = []
    for value in values:
        if value[0] == "pane":
            found += [((value[0], value[1]), ts) for ts in value[3]]
        elif value[0] == "late":
            found.append(((value[0], value[1]), value[2]))
    return found
