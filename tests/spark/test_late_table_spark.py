"""A window's late data table (``late_data_table``) holds the same rows when the job runs on Spark as on the local
runner, and ``reconcile`` reads what Spark wrote (``tests/core/test_reconcile.py`` checks the corrections)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from panes.datastream import ListSink, StreamEnvironment
from panes.datastream.reconcile import reconcile
from panes.functions import Sum
from panes.local import LocalRunner
from panes.spark import SparkRunner
from panes.watermarks import WatermarkStrategy
from panes.windowing import SlidingEventTimeWindows, TumblingEventTimeWindows, WindowRow

pytestmark = pytest.mark.spark

BATCHES = [
    [{"k": "a", "v": 1, "ts": 1}, {"k": "b", "v": 2, "ts": 15}, {"k": "a", "v": 3, "ts": 22}],
    [{"k": "a", "v": 4, "ts": 2}, {"k": "b", "v": 5, "ts": 40}, {"k": "b", "v": 6, "ts": 18}],
    [{"k": "a", "v": 7, "ts": 12}, {"k": "a", "v": 8, "ts": 41}, {"k": "b", "v": 9, "ts": 31}],
]


def job(folder: Path, sink: ListSink) -> Any:
    def build(env: StreamEnvironment) -> None:
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
        keyed = (
            env.from_micro_batches(BATCHES, type_info="k STRING, v BIGINT, ts BIGINT")
            .assign_timestamps_and_watermarks(strategy)
            .key_by("k")
        )
        tumbling = keyed.window(TumblingEventTimeWindows.of(10)).allowed_lateness(5).late_data_table(str(folder / "t"))
        tumbling.aggregate(Sum("v"), WindowRow()).sink_to(sink)
        sliding = keyed.window(SlidingEventTimeWindows.of(20, 10)).late_data_table(str(folder / "s"))
        sliding.aggregate(Sum("v"), WindowRow()).sink_to(ListSink())

    return build


def table(folder: Path) -> list[dict[str, Any]]:
    rows = ds.dataset(folder, format="parquet", partitioning="hive").to_table().to_pylist()
    return sorted(({k: v for k, v in row.items() if k != "batch"} for row in rows), key=repr)


def test_spark_writes_the_late_table_the_local_runner_writes(spark: Any, tmp_path: Path) -> None:
    local, remote = tmp_path / "local", tmp_path / "spark"
    env = StreamEnvironment(LocalRunner())
    job(local, ListSink())(env)
    env.execute()
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    job(remote, ListSink())(env)
    env.execute()
    for name in ("t", "s"):
        assert table(remote / name) == table(local / name)
    assert table(local / "t") and {row["step_uid"] for row in table(local / "t")} != {
        row["step_uid"] for row in table(local / "s")
    }
    corrections = reconcile(job(remote, ListSink()), str(remote / "t"))
    assert corrections.late_elements == len(table(remote / "t")) and corrections.rows


def test_the_reconciliation_loop_on_spark_gives_the_batch_result_over_all_data(spark: Any, tmp_path: Path) -> None:
    """Stream on Spark with a late table, reconcile with both BATCH runs on Spark: the corrections are the local
    runner's, and applied to what the stream emitted they give one BATCH run over every element."""
    from collections import Counter

    from panes.datastream import RuntimeExecutionMode
    from tests.core import test_reconcile as loop

    # a's [0, 10) fires at watermark 21 (lateness 5 cleans it at 14): a@3 and a@4 come after, too late
    batches = [[("a", 1, 1), ("b", 12, 2)], [("a", 21, 3)], [("a", 3, 4), ("b", 14, 5)], [("a", 4, 6), ("a", 25, 7)]]
    late = str(tmp_path / "late")
    streamed = ListSink()
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    loop.job(batches, "tumbling", 5, late, streamed, retracting=True)(env)
    env.execute()
    on_spark = reconcile(
        loop.job(batches, "tumbling", 5, late, ListSink(), retracting=True), late, SparkRunner(spark, num_shards=2)
    )
    on_local = reconcile(loop.job(batches, "tumbling", 5, late, ListSink(), retracting=True), late)
    assert on_spark.late_elements == 2
    assert sorted(map(repr, on_spark.rows)) == sorted(map(repr, on_local.rows))
    complete = ListSink()
    batch = StreamEnvironment().set_runtime_mode(RuntimeExecutionMode.BATCH)
    loop.job(batches, "tumbling", 5, late + "-unused", complete, retracting=False)(batch)
    batch.execute()
    expected = Counter(repr(row) for row in complete.values)
    assert loop.applied(on_spark.rows, loop.applied(streamed.values)) == expected
    assert loop.applied(streamed.values) != expected  # the stream alone was wrong


# a's [0, 10) fires early (three elements) and on time at watermark 11; b's [10, 20) on time, then late (b@15);
# a@3 and b@16 come after their windows' cleanup (lateness 5): too late. [20, 30) and [40, 50) fire on time in the
# advance that also reaches their cleanup time (the end of the input): their panes are the last
EARLY_AND_LATE = [
    [("a", 1, 1), ("a", 2, 2), ("a", 3, 3), ("b", 12, 4)],
    [("a", 22, 5)],
    [("b", 15, 6), ("a", 3, 7)],
    [("a", 40, 8)],
    [("b", 16, 9)],
]


@pytest.mark.parametrize(
    ("trigger", "mode", "assigner"),
    [
        ("early count 3", "accumulating", "tumbling"),
        ("default", "retracting", "tumbling"),
        ("default", "accumulating", "tumbling"),
        ("early count 3", "discarding", "session"),
    ],
    ids=["early", "retracting", "columnar", "sessions"],
)
def test_reconcile_on_spark_with_early_firings_and_retractions(
    spark: Any, tmp_path: Path, trigger: str, mode: str, assigner: str
) -> None:
    """The issue's two jobs (an early count trigger; retracting fired panes with the default trigger), the
    default job, which Spark runs on columns, and sessions (gap 4) fired early and discarded, all with pane
    columns. Spark emits the local runner's rows (pane
    info and the last panes included); reconcile on Spark finds the local runner's corrections, which retract rows
    the stream emitted, pane info included, and give the BATCH result over all data; they are written without a
    declared type."""
    from panes.datastream import RuntimeExecutionMode
    from tests.core import test_reconcile_properties as loop

    def build(late: str, sink: ListSink) -> Any:
        return loop.job(EARLY_AND_LATE, late, sink, trigger, mode, pane=True, assigner=assigner)

    late = str(tmp_path / "late")
    streamed = ListSink()
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    build(late, streamed)(env)
    env.execute()
    local = ListSink()
    env = StreamEnvironment(LocalRunner())
    build(str(tmp_path / "local-late"), local)(env)
    env.execute()
    assert sorted(map(repr, streamed.values)) == sorted(map(repr, local.values))
    assert any(row["pane_last"] for row in streamed.values)
    on_spark = reconcile(build(late, ListSink()), late, SparkRunner(spark, num_shards=2))
    on_local = reconcile(build(late, ListSink()), late)
    assert on_spark.late_elements == 2
    assert sorted(map(repr, on_spark.rows)) == sorted(map(repr, on_local.rows))
    complete = ListSink()
    batch = StreamEnvironment().set_runtime_mode(RuntimeExecutionMode.BATCH)
    build(late + "-unused", complete)(batch)
    batch.execute()
    table = loop.corrected(loop.consumed(list(streamed.values), mode), on_spark.rows)
    assert loop.compared(table, mode) == loop.compared(loop.consumed(list(complete.values), mode), mode)
    written = ds.dataset(on_spark.write(str(tmp_path / "corrections.parquet")), format="parquet").to_table()
    assert sorted(map(repr, written.to_pylist())) == sorted(map(repr, on_spark.rows))
