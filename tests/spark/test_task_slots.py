"""More task slots than two: on ``local[8]`` (8 shuffle partitions, 16 shards) the job whose state grows every
micro-batch (``tests.spark.slots_job``) gives the local runner's results, and its shards' operators stay alive in
their slots' shard keepers: no call after a shard's first rebuilds its operator from the state store (but, at most
once, the second where the first ran in its worker while the keeper started and the hand-over came late), though
Spark hands the tasks to any of its eight Python workers. (``-m deploy`` runs the same on a standalone cluster of
two workers with four cores each: ``tests/deploy/test_standalone_cluster.py``.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from panes.datastream import ListSink, StreamEnvironment
from tests.deploy.servers import run_job
from tests.spark import slots_job

pytestmark = [pytest.mark.spark, pytest.mark.skipif(sys.platform != "linux", reason="shard keepers need Linux")]


def local_results(batches: int = slots_job.BATCHES) -> dict[str, list[tuple[Any, ...]]]:
    env = StreamEnvironment("local")
    sinks = {}
    for name, stream in slots_job.build(env, batches).items():
        sinks[name] = ListSink()
        stream.sink_to(sinks[name])
    env.execute()
    return {name: slots_job.rows(sink.values) for name, sink in sinks.items()}


def spark_results(output: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The rows the Spark run wrote (without the ``batch=<id>`` folder column of file sinks)."""
    return {
        name: slots_job.rows(pq.read_table(output / name).drop_columns(["batch"]).to_pylist())
        for name in ("windows", "tally")
    }


def check_state_stayed(metrics: dict[str, dict[str, int]], shards: int) -> None:
    """Every keyed step's calls found their operator alive, but each shard's first (which has nothing to restore;
    a shard called before its state committed restores nothing either) and, at most once per shard, the call after
    a first one that ran in its worker while the slot's keeper started, when it reaches the keeper before the
    worker handed the shard over (``keeper_client``)."""
    for name, step in metrics.items():
        if step.get("shard_calls"):
            assert step["shard_calls"] > 2 * shards, (name, step)  # every shard called in most micro-batches
            assert step["restores"] <= shards, (name, step)


def test_eight_task_slots_keep_every_shard_alive_and_give_the_local_runners_results(tmp_path: Path) -> None:
    output = tmp_path / "out"
    run_job(["-m", "tests.spark.slots_job", "local[8]", str(output)])
    assert json.loads((output / "keepers.json").read_text()) is True
    results = spark_results(output)
    assert results == local_results()
    assert len(results["windows"]) == slots_job.KEYS + 1 and len(results["tally"]) == slots_job.KEYS + 1
    check_state_stayed(json.loads((output / "metrics.json").read_text()), shards=16)


def test_without_shard_keepers_shards_live_in_the_workers_and_give_the_local_runners_results(tmp_path: Path) -> None:
    """``PANES_SHARD_KEEPERS=0`` (and every platform but Linux): each shard call runs in the Python worker that
    runs its task, restoring its operator from the state store when that worker does not hold it live."""
    output = tmp_path / "out"
    # a reduced form: three micro-batches of rows, each but the first meeting state of the ones before it
    run_job(["-m", "tests.spark.slots_job", "local[2]", str(output), "2", "3"], PANES_SHARD_KEEPERS="0")
    assert json.loads((output / "keepers.json").read_text()) is False
    assert spark_results(output) == local_results(3)
