"""A worker of a standalone cluster dies mid-stream: Spark reschedules its tasks on the other worker, the query
recovers without a restart, and its output equals an uninterrupted run's (``-m deploy``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.deploy.servers import ROOT, cluster, run_job, spark_env, wait_for
from tests.spark import fault_jobs

JOB = "branching"
"""Both keyed steps, file sinks and ``foreachBatch`` sinks on the executors."""


def _committed(checkpoint: Path) -> int:
    folder = checkpoint / "commits"
    return max((int(n) for n in os.listdir(folder) if n.isdigit()), default=-1) if folder.is_dir() else -1


@pytest.mark.deploy
def test_a_worker_killed_mid_stream_is_replaced_and_the_output_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    checkpoint, output = tmp_path / "checkpoint", tmp_path / "out"
    log = tmp_path / "job.log"
    with cluster(2, tmp_path / "cluster") as running, open(log, "w") as job_output:
        job = subprocess.Popen(
            [sys.executable, "-m", "tests.spark.fault_jobs", JOB, str(checkpoint), str(output), running.url],
            cwd=ROOT,
            env=spark_env(),
            stdout=job_output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            wait_for(lambda: _committed(checkpoint) >= 3 or job.poll() is not None, "three committed batches", 600)
            assert job.poll() is None, f"the job ended before the kill:\n{log.read_text()[-5000:]}"
            victim = running.workers[1]
            # the worker, the executor it launched and that executor's Python workers: the machine goes away
            os.killpg(victim.pid, signal.SIGKILL)
            killed_at = _committed(checkpoint)
            started = time.monotonic()
            wait_for(lambda: running.alive_workers() == 1, "the master to notice the lost worker", 300)
            job.wait(timeout=900)
        finally:
            if job.poll() is None:
                os.killpg(job.pid, signal.SIGKILL)
                job.wait()
        assert job.returncode == 0, log.read_text()[-5000:]
        recovered_s = time.monotonic() - started
    last = _committed(checkpoint)
    print(
        f"\n[worker failure] killed worker 1 after commits/{killed_at}; the query went on to commits/{last} "
        f"in {recovered_s:.1f} s"
    )
    assert killed_at < last, "the worker died while batches were still to come"

    reference = tmp_path / "reference"
    run_job(["-m", "tests.spark.fault_jobs", JOB, str(tmp_path / "reference-checkpoint"), str(reference)])
    outputs = fault_jobs.read_outputs(JOB, str(output))
    assert outputs == fault_jobs.read_outputs(JOB, str(reference))
    fault_jobs.JOBS[JOB].accounting(outputs)
    # the driver survived: its sink got every value exactly once
    assert sorted(fault_jobs.read_driver_lines(JOB, str(output))) == sorted(
        fault_jobs.read_driver_lines(JOB, str(reference))
    )
