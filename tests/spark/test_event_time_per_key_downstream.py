"""Event time per key (``watermark_per_key``): the watermark the steps after a per-key step get (``stream watermark -
max_lag``, forwarded on the local runner; on Spark, the query's one watermark less the lag), a bounded Spark job,
and what ``explain`` says."""

from __future__ import annotations

from typing import Any

import pytest

from panes.cli.explain import explain
from panes.datastream import ListSink, StreamEnvironment
from panes.local import LocalRunner
from panes.tags import OutputTag
from panes.watermarks import WatermarkStrategy
from panes.watermarks.per_key import PerKeyWatermarks
from panes.windowing.assigners.tumbling import TumblingEventTimeWindows


def skewed_counts(env: StreamEnvironment, micro_batches: bool = False) -> Any:
    """Two devices, 'slow' 1000 ms behind 'fast', interleaved; per-key windows of 100 ms counting each device's
    elements (stream watermark: 0 ms out-of-orderness; per key: the same, at most 5000 ms behind the stream), read
    from a collection or, with ``micro_batches``, as a stream of micro-batches of 20 rows."""
    rows = [row for i in range(30) for row in (("fast", 1000 + 10 * i), ("slow", 10 * i))]
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(0).with_timestamp_assigner(lambda row, _: row[1])
    source = env.from_micro_batches([rows[i : i + 20] for i in range(0, 60, 20)]) if micro_batches else None
    stream = (source or env.from_collection(rows)).assign_timestamps_and_watermarks(strategy)
    return (
        stream.key_by(lambda row: row[0])
        .window(TumblingEventTimeWindows.of(100))
        .watermark_per_key(PerKeyWatermarks.for_bounded_out_of_orderness(0).with_max_lag(5000))
        .process(lambda key, context, rows: [(key, context.window().start, len(list(rows)))])
    )


def per_element_watermarks() -> StreamEnvironment:
    """The local runner with a watermark after each element (the stepping clock moving per element)."""
    return StreamEnvironment(LocalRunner(clock="stepping", advance="per_element"), auto_watermark_interval=200)


def skewed_job(env: StreamEnvironment) -> ListSink:
    sink = ListSink()
    skewed_counts(env).sink_to(sink)
    return sink


def test_the_skewed_device_s_windows_all_fire_on_the_local_runner() -> None:
    """Under the stream's one watermark, 'slow' (1000 ms behind) would have every element late."""
    env = per_element_watermarks()
    sink = skewed_job(env)
    env.execute("skewed")
    assert sorted(sink.values) == sorted(
        [("fast", 1000 + 100 * w, 10) for w in range(3)] + [("slow", 100 * w, 10) for w in range(3)]
    )


def downstream_totals(env: StreamEnvironment, micro_batches: bool = False) -> ListSink:
    """The per-key counts summed per 1000 ms by a window downstream (which sees the forwarded watermark)."""
    sink = ListSink()
    late: OutputTag[Any] = OutputTag("late-counts")
    totals = (
        skewed_counts(env, micro_batches)
        .window_all(TumblingEventTimeWindows.of(1000))
        .side_output_late_data(late)
        .process(lambda context, rows: [(context.window().start, sum(row[2] for row in rows))])
    )
    totals.sink_to(sink)
    totals.get_side_output(late).map(lambda row: ("late", *row)).sink_to(sink)
    return sink


def test_a_window_downstream_sees_the_stream_s_watermark_minus_the_lag() -> None:
    """The per-key step forwards ``stream watermark - max_lag``: 'slow''s counts, 1000 ms behind the stream, are
    not late for the window after it (under the stream's own watermark, forwarded, they would all be)."""
    env = per_element_watermarks()
    sink = downstream_totals(env)
    env.execute("downstream")
    assert sorted(sink.values, key=repr) == [(0, 30), (1000, 30)]


@pytest.mark.spark
def test_a_window_after_a_per_key_window_on_spark_sees_the_query_s_watermark_less_the_lag(spark: Any) -> None:
    """Spark gives every step of a query its one watermark; the window after the per-key one runs at it less the
    lag (the floor the local runner forwards), so 'slow''s counts, 1000 ms behind the stream, are not late there
    either (at the query's own watermark they would all be): the local runner's totals, in a streaming query."""
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    sink = downstream_totals(env, micro_batches=True)
    env.execute("downstream on spark")
    assert sorted(sink.values, key=repr) == [(0, 30), (1000, 30)]


@pytest.mark.spark
def test_a_bounded_spark_job_gives_the_local_runner_s_totals_downstream(spark: Any) -> None:
    """A bounded job on Spark runs each step over all its input, then the end of input: nothing downstream can be
    late, and the totals are the local runner's."""
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    sink = downstream_totals(env)
    env.execute("bounded downstream on spark")
    assert sorted(sink.values, key=repr) == [(0, 30), (1000, 30)]


def test_explain_names_the_option_and_why_the_window_runs_element_by_element() -> None:
    env = StreamEnvironment(LocalRunner())
    skewed_job(env)
    text = explain(env.plan())
    assert "watermark per key" in text
    assert "stream's watermark - 5000 ms" in text
    assert "it keeps event time per key (watermark_per_key)" in text
    assert "steps after it get the watermark less 5000 ms" in text
