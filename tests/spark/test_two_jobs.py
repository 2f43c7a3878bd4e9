"""Two jobs at once in one Spark session: each is its own streaming query, with its own shards, state and
sinks, and gives what it gives alone on the local runner; a second job under the name of a running one is
refused before it starts, saying how to name it."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import ListSink, StreamEnvironment
from panes.local import LocalRunner
from panes.spark import SparkRunner
from panes.watermarks import WatermarkStrategy
from panes.windowing import EventTimeSessionWindows, TumblingEventTimeWindows

pytestmark = pytest.mark.spark

CLICKS = [[("ada", 1_000), ("bob", 2_000), ("ada", 4_000)], [("bob", 12_000), ("ada", 25_000)]]
"""Two micro-batches of ``(user, event time in ms)`` for both jobs."""


def tumbling(env: StreamEnvironment, end: bool) -> ListSink:
    """Clicks per user in tumbling 10-second windows."""
    sink = ListSink()
    keyed(env, end).window(TumblingEventTimeWindows.of(10_000)).sum(1).sink_to(sink)
    return sink


def sessions(env: StreamEnvironment, end: bool) -> ListSink:
    """Clicks per user in sessions with a 3-second gap."""
    sink = ListSink()
    keyed(env, end).window(EventTimeSessionWindows.with_gap(3_000)).sum(1).sink_to(sink)
    return sink


def keyed(env: StreamEnvironment, end: bool) -> Any:
    stamped = env.from_micro_batches(CLICKS, end_of_input=end).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda click, _: click[1])
    )
    return stamped.map(lambda click: (click[0], 1)).key_by(lambda pair: pair[0])


def on_the_local_runner(build: Any, end: bool) -> list[Any]:
    """What the job gives on the local runner, sorted: with ``end``, run to its end; else with its input left
    open (windows the watermark closed), the job stepped through the micro-batches it has."""
    runner = LocalRunner()
    env = StreamEnvironment(runner)
    sink = build(env, end)
    runner.start(env.plan(), env.config()).run()
    return sorted(sink.values)


def test_two_jobs_run_at_once_in_one_session_and_each_gives_its_own_results(spark: Any) -> None:
    started = []
    try:
        for build, name in ((tumbling, "clicks per window"), (sessions, "clicks per session")):
            # the input stays open (no end of input, the default trigger): both queries stay active
            runner = SparkRunner(spark, num_shards=2, trigger="continuous", quiet=True)
            env = StreamEnvironment(runner)
            sink = build(env, False)
            started.append((runner.start(env.plan(), env.config(), name), sink, build))
        active = {query.name for query in spark.streams.active}
        assert {"clicks_per_window", "clicks_per_session"} <= active, "both queries run at once"
        for job, _, _ in started:
            job.process_all_available()
        for _, sink, build in started:
            assert sorted(sink.values) == on_the_local_runner(build, False), build.__name__
        assert started[0][1].values and started[1][1].values
    finally:
        for job, _, _ in started:
            job.stop()
            job.cleanup()


def test_a_second_job_under_a_running_jobs_name_is_refused_saying_how_to_name_it(spark: Any) -> None:
    runner = SparkRunner(spark, num_shards=2, trigger="continuous", quiet=True)
    env = StreamEnvironment(runner)
    tumbling(env, False)
    first = runner.start(env.plan(), env.config(), "panes job")
    try:
        second = StreamEnvironment(SparkRunner(spark, num_shards=2, quiet=True))
        sink = sessions(second, True)
        with pytest.raises(ValueError, match=r"a job named 'panes job' is already running in this Spark session"):
            second.execute()
        assert first.query.isActive, "the running job goes on"
        assert sink.values == []
        third = StreamEnvironment(SparkRunner(spark, num_shards=2, quiet=True))
        sink = sessions(third, True)
        third.execute("another name")  # named apart, it runs beside the first
        assert sorted(sink.values) == on_the_local_runner(sessions, True)
    finally:
        first.stop()
        first.cleanup()
