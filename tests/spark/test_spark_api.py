"""The Spark runner through the API: sources and sinks, bad records, and what Spark refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from panes.datastream import ListSink, OutputTag, StreamEnvironment
from panes.errors import ErrorRecord
from panes.spark import ForeachBatchSink, MemorySink, SparkRunner
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows

pytestmark = pytest.mark.spark

BY_TS = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")


def test_strategies_spark_cannot_follow_are_refused_with_the_reason(spark: Any) -> None:
    for strategy, reason in (
        (BY_TS.with_idleness(1000), "with_idleness"),
        (BY_TS.with_watermark_alignment("g", 1000), "with_watermark_alignment"),
    ):
        env = StreamEnvironment(SparkRunner(spark))
        env.from_micro_batches([[{"ts": 1}]]).assign_timestamps_and_watermarks(strategy).sink_to(ListSink())
        with pytest.raises(ValueError, match=reason):
            env.execute()


def test_a_streaming_dataframe_source_windowed_with_bad_records_on_the_error_output(spark: Any, tmp_path: Path) -> None:
    import json

    folder = tmp_path / "in"
    folder.mkdir()
    with open(folder / "a.json", "w") as handle:
        for row in [
            {"k": "x", "ts": 10},
            {"k": "x", "ts": None},
            {"k": None, "ts": 20},
            {"k": "y", "ts": 30},
            {"k": "x", "ts": 1500},
        ]:
            handle.write(json.dumps(row) + "\n")
    errors = OutputTag("errors")
    frame = spark.readStream.schema("k STRING, ts BIGINT").json(str(folder))
    # an unbounded source runs until stopped by default; available_now processes what is there, then stops,
    # keeping what is open in its checkpoint
    runner = SparkRunner(spark, num_shards=2, trigger="available_now", checkpoint_location=str(tmp_path / "cp"))
    env = StreamEnvironment(runner)
    stamped = env.from_dataframe(frame).assign_timestamps_and_watermarks(BY_TS).side_output_errors(errors)
    counts = (
        stamped.filter(lambda row: row["k"] is not None)
        .key_by("k")
        .window(TumblingEventTimeWindows.of(1000))
        .reduce(lambda a, b: {**a, "ts": max(a["ts"], b["ts"])}, lambda key, window, rows: [(key, window.start)])
    )
    main, bad = ListSink(), ListSink()
    counts.sink_to(main)
    stamped.get_side_output(errors).sink_to(bad)
    env.execute()
    # a live file stream has no end: only windows the watermark (1499) closed have fired
    assert sorted(main.values) == [("x", 0), ("y", 0)]
    assert [type(e) for e in bad.values] == [ErrorRecord]
    assert bad.values[0].value == {"k": "x", "ts": None} and "ts" in bad.values[0].reason


def test_memory_foreach_batch_and_file_sinks(spark: Any, tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    values = env.from_micro_batches([[{"n": 1}, {"n": 2}], [{"n": 3}]]).map(lambda row: {"n": row["n"] * 10})
    values.sink_to(MemorySink("panes_test_table"))
    values.sink_to(ForeachBatchSink(lambda frame, batch_id: seen.append((batch_id, frame.count()))))
    values.sink_to_files(str(tmp_path / "files"), "json", schema="n BIGINT")
    env.execute()
    assert sorted(r["n"] for r in spark.table("panes_test_table").collect()) == [10, 20, 30]
    assert sorted(seen) == [(0, 2), (1, 1)]
    assert sorted(r["n"] for r in spark.read.json(str(tmp_path / "files")).collect()) == [10, 20, 30]
