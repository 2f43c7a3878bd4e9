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
