"""A streaming job killed (SIGKILL of the driver's whole process group) at a crash point of its micro-batch
protocol and restarted from its checkpoint writes exactly the output of an uninterrupted run.

The crash points (``tests.spark.crash_points``): during a micro-batch (``offsets/N`` written, nothing else),
during the state commit (the state store's files of batch ``N`` written, ``commits/N`` not), and between
batches (``commits/N`` written, ``offsets/N+1`` not); the jobs (``tests.spark.fault_jobs``): tumbling, session
and count windows with allowed lateness and a late side output, a keyed process function with event-time and
processing-time timers, a plan that branches into two keyed steps and five sinks, and ``all`` of them in one
query. Every restarted run's outputs are compared exactly with an uninterrupted run's (rows and the micro-batch
that wrote them) and meet the job's accounting identity; the driver-side sink receives every value at least
once.

The kill lands exactly at its point: the job's crash hook (``panes.spark.crash_hook``) holds it there until the
test kills it. The default run (CI) kills three jobs that hold every kind of step, at every kind of point
(:data:`DEFAULT`: one job killed twice in turn, each restart killed again further on); ``-m faults`` adds the
full set (:data:`FULL`, 21 points, each job killed alone) and the ``all`` job killed at every kind of point in
turn (:data:`CHAIN`)::

    PYTHONPATH=$PWD/src:$PWD python -m pytest -m faults tests/spark/test_crash_points.py -s
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.spark import fault_jobs
from tests.spark.crash_points import Landing, kill_at, lose_executor_python

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]

DEFAULT = [
    ("branching", (("batch", 3), ("state", 6))),
    ("sessions", (("state", 6),)),
    ("count", (("between", 2),)),
]
"""The kills run by default (CI), each job's in turn on one checkpoint, then one restart to the end: every kind
of point, and every kind of step at one point at least. ``branching`` holds tumbling windows with lateness and a
late output, a keyed process function with event- and processing-time timers, files written through
``foreachBatch``, a ``ForeachBatchSink`` and a driver-side sink; it is killed while a micro-batch reads its input
and, restarted, again during the state commit. ``sessions`` (merging windows, files the query's tasks write
directly) is killed during the state commit, ``count`` (count windows) between micro-batches. The jobs
``tumbling`` and ``timers`` hold steps ``branching`` has; the full set (:data:`FULL`, ``-m faults``) kills each of
them at every kind of point. (Five jobs killed once each cost 688 s of a full run beside other tests; the five
as one query killed in turn, :data:`CHAIN`, more: its one query's micro-batches are dearer than the five jobs'
together.)"""

CHAIN = [("batch", 3), ("state", 6), ("between", 8)]
"""The kills of the ``all`` job (``-m faults``), in turn on one checkpoint."""

FULL = [
    ("tumbling", "batch", 2),
    ("tumbling", "state", 5),
    ("tumbling", "between", 8),
    ("tumbling", "state", 10),
    ("sessions", "batch", 3),
    ("sessions", "state", 6),
    ("sessions", "between", 9),
    ("sessions", "batch", 10),
    ("count", "between", 2),
    ("count", "batch", 4),
    ("count", "state", 7),
    ("count", "between", 10),
    ("timers", "batch", 2),
    ("timers", "state", 4),
    ("timers", "between", 6),
    ("timers", "state", 9),
    ("branching", "batch", 3),
    ("branching", "state", 5),
    ("branching", "between", 7),
    ("branching", "batch", 9),
    ("branching", "between", 10),
]
"""21 crash points: every kind on every job, at early, middle and late micro-batches."""


@dataclass(frozen=True)
class Reference:
    outputs: fault_jobs.Rows
    driver_lines: list[tuple[Any, ...]]
    last_batch: int


_references: dict[str, Reference] = {}


def reference(spark: Any, job: str, folder: Path) -> Reference:
    """The uninterrupted run of ``job`` (once per test session)."""
    if job not in _references:
        checkpoint, output = folder / f"reference-{job}-checkpoint", folder / f"reference-{job}"
        fault_jobs.run(spark, job, str(checkpoint), str(output))
        commits = [int(n) for n in os.listdir(checkpoint / "commits") if n.isdigit()]
        _references[job] = Reference(
            fault_jobs.read_outputs(job, str(output)), fault_jobs.read_driver_lines(job, str(output)), max(commits)
        )
    return _references[job]


def job_environment() -> dict[str, str]:
    """The environment of a fault job's subprocess: this one, with the repository importable."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))


def kill_and_restart(spark: Any, folder: Path, job: str, kills: list[tuple[str, int]]) -> list[Landing]:
    """Run ``job`` on one checkpoint killed at each of ``kills`` (``(point, batch)``) in turn, each run but the first
    restarted from the checkpoint the one before left, then restart it to its end in this process; check that its
    outputs are the uninterrupted run's. The landings of the kills."""
    env = job_environment()
    checkpoint, output = folder / "checkpoint", folder / "out"
    landings = []
    for point, batch in kills:
        landing = kill_at(job, point, batch, checkpoint, output, env, log=folder / f"killed-{point}-{batch}.log")
        print(f"\n[crash point] {job}: {landing.describe()}")
        assert (landing.point, landing.batch) == (point, batch), landing.describe()  # the hook held it there
        landings.append(landing)
    started = time.monotonic()
    fault_jobs.run(spark, job, str(checkpoint), str(output))
    print(f"[crash point] {job}: restarted to the end in {time.monotonic() - started:.1f} s")

    expected = reference(spark, job, folder.parent)
    assert landings[-1].batch < expected.last_batch, "the last kill should land before the last batch (work left)"
    outputs = fault_jobs.read_outputs(job, str(output))
    assert outputs == expected.outputs
    assert any(outputs.values()), "the job wrote something"
    fault_jobs.JOBS[job].accounting(outputs)
    if fault_jobs.JOBS[job].driver_lines is not None:
        # a driver sink gets each value at least once: the killed processes' and the restarted one's together
        lines = fault_jobs.read_driver_lines(job, str(output))
        assert set(lines) == set(expected.driver_lines)
        assert not Counter(expected.driver_lines) - Counter(lines)
    return landings


@pytest.mark.faults
def test_the_jobs_as_one_query_killed_at_every_kind_of_point_in_turn_restart_to_the_uninterrupted_output(
    spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("all-chain")
    landings = kill_and_restart(spark, folder, "all", CHAIN)
    assert [landing.point for landing in landings] == ["batch", "state", "between"]
    assert all(not landing.finished for landing in landings)


@pytest.mark.parametrize(
    ("job", "kills"), DEFAULT, ids=[f"{job}-{'-'.join(f'{p}@{b}' for p, b in kills)}" for job, kills in DEFAULT]
)
def test_a_job_killed_at_crash_points_in_turn_restarts_to_the_uninterrupted_output(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, job: str, kills: tuple[tuple[str, int], ...]
) -> None:
    folder = tmp_path_factory.mktemp(job)
    landings = kill_and_restart(spark, folder, job, list(kills))
    assert [(landing.point, landing.batch) for landing in landings] == list(kills)


@pytest.mark.faults
@pytest.mark.parametrize(("job", "point", "batch"), FULL, ids=[f"{j}-{p}@{b}" for j, p, b in FULL])
def test_a_job_killed_at_a_crash_point_restarts_to_the_uninterrupted_output(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, job: str, point: str, batch: int
) -> None:
    folder = tmp_path_factory.mktemp(f"{job}-{point}-{batch}")
    [landing] = kill_and_restart(spark, folder, job, [(point, batch)])
    assert landing.point == point, landing.describe()


def test_a_job_whose_executor_python_dies_goes_on_to_the_uninterrupted_output(
    spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The reduced form of a lost worker (the full one, a standalone cluster's worker killed, is
    ``tests/deploy/test_worker_failure.py``): between two micro-batches every executor-side Python process of the
    branching job (Spark's Python daemons, their workers, the shard keepers holding the live operators) is killed;
    the query goes on without a restart, its next tasks start new workers that rebuild the shards from the state
    store, and its output equals an uninterrupted run's. The driver lives on: its sink gets each value once."""
    job, folder = "branching", tmp_path_factory.mktemp("executor-python-lost")
    output = folder / "out"
    loss = lose_executor_python(
        job, "between", 4, folder / "checkpoint", output, job_environment(), "local[2,4]", log=folder / "job.log"
    )
    killed = loss.killed
    print(
        f"\n[executor python lost] {job}: after commits/{loss.commits_before}, killed {len(killed.daemons)} daemons, "
        f"{len(killed.workers)} workers, {len(killed.keepers)} shard keepers; the query went on to "
        f"commits/{loss.commits_after}, {loss.seconds:.1f} s in all"
    )
    assert loss.returncode == 0, (folder / "job.log").read_text()[-5000:]
    # the Python side of the executor, and with the keepers every live operator
    assert killed.daemons and killed.workers and killed.keepers, killed
    expected = reference(spark, job, folder.parent)
    assert loss.commits_before == 4 < loss.commits_after == expected.last_batch
    outputs = fault_jobs.read_outputs(job, str(output))
    assert outputs == expected.outputs
    fault_jobs.JOBS[job].accounting(outputs)
    assert sorted(fault_jobs.read_driver_lines(job, str(output))) == sorted(expected.driver_lines)
