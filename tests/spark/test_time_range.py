"""Event times on Spark: the Spark runner represents ``watermarks.EVENT_TIMES`` (about years 1 to 292,000, from
Spark's microsecond timestamps and panes' shift). Windows at the edges of that range fire as on the local
runner; records outside it are refused as bad records naming the range (error output, or a failed job),
never read as the end of input; a generator's watermark beyond it fails the job. The tests marked ``spark``
use a real local SparkSession; the others run Spark's model in process (``MicroBatchExecutor``)."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import ListSink, OutputTag, StreamEnvironment
from panes.elements import Watermark
from panes.errors import BadRecordError, ErrorRecord
from panes.local import LocalRunner
from panes.spark.watermarks import END_MS, EVENT_TIMES, to_spark_watermark
from panes.time import LONG_MAX
from panes.watermarks import EventTimeRange, WatermarkGenerator, WatermarkOutput, WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows
from tests.spark.microbatch_model import MicroBatchExecutor

ERRORS: OutputTag[Any] = OutputTag("errors")
TOP, BOTTOM = EVENT_TIMES.highest, EVENT_TIMES.lowest
# two windows at the top of the range, one at the bottom, and two records beyond each end (Flink's long edges)
BATCHES: list[list[Any]] = [
    [{"k": "low", "ts": BOTTOM}, {"k": "high", "ts": TOP - 2_500}],
    [{"k": "beyond", "ts": 9223372036854775217}, {"k": "below", "ts": -9223372036854775800}],
    [{"k": "high", "ts": TOP - 1_500}, {"k": "high", "ts": TOP}],
]


def per_window(env: StreamEnvironment, batches: list[list[Any]], errors: bool = True) -> tuple[ListSink, ListSink]:
    stamped = env.from_micro_batches(batches).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    )
    if errors:
        stamped = stamped.side_output_errors(ERRORS)
    counts = (
        stamped.key_by("k")
        .window(TumblingEventTimeWindows.of(1_000))
        .process(lambda key, ctx, rows: [(key, ctx.window().start, len(list(rows)))])
    )
    main, bad = ListSink(), ListSink()
    counts.sink_to(main)
    if errors:
        stamped.get_side_output(ERRORS).sink_to(bad)
    return main, bad


def window_start(ts: int) -> int:
    return ts - ts % 1_000


def expected_windows() -> list[tuple[str, int, int]]:
    return sorted(
        [
            ("high", window_start(TOP - 2_500), 1),
            ("high", window_start(TOP - 1_500), 1),
            ("high", window_start(TOP), 1),
            ("low", window_start(BOTTOM), 1),
        ]
    )


def test_the_range_is_spark_s_microsecond_timestamps_less_panes_shift() -> None:
    # Spark: microseconds in a long, so the last millisecond is 2**63 // 1000 - 1; panes shifts by the ms
    # from 0001-01-01 to 1970-01-01 (62_135_596_800_000) and keeps raw 0 for "no watermark yet"
    assert (EVENT_TIMES.lowest, EVENT_TIMES.highest) == (-62_135_596_799_999, 9_161_236_440_054_773)
    assert 0 in EVENT_TIMES and TOP + 1 not in EVENT_TIMES and BOTTOM - 1 not in EVENT_TIMES
    with pytest.raises(ValueError, match="lowest <= highest"):
        EventTimeRange(1, 0)


def test_the_whole_long_range_refuses_nothing_on_the_local_runner() -> None:
    # as in Flink: "beyond" moves the watermark near Long.MAX_VALUE (its own window's end wraps, so the window
    # counts as late but the element does not: it vanishes, see scenario 52); "below" and the later "high"
    # elements are late and dropped; the first two windows fired
    env = StreamEnvironment(LocalRunner())
    main, bad = per_window(env, BATCHES)
    env.execute()
    assert bad.values == []
    assert sorted(main.values) == sorted([("high", window_start(TOP - 2_500), 1), ("low", window_start(BOTTOM), 1)])


def test_records_outside_the_spark_range_are_bad_records_in_spark_s_model() -> None:
    env = StreamEnvironment("local")
    per_window(env, [])
    plan = env.plan()
    source = plan.sinks[0].inputs[0].inputs[0].inputs[0].inputs[0]
    executor = MicroBatchExecutor(plan, num_shards=2)
    executor.run([{source.id: batch} for batch in BATCHES])
    assert sorted(executor.sink_values(plan.sinks[0].id)) == expected_windows()
    refused = executor.sink_values(plan.sinks[1].id)
    assert_refused(refused)


def assert_refused(refused: list[Any]) -> None:
    assert sorted(r.value["k"] for r in refused) == ["below", "beyond"]
    for record in refused:
        assert isinstance(record, ErrorRecord) and record.error_type == "BadRecordError"
        assert f"outside [{BOTTOM}, {TOP}]" in record.reason and "the Spark runner" in record.reason


def test_a_watermark_beyond_the_range_is_refused_and_the_final_one_is_the_end() -> None:
    assert to_spark_watermark(LONG_MAX) == END_MS
    with pytest.raises(ValueError, match="beyond"):
        to_spark_watermark(TOP + 1)
    assert to_spark_watermark(TOP) < to_spark_watermark(LONG_MAX)


class Punctuated(WatermarkGenerator):
    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        output.emit_watermark(Watermark(event["wm"]))

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        return None


@pytest.mark.spark
def test_windows_at_the_edges_fire_and_records_beyond_them_are_refused_on_spark(spark: Any) -> None:
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    main, bad = per_window(env, BATCHES)
    env.execute()
    assert sorted(main.values) == expected_windows()
    assert_refused(bad.values)


@pytest.mark.spark
def test_a_record_beyond_the_range_fails_a_spark_job_without_an_error_output(spark: Any) -> None:
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    per_window(env, BATCHES[1:2], errors=False)
    with pytest.raises(BadRecordError, match=r"outside \[.*the Spark runner"):
        env.execute()


@pytest.mark.spark
def test_a_generated_watermark_beyond_the_range_fails_the_spark_job(spark: Any) -> None:
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    stamped = env.from_micro_batches([[{"k": "a", "ts": 1, "wm": TOP + 10}]]).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_generator(Punctuated).with_timestamp_assigner("ts")
    )
    stamped.key_by("k").window(TumblingEventTimeWindows.of(1_000)).process(lambda key, ctx, rows: [key]).sink_to(
        ListSink()
    )
    with pytest.raises(ValueError, match=r"beyond .* the Spark runner represents"):
        env.execute()
