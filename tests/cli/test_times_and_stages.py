"""Times shown to people are real ISO-8601 UTC instants (never Spark's shifted watermark), and the Spark
stages ``panes explain`` shows follow the runner's rules (checked against the real translation in
``tests/spark/test_cli_spark.py``)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from panes.datastream import StreamEnvironment
from panes.spark.metrics import ran_micro_batch
from panes.spark.stages import spark_stages
from panes.spark.watermarks import END_MS, SHIFT, progress_watermark, spark_instant_ms, to_spark_time
from panes.time import LONG_MAX, LONG_MIN, format_instant
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def spark_text(epoch_ms: int) -> str:
    """How Spark's progress writes an instant (``java.time.Instant``, milliseconds, UTC)."""
    moment = EPOCH + timedelta(milliseconds=epoch_ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z"


def test_format_instant() -> None:
    assert format_instant(1_767_225_600_000) == "2026-01-01T00:00:00Z"
    assert format_instant(1_767_225_660_250) == "2026-01-01T00:01:00.250Z"
    assert format_instant(-1) == "1969-12-31T23:59:59.999Z"
    assert format_instant(LONG_MIN) == "-inf" and format_instant(LONG_MAX) == "+inf"
    assert format_instant(10**15) == f"{10**15} ms since 1970-01-01T00:00:00Z"


@pytest.mark.parametrize(
    "flink_ms", [0, 1, 1_767_225_600_123, -86_400_000 * 365 * 500 + 7, 253_402_300_799_999 - SHIFT]
)
def test_spark_progress_watermarks_read_back_as_real_times(flink_ms: int) -> None:
    shifted = to_spark_time(flink_ms)
    text = spark_text(shifted)
    assert spark_instant_ms(text) == shifted
    assert progress_watermark({"eventTime": {"watermark": text}}) == flink_ms
    assert format_instant(progress_watermark({"eventTime": {"watermark": text}})) == format_instant(flink_ms)


def test_spark_progress_markers() -> None:
    # before any watermark Spark reports none (or 0); at the end of input the largest instant it holds
    assert progress_watermark({"eventTime": {}}) == LONG_MIN
    assert progress_watermark({"eventTime": {"watermark": "1970-01-01T00:00:00.000Z"}}) == LONG_MIN
    assert spark_instant_ms("+294247-01-10T04:00:54.774Z") == END_MS
    assert progress_watermark({"eventTime": {"watermark": "+294247-01-10T04:00:54.774Z"}}) == LONG_MAX
    with pytest.raises(ValueError, match="not an ISO-8601"):
        spark_instant_ms("yesterday")


def test_a_trigger_that_ran_no_micro_batch_is_no_micro_batch() -> None:
    # Spark's entries as it wrote them: a micro-batch it ran (Spark's last one, without input, moves nothing but
    # the watermark), and an idle trigger (a finished job started again on its checkpoint): the next id, not run
    ran = {"batchId": 4, "numInputRows": 0, "durationMs": {"addBatch": 310, "triggerExecution": 640}}
    idle = {"batchId": 5, "numInputRows": 0, "durationMs": {"latestOffset": 1, "triggerExecution": 6}}
    assert ran_micro_batch(ran) and not ran_micro_batch(idle)
    assert not ran_micro_batch({"batchId": 0})


def _window(stream: object) -> object:
    return (
        stream.assign_timestamps_and_watermarks(  # type: ignore[attr-defined]
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
        )
        .key_by("k")
        .window(TumblingEventTimeWindows.of(10))
        .reduce(lambda a, b: a)
    )


def test_stages_fuse_row_local_steps_and_shuffle_once_per_keyed_step() -> None:
    env = StreamEnvironment("local")
    stream = env.from_micro_batches([[{"k": 1, "ts": 1}]]).map(lambda v: v).filter(lambda v: True)
    _window(stream).map(lambda v: v).print()  # type: ignore[attr-defined]
    stages = spark_stages(env.plan())
    assert [s.kind for s in stages] == ["source", "python", "shuffle", "keyed", "python", "sinks"]
    fused = stages[1]
    assert [s.transformation.name for s in fused.steps] == ["Map", "Filter", "Timestamps/Watermarks"]
    assert fused.keying and fused.watermark and not fused.unpacks
    assert stages[3].streaming and stages[4].unpacks and [s.transformation.name for s in stages[4].steps] == ["Map"]


def test_stages_union_branches_and_bounded_keyed_steps() -> None:
    env = StreamEnvironment("local")
    left = env.from_collection([{"k": 1, "ts": 1}])
    right = env.from_collection([{"k": 2, "ts": 2}])
    _window(left.union(right).map(lambda v: v)).print()  # type: ignore[attr-defined]
    stages = spark_stages(env.plan())
    # the map after the union reads both sources' rows: their branches are unioned, then it runs with the keying
    assert [s.kind for s in stages] == ["source", "source", "union", "python", "shuffle", "keyed", "sinks"]
    assert stages[3].keying and not stages[5].streaming  # a bounded plan: a batch job (applyInArrow)


def test_progress_lines_show_real_watermarks_and_the_job_so_far() -> None:
    from panes.live import ProgressTotals, progress_line
    from panes.spark.metrics import BatchProgress

    totals = ProgressTotals()
    steps = {"Timestamps": {"records_out": 120}, "Window": {"records_out": 3, "late_dropped": 1}}
    first = BatchProgress(4, 120, 1500, 1_767_225_611_999, steps, results=3)
    totals.add(first)
    line = progress_line(first, totals)
    watermark = "watermark 2026-01-01T00:00:11.999Z (1.5 s)"
    assert line == f"batch 4: 120 rows in, 3 results, {watermark}; so far 1 late rows dropped"
    second = BatchProgress(5, 10, 500, LONG_MAX, {"Window": {"open_panes": 2, "late_out": 2, "error_out": 1}}, 0)
    totals.add(second)
    expected = "(0.5 s); so far 2 open panes, 2 late rows to late outputs, 1 late rows dropped, 1 error rows"
    assert progress_line(second, totals).endswith(expected)
    assert "watermark -inf (none yet)" in progress_line(BatchProgress(0, 1, 10, LONG_MIN, {}, 0), ProgressTotals())
    third = BatchProgress(6, 0, 500, LONG_MAX, {"Window": {"restores": 3, "restore_ms": 1250}}, 0)
    totals.add(third)
    assert progress_line(third, totals).endswith(", 1 error rows, 3 operators rebuilt from stored state (1.2 s)")


def test_a_batchs_results_are_what_the_steps_feeding_sinks_emitted() -> None:
    """Counters cover every step; the results are only the records out of the steps a sink reads (here the
    window's map), so a batch where the timestamps step passed rows on but no window fired has none."""
    from panes.spark.metrics import JobMetrics

    metrics = JobMetrics({0: "Timestamps", 1: "Window", 2: "format"}, results=frozenset({2}))

    def entry(batch: int, outs: tuple[int, int, int]) -> dict[str, object]:
        counted = {f"m{step}_records_out": out for step, out in enumerate(outs)}
        return {"batchId": batch, "numInputRows": outs[0], "observedMetrics": {"panes-c1": counted}}

    assert metrics.add(entry(0, (169, 0, 0))).results == 0
    assert metrics.add(entry(1, (40, 7, 7))).results == 7


def test_stages_follow_the_runtime_mode_and_the_steps_parallelism() -> None:
    from panes.datastream.runtime_mode import RuntimeExecutionMode

    env = StreamEnvironment("local")
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    window = _window(env.from_micro_batches([[{"k": 1, "ts": 1}], [{"k": 2, "ts": 2}]]))
    window.set_parallelism(3).print()  # type: ignore[attr-defined]
    stages = spark_stages(env.plan(), config=env.config())
    shuffle, keyed = (s for s in stages if s.kind in ("shuffle", "keyed"))
    assert shuffle.shards == keyed.shards == 3
    assert keyed.batch and not keyed.streaming  # micro-batches read as one collection, keyed rows sorted


def test_rows_in_leave_out_the_micro_batch_sources_control_rows() -> None:
    """Spark counts a micro-batch source's end-of-input sentinel and clock rows as input rows; their offsets
    say how many there are before them, so the records read are Spark's count less the difference."""
    from panes.spark.layout import CLOCK, END, ChannelCodes, Layout, Record, pack
    from panes.spark.metrics import source_records
    from panes.spark.sources import control_rows

    channel = (1, None)
    layout = Layout(ChannelCodes({channel: None}), [channel])
    records = [Record(channel, value, value, value, 1) for value in range(3)]
    payload = pack([layout.encode(records), layout.row(ch=CLOCK, ts=5, seq=0, ph=1)], layout.schema)
    assert control_rows(payload) == 1
    assert control_rows(pack([layout.row(ch=END, seq=1, ph=1)], layout.schema)) == 1
    entry = {
        "numInputRows": 5,
        "sources": [
            {"startOffset": '{"b": 1, "c": 1}', "endOffset": '{"b": 2, "c": 3}'},
            {"startOffset": None, "endOffset": {"logOffset": 7}},  # another source: no control rows
        ],
    }
    assert source_records(entry) == 3
    # Spark Connect's progress counts rows per source only
    connect = {"sources": [{**entry["sources"][0], "numInputRows": 4}, {**entry["sources"][1], "numInputRows": 1}]}
    assert source_records(connect) == 3


def test_observed_metrics_read_alike_from_classic_spark_and_spark_connect() -> None:
    """Classic Spark gives a progress entry's observations as ``Row``s of the named values; Spark Connect as
    ``Row(values=[...], schema={...})`` (a mapping of the two in its progress JSON): all count the same."""
    from pyspark.sql import Row

    from panes.spark.metrics import JobMetrics

    names = ["m0_records_in", "m0_records_out"]
    connect = {"values": [5, 3], "schema": {"type": "struct", "fields": [{"name": n} for n in names]}}
    forms = [Row(m0_records_in=5, m0_records_out=3), Row(**connect), connect]  # classic, Connect, Connect's JSON
    counted = []
    for observed in ({"panes-c1": form} for form in forms):
        metrics = JobMetrics({0: "Window"}, results=frozenset({0}))
        batch = metrics.add({"batchId": 0, "numInputRows": 5, "observedMetrics": observed})
        counted.append((batch.steps["Window"]["records_in"], batch.results))
    assert counted == [(5, 3)] * 3
