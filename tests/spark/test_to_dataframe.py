"""A pipeline that ends in a Spark DataFrame: the user writes it with Spark's own sinks, trigger and checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from panes.datastream import ListSink, OutputTag, StreamEnvironment
from panes.spark import SparkRunner
from panes.types import Types
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows
from tests.aggregates import Count

pytestmark = pytest.mark.spark

LATE: OutputTag[Any] = OutputTag("late")
CLICKS = [
    [{"page": "/a", "ts": 1_000}, {"page": "/b", "ts": 1_500}],
    [{"page": "/a", "ts": 2_500}],
    [{"page": "/a", "ts": 300}],
]
COUNTS = Types.ROW_NAMED(["page", "start", "n"], [Types.STRING(), Types.LONG(), Types.LONG()])


def counted(env: StreamEnvironment) -> Any:
    return (
        env.from_micro_batches(CLICKS)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(500).with_timestamp_assigner("ts")
        )
        .key_by("page")
        .window(TumblingEventTimeWindows.of(1_000))
        .side_output_late_data(LATE)
        .aggregate(
            Count(),
            lambda page, window, counts: [{"page": page, "start": window.start, "n": next(iter(counts))}],
            output_type=COUNTS,
        )
    )


def test_a_streaming_pipeline_written_by_sparks_own_parquet_sink(spark: Any, tmp_path: Path) -> None:
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    frame = counted(env).to_dataframe()
    assert frame.isStreaming
    assert [(f.name, f.dataType.simpleString()) for f in frame.schema.fields] == [
        ("page", "string"),
        ("start", "bigint"),
        ("n", "bigint"),
    ]
    query = (
        frame.writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    rows = sorted(tuple(r) for r in spark.read.parquet(str(tmp_path / "out")).collect())
    # the same windows as the panes sinks give (see the README's example)
    reference = StreamEnvironment(SparkRunner(spark, num_shards=2))
    sink = ListSink()
    counted(reference).sink_to(sink)
    reference.execute()
    assert (
        rows
        == sorted((r["page"], r["start"], r["n"]) for r in sink.values)
        == [
            ("/a", 1_000, 1),
            ("/a", 2_000, 1),
            ("/b", 1_000, 1),
        ]
    )


def test_a_side_output_as_a_dataframe_with_a_declared_schema(spark: Any, tmp_path: Path) -> None:
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    late = counted(env).get_side_output(LATE).to_dataframe("page STRING, ts BIGINT")
    seen: list[tuple[str, int]] = []

    def collect(batch: Any, batch_id: int) -> None:
        seen.extend((r["page"], r["ts"]) for r in batch.collect())

    query = (
        late.writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert seen == [("/a", 300)]


def test_bounded_input_gives_a_batch_dataframe(spark: Any) -> None:
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    words = env.from_collection(["a", "bb", "a"]).map(lambda w: (w, len(w)), output_type="word STRING, size INT")
    frame = words.to_dataframe()
    assert not frame.isStreaming
    assert sorted(tuple(r) for r in frame.collect()) == [("a", 1), ("a", 1), ("bb", 2)]


def test_what_a_dataframe_cannot_hold_is_refused_with_what_to_do(spark: Any) -> None:
    env = StreamEnvironment(SparkRunner(spark))
    untyped = env.from_collection([1, 2]).map(lambda n: {"n": n})
    with pytest.raises(ValueError, match="declare output_type"):
        untyped.to_dataframe()
    untyped.print()
    with pytest.raises(ValueError, match="one sink per query"):
        untyped.to_dataframe("n BIGINT")
    with pytest.raises(TypeError, match="needs the Spark runner"):
        StreamEnvironment("local").from_collection([1]).to_dataframe("value BIGINT")


def test_sink_output_far_beyond_the_drivers_result_size_limit(tmp_path: Path) -> None:
    """The driver may receive at most 1 MiB per action; the job writes more than 50 MiB through a keyed step."""
    import os
    import subprocess
    import sys

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = 240_000
    source = tmp_path / "in"
    source.mkdir()
    for part in range(2):
        ids = np.arange(part * rows // 2, (part + 1) * rows // 2, dtype=np.int64)
        pq.write_table(pa.table({"id": ids, "ts": ids * 10}), source / f"part-{part}.parquet")
        os.utime(source / f"part-{part}.parquet", (1_700_000_000 + part, 1_700_000_000 + part))
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, "-m", "tests.spark.big_output_job", str(source), str(tmp_path / "out")],
        cwd=root,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    files = list((tmp_path / "out").rglob("*.json"))
    size = sum(f.stat().st_size for f in files)
    assert size > 50 * 2**20, f"only {size} bytes written"
    lines = sum(1 for f in files for _ in f.open())
    assert lines == rows
