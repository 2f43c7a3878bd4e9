"""A soak: a session-window job over many micro-batches with advancing event time and 300 keys (``tests.spark.soak``).
It prints, per micro-batch, the open panes and stored state bytes the keyed step reports, and every few batches
the resident memory of the PySpark worker processes; it checks that

- every session's count adds up to the input (nothing lost on the way);
- the open panes return to zero after the final watermark (all sessions fired and cleaned up), and the bytes the
  shards keep in the state store to their empty snapshots (under :data:`EMPTY_SHARD_BYTES` each);
- the memory of the Python processes holding operators (workers and shard keepers) stays flat: the largest one's
  RSS over the last third of the run stays within :data:`RSS_TOLERANCE` of its peak over the middle third. The
  operators live in the shard keepers between micro-batches and hold only open sessions, whose number stays in a
  steady band here, so a process that kept something per batch (elements of fired sessions, per-batch payloads,
  rebuilt operators) would grow with the batches; Python's allocator keeps freed arenas, and which tasks a worker
  runs varies, hence a tolerance rather than equality.

The default run soaks 30 micro-batches; ``-m soak`` runs :data:`SOAK_BATCHES` (``PANES_SOAK_BATCHES``, default 200),
and a run past Spark's checkpoint retention that is stopped there and resumed::

    PANES_SOAK_BATCHES=200 PYTHONPATH=$PWD/src:$PWD python -m pytest -m soak tests/spark/test_soak.py -s
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from panes.datastream import StreamEnvironment
from tests.spark import soak

pytestmark = [pytest.mark.spark, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]

SOAK_BATCHES = int(os.environ.get("PANES_SOAK_BATCHES", "200"))
SHARDS = 4
EMPTY_SHARD_BYTES = 1024
"""What a shard holding nothing may keep in the state store: its snapshot of empty state (~250 bytes measured)."""
RSS_TOLERANCE = (0.10, 24 * 2**20)
"""The largest worker may grow by 10 % plus 24 MiB between the middle and the last third of the run."""


def run_soak(spark: Any, folder: Path, batches: int) -> soak.Measurements:
    from panes.spark import SparkRunner

    runner = SparkRunner(spark, checkpoint_location=str(folder / "checkpoint"), num_shards=SHARDS)
    env = StreamEnvironment(runner)
    soak.build(env, batches, str(folder / "sessions"))
    measurements = soak.Measurements(every=max(1, batches // 20))
    started = time.monotonic()
    job = runner.start(env.plan(), env.config(), "soak")
    try:
        while not job.await_termination(0.5):
            measurements.add(job.query.recentProgress)
        measurements.add(job.query.recentProgress)
    finally:
        job.stop()
    elapsed = time.monotonic() - started
    print(f"\n[soak] {batches} input batches, {len(measurements.open_panes)} micro-batches in {elapsed:.1f} s")
    print(measurements.table())
    rows = pq.read_table(folder / "sessions").to_pylist()
    assert sum(row["n"] for row in rows) == batches * soak.ROWS_PER_BATCH, "every element is in one session"
    return measurements


def check(measurements: soak.Measurements) -> None:
    assert len(measurements.open_panes) >= 10, "progress of every micro-batch was read"
    assert max(measurements.open_panes) > 0
    assert measurements.open_panes[-1] == 0, "the final watermark fires and cleans up every session"
    assert measurements.state_bytes[-1] <= SHARDS * EMPTY_SHARD_BYTES, (
        "the shards' logs were replaced by empty snapshots"
    )
    peak = max(measurements.open_panes)
    print(
        f"[soak] open panes peak {peak}, at the end {measurements.open_panes[-1]}; stored state bytes peak "
        f"{max(measurements.state_bytes)}, at the end {measurements.state_bytes[-1]}"
    )
    samples = [m[3] for m in measurements.memory]
    assert len(samples) >= 6, "enough memory samples"
    assert all(processes > 0 for _, processes, _, _ in measurements.memory), "no Python process was found to sample"
    third = len(samples) // 3
    middle, last = max(samples[third : 2 * third]), max(samples[2 * third :])
    relative, absolute = RSS_TOLERANCE
    print(f"[soak] largest worker RSS: middle third {middle / 2**20:.1f} MiB, last third {last / 2**20:.1f} MiB")
    assert last <= middle * (1 + relative) + absolute, "the workers' memory grows with the batches"


def test_a_short_soak_returns_its_state_to_zero_with_flat_worker_memory(spark: Any, tmp_path: Path) -> None:
    check(run_soak(spark, tmp_path, 30))


@pytest.mark.soak
def test_a_long_soak_returns_its_state_to_zero_with_flat_worker_memory(spark: Any, tmp_path: Path) -> None:
    check(run_soak(spark, tmp_path, SOAK_BATCHES))


@pytest.mark.soak
def test_a_soak_stopped_past_sparks_checkpoint_retention_resumes_to_the_uninterrupted_output(
    spark: Any, tmp_path: Path
) -> None:
    """Spark keeps the last ``spark.sql.streaming.minBatchesToRetain`` (default 100) micro-batches' offsets, commits
    and state versions and deletes older ones. A job stopped after more micro-batches than that and restarted
    reads only what is kept: the restart goes on from the last commit, and its sessions are the local runner's."""
    from panes.local import LocalRunner
    from panes.spark import SparkRunner

    retained = int(spark.conf.get("spark.sql.streaming.minBatchesToRetain", "100"))
    batches = max(SOAK_BATCHES, retained + 40)
    cut = retained + 20
    checkpoint, output = tmp_path / "checkpoint", tmp_path / "sessions"
    for through in (cut, None):  # stopped after ``cut`` micro-batches, then resumed to the end
        env = StreamEnvironment(SparkRunner(spark, checkpoint_location=str(checkpoint), num_shards=SHARDS, quiet=True))
        soak.build(env, batches, str(output), through)
        env.execute("soak past retention")
        if through is not None:
            assert not (checkpoint / "offsets" / "0").exists(), "Spark deleted the oldest micro-batches' offsets"
            assert (checkpoint / "commits" / str(cut - 1)).is_file()
    reference = StreamEnvironment(LocalRunner())
    soak.build(reference, batches, str(tmp_path / "reference"))
    reference.execute()
    columns = ["key", "start", "end", "n"]  # not the micro-batch that wrote a row (the runners' batches differ)
    resumed = sorted(tuple(row.values()) for row in pq.read_table(output, columns=columns).to_pylist())
    expected = sorted(tuple(row.values()) for row in pq.read_table(tmp_path / "reference", columns=columns).to_pylist())
    assert sum(row[3] for row in resumed) == batches * soak.ROWS_PER_BATCH
    assert resumed == expected
