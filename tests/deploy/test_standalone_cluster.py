"""panes on a real Spark standalone cluster (master and workers from pyspark's ``bin/spark-class``, each its
own JVM with its own Python workers, on loopback): the demo pipeline and a restart from a checkpoint give
the outputs ``local[2]`` gives. The full form (two workers, the default demo, a killed and restarted job)
runs with ``-m deploy``; CI runs the reduced form (one worker, a small demo)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.deploy.servers import run_job, spark_env, standalone_cluster
from tests.spark import fault_jobs
from tests.spark.crash_points import kill_at
from tests.spark.test_task_slots import local_results, spark_results

OUTPUTS = ("sessions", "page_counts", "late")


def demo_outputs(folder: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row the demo wrote, per output, sorted (with the micro-batch it came in)."""
    result = {}
    for name in OUTPUTS:
        path = folder / name
        table = pq.read_table(path) if path.exists() else None
        result[name] = [] if table is None else sorted(tuple(row.values()) for row in table.to_pylist())
    return result


def run_demo(folder: Path, events: int, batches: int, master: str) -> dict[str, list[tuple[Any, ...]]]:
    run_job(
        [
            "-m",
            "panes.cli.main",
            "demo",
            "--events",
            str(events),
            "--batches",
            str(batches),
            "--output",
            str(folder),
            "--master",
            master,
        ]
    )
    return demo_outputs(folder)


def demo_in_this_session(spark: Any, folder: Path, events: int, batches: int) -> dict[str, list[tuple[Any, ...]]]:
    """The demo's pipeline run on this process's local session, as ``panes demo`` runs it (its shards)."""
    from panes.cli import demo
    from panes.datastream import StreamEnvironment
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark, num_shards=4))
    demo.build(env, demo.click_batches(events, batches), folder)
    env.execute("panes demo")
    return demo_outputs(folder)


@pytest.mark.spark
def test_the_demo_on_a_one_worker_cluster_equals_local(spark: Any, tmp_path: Path) -> None:
    with standalone_cluster(1, tmp_path / "cluster") as master:
        on_cluster = run_demo(tmp_path / "cluster-out", 2_000, 3, master)
    local = demo_in_this_session(spark, tmp_path / "local-out", 2_000, 3)
    assert on_cluster == local
    assert on_cluster["sessions"] and on_cluster["page_counts"]


@pytest.mark.deploy
def test_the_demo_on_a_two_worker_cluster_equals_local(tmp_path: Path) -> None:
    from panes.cli.demo import DEFAULT_BATCHES

    # the demo's batches as it runs them: its far too late clicks arrive in the last one, after the watermark
    # passed their windows' lateness (with fewer batches it has not)
    with standalone_cluster(2, tmp_path / "cluster") as master:
        on_cluster = run_demo(tmp_path / "cluster-out", 20_000, DEFAULT_BATCHES, master)
    local = run_demo(tmp_path / "local-out", 20_000, DEFAULT_BATCHES, "local[2]")
    assert on_cluster == local
    assert on_cluster["late"], "the demo has too-late clicks"


@pytest.mark.deploy
def test_a_job_killed_on_the_cluster_and_restarted_from_its_checkpoint_equals_local(tmp_path: Path) -> None:
    checkpoint, output = tmp_path / "checkpoint", tmp_path / "out"
    with standalone_cluster(2, tmp_path / "cluster") as master:
        landing = kill_at("tumbling", "batch", 3, checkpoint, output, spark_env(), master=master)
        assert (landing.point, landing.batch) == ("batch", 3), landing.describe()
        run_job(["-m", "tests.spark.fault_jobs", "tumbling", str(checkpoint), str(output), master])
    reference = tmp_path / "reference"
    run_job(["-m", "tests.spark.fault_jobs", "tumbling", str(tmp_path / "reference-checkpoint"), str(reference)])
    restarted = fault_jobs.read_outputs("tumbling", str(output))
    assert restarted == fault_jobs.read_outputs("tumbling", str(reference))
    assert restarted["windows"] and restarted["late"]


@pytest.mark.deploy
def test_two_workers_of_four_cores_keep_their_shards_alive_and_give_the_local_runners_results(tmp_path: Path) -> None:
    import json

    output = tmp_path / "out"
    with standalone_cluster(2, tmp_path / "cluster", cores=4) as master:
        run_job(["-m", "tests.spark.slots_job", master, str(output), "8"])
    assert spark_results(output) == local_results()
    shards = 16
    for name, step in json.loads((output / "metrics.json").read_text()).items():
        if step.get("shard_calls"):
            # a partition Spark moves to the other executor restores there (once); none may keep doing so; a shard
            # whose first call ran in its worker while the keeper started may restore once in the keeper
            assert step["restores"] <= shards + 0.05 * (step["shard_calls"] - shards), (name, step)
