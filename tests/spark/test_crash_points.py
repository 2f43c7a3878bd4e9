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
from tests.spark.crash_points import Landing, PythonLoss, kill_at, lose_executor_python_then_kill

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]

DEFAULT = [
    ("branching", (("batch", 4), ("state", 6))),
    ("sessions", (("state", 4),)),
    ("count", (("between", 2),)),
]
"""The kills run by default (CI), each job's in turn on one checkpoint, then one restart to the end: every kind
of point, and every kind of step at one point at least. ``branching`` holds tumbling windows with lateness and a
late output, a keyed process function with event- and processing-time timers, files written through
``foreachBatch``, a ``ForeachBatchSink`` and a driver-side sink; it is killed while a micro-batch reads its input
(batch 4, where a window fires again within its lateness) and, restarted, again during the state commit of batch
6 (the end of input, which fires what is left). ``sessions`` (merging windows, files the query's tasks write
directly) is killed during the state commit of batch 4, where a session that fired grows; ``count`` (count
windows) between micro-batches. The jobs ``tumbling`` and ``timers`` hold
steps ``branching`` has; the full set (:data:`FULL`, ``-m faults``) kills each of them at every kind of point.

What a kill costs is mostly fixed: its own JVM's start and first micro-batch (about 12 s on two cores), then
every micro-batch once more between the killed run and its restart, and once in the uninterrupted run; so the
jobs run 8 micro-batches (``fault_jobs``), and the default run kills as few times as covers the points, the
steps and the two paths of a state commit (the query's own file commit, ``foreachBatch``). (Five jobs killed once
each cost 688 s of a full run beside other tests; the five as one query killed in turn, :data:`CHAIN`, more: its
one query's micro-batches are dearer than the five jobs' together.)"""

PYTHON_LOSS = {"branching": ("between", 2)}
"""In its first run, before its first kill, a job of :data:`DEFAULT` named here loses every executor-side Python
process at this point and goes on (:func:`check_python_loss`)."""

CHAIN = [("batch", 2), ("state", 4), ("between", 5)]
"""The kills of the ``all`` job (``-m faults``), in turn on one checkpoint."""

FULL = [
    ("tumbling", "batch", 1),
    ("tumbling", "state", 3),
    ("tumbling", "between", 4),
    ("tumbling", "state", 6),
    ("sessions", "batch", 2),
    ("sessions", "state", 3),
    ("sessions", "between", 5),
    ("sessions", "batch", 6),
    ("count", "between", 1),
    ("count", "batch", 2),
    ("count", "state", 4),
    ("count", "between", 5),
    ("timers", "batch", 1),
    ("timers", "state", 2),
    ("timers", "between", 4),
    ("timers", "state", 5),
    ("branching", "batch", 2),
    ("branching", "state", 3),
    ("branching", "between", 4),
    ("branching", "between", 5),
    ("branching", "batch", 6),
    ("branching", "between", 6),
]
"""22 crash points: every kind on every job, at early, middle and late micro-batches (a job runs micro-batches 0
to 7: its 6 lists, the end of input, and Spark's last, which fires what the end of input's watermark closes).
``branching`` between micro-batches 6 and 7 is a restart after the end of input committed: Spark alone would plan
nothing more and lose what micro-batch 7 fires; panes delivers the end of input again (``panes.spark.end_again``)."""


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


def kill_and_restart(
    spark: Any, folder: Path, job: str, kills: list[tuple[str, int]], python_loss: tuple[str, int] | None = None
) -> list[Landing]:
    """Run ``job`` on one checkpoint killed at each of ``kills`` (``(point, batch)``) in turn, each run but the first
    restarted from the checkpoint the one before left, then restart it to its end in this process; check that its
    outputs are the uninterrupted run's. The landings of the kills. With ``python_loss``, the first run loses its
    executor-side Python at that point first and goes on to its kill (see :func:`check_python_loss`)."""
    env = job_environment()
    checkpoint, output = folder / "checkpoint", folder / "out"
    landings = []
    for index, (point, batch) in enumerate(kills):
        log = folder / f"killed-{point}-{batch}.log"
        if index == 0 and python_loss is not None:
            loss, landing = lose_executor_python_then_kill(
                job, python_loss, (point, batch), checkpoint, output, env, "local[2,4]", log
            )
            check_python_loss(job, python_loss, loss, landing, output, reference(spark, job, folder.parent))
        else:
            landing = kill_at(job, point, batch, checkpoint, output, env, log=log)
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
    landings = kill_and_restart(spark, folder, job, list(kills), PYTHON_LOSS.get(job))
    assert [(landing.point, landing.batch) for landing in landings] == list(kills)


@pytest.mark.faults
@pytest.mark.parametrize(("job", "point", "batch"), FULL, ids=[f"{j}-{p}@{b}" for j, p, b in FULL])
def test_a_job_killed_at_a_crash_point_restarts_to_the_uninterrupted_output(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, job: str, point: str, batch: int
) -> None:
    folder = tmp_path_factory.mktemp(f"{job}-{point}-{batch}")
    [landing] = kill_and_restart(spark, folder, job, [(point, batch)])
    assert landing.point == point, landing.describe()


def check_python_loss(
    job: str, at: tuple[str, int], loss: PythonLoss, landing: Landing, output: Path, expected: Reference
) -> None:
    """The reduced form of a lost worker (the full one, a standalone cluster's worker killed, is
    ``tests/deploy/test_worker_failure.py``): at ``at`` every executor-side Python process of the job (Spark's
    Python daemons, their workers, the shard keepers holding the live operators) was killed; the query went on
    without a restart, its next tasks starting new workers that rebuilt the shards from the state store, up to its
    kill (the restarts after it end with the uninterrupted run's output, :func:`kill_and_restart`). The driver
    lived on through the loss: its sink got each value once."""
    killed = loss.killed
    print(
        f"\n[executor python lost] {job}: at {at[0]}@{at[1]}, after commits/{loss.commits_before}, killed "
        f"{len(killed.daemons)} daemons, {len(killed.workers)} workers, {len(killed.keepers)} shard keepers; the "
        f"query went on to commits/{landing.commits} before its kill"
    )
    # the Python side of the executor, and with the keepers every live operator
    assert killed.daemons and killed.workers and killed.keepers, killed
    assert not landing.finished and loss.commits_before < landing.wanted_batch - 1 <= landing.commits
    lines = fault_jobs.read_driver_lines(job, str(output))
    assert lines and not Counter(lines) - Counter(expected.driver_lines), "each value once, none unknown"
