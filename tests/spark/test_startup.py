"""What a query does before its first micro-batch: the fingerprint kept without a Spark job on a local checkpoint,
and the Python workers started ahead of the query (``panes.spark.session.warm_python_workers``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from panes.datastream.fingerprint import STATE_FORMAT, JobFingerprint
from panes.spark.restarts import FOLDER, load_fingerprint, store_fingerprint
from panes.spark.session import _WARMED, driver_path, warm_python_workers

pytestmark = pytest.mark.spark


def fingerprint(shards: str) -> JobFingerprint:
    return JobFingerprint(STATE_FORMAT, "test", {"num_shards": shards}, ())


def test_a_fingerprint_on_a_local_checkpoint_is_written_whole_and_read_back_by_spark(
    spark: Any, tmp_path: Path
) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    jobs_before = len(spark.sparkContext.statusTracker().getJobIdsForGroup())
    store_fingerprint(spark, checkpoint, fingerprint("4"))
    assert len(spark.sparkContext.statusTracker().getJobIdsForGroup()) == jobs_before  # no Spark job
    folders = sorted(os.listdir(os.path.join(checkpoint, FOLDER)))
    assert len(folders) == 1 and folders[0].startswith("start=")  # no hidden staging folder left
    store_fingerprint(spark, "file:" + checkpoint, fingerprint("8"))  # a file: URL is a local path too
    loaded = load_fingerprint(spark, checkpoint)
    assert loaded is not None and loaded.settings == {"num_shards": "8"}  # the newest of the two


def test_driver_paths() -> None:
    class Classic:
        pass

    assert driver_path(Classic(), "/tmp/x") == "/tmp/x"
    assert driver_path(Classic(), "file:/tmp/x") == "/tmp/x"
    assert driver_path(Classic(), "file:///tmp/x") == "/tmp/x"
    assert driver_path(Classic(), "hdfs://nn/x") is None


def test_workers_are_warmed_once_per_application(spark: Any) -> None:
    thread = warm_python_workers(spark)
    if thread is not None:  # this session's first query may have warmed it already
        thread.join(timeout=120)
        assert not thread.is_alive()
    assert spark.sparkContext.applicationId in _WARMED
    assert warm_python_workers(spark) is None
