"""A streaming source does not end: a job over it runs until stopped, and a stop keeps its state in a checkpoint it
resumes from. ``panes run`` over streaming files without ``--checkpoint`` keeps one and says where; Ctrl-C and
SIGTERM stop the query cleanly with one line saying where it stopped and how to resume; stopping over such a source
with a temporary checkpoint is refused (the open windows would be lost)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from panes.datastream import ListSink, StreamEnvironment
from panes.spark import SparkRunner
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows
from tests.cli.support import ROOT

pytestmark = pytest.mark.spark

JOB = """
from panes.functions import Count
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows

def build(env):
    (env.from_files({input!r}, format="json", schema="k STRING, ts BIGINT", streaming=True, max_files_per_trigger=1)
        .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts"))
        .key_by("k")
        .window(TumblingEventTimeWindows.of(1_000))
        .aggregate(Count())
        .sink_to_files({output!r}, "json"))
"""


def write_events(folder: Path, files: int, first: int = 0) -> None:
    folder.mkdir(exist_ok=True)
    for index in range(first, first + files):
        with open(folder / f"part-{index:03d}.json", "w") as handle:
            for i in range(10):
                handle.write(json.dumps({"k": f"k{i % 2}", "ts": index * 1_000 + i * 50}) + "\n")


def panes_process(*arguments: str) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.Popen(
        [sys.executable, "-m", "panes.cli.main", *arguments],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stopped_after_its_first_batch(job: Path, stop: int, *arguments: str) -> tuple[int, str]:
    """Run ``job`` on Spark (``--trigger 1 second``, then ``arguments``), send it ``stop`` once its first
    micro-batch's progress is printed, and check that it stops as documented: exit code 130, a short message
    without a trace naming the micro-batch it stopped after and its checkpoint. That micro-batch and checkpoint."""
    running = panes_process("run", str(job), "--runner", "spark", "--trigger", "1 second", *arguments)
    assert running.stderr is not None
    lines = []
    for line in running.stderr:  # the progress of the first micro-batch, then the stop
        lines.append(line)
        if line.startswith("batch "):
            break
    running.send_signal(stop)
    _, rest = running.communicate(timeout=120)
    said = "".join(lines) + rest
    print(said)  # in the report of a failure, whole
    assert running.returncode == 130, said
    assert "Traceback" not in said and len(said.splitlines()) < 15, said
    stopped = re.search(r"stopped after micro-batch (\d+); its state is kept in the checkpoint (\S+):", said)
    assert stopped is not None, said
    checkpoint = stopped.group(2)
    if not arguments:  # a checkpoint panes chose: said when the job started
        kept = re.search(r"keeping its state in (\S+)", said)
        assert kept is not None and checkpoint == kept.group(1), said
    assert os.path.isdir(os.path.join(checkpoint, "offsets"))
    return int(stopped.group(1)), checkpoint


def test_a_stopped_streaming_job_keeps_its_state_and_resumes(spark: Any, tmp_path: Path) -> None:
    """Stopped by Ctrl-C (SIGINT), resumed and stopped by SIGTERM, resumed again to the end of what arrived: each
    resumed run reads only the files that came after, with the windows it had open."""
    write_events(tmp_path / "in", 3)
    job = tmp_path / "job.py"
    job.write_text(JOB.format(input=str(tmp_path / "in"), output=str(tmp_path / "out")))
    first, checkpoint = stopped_after_its_first_batch(job, signal.SIGINT)

    write_events(tmp_path / "in", 2, first=3)
    second, again = stopped_after_its_first_batch(job, signal.SIGTERM, "--checkpoint", checkpoint)
    assert again == checkpoint and second > first

    write_events(tmp_path / "in", 2, first=5)
    resumed = panes_process(
        "run", str(job), "--runner", "spark", "--checkpoint", checkpoint, "--trigger", "available-now"
    )
    _, after = resumed.communicate(timeout=180)
    assert resumed.returncode == 0, after
    batches = [int(b) for b in re.findall(r"^batch (\d+)", after, re.M)]
    assert batches and min(batches) > second, after
    assert "stops when the input read so far is processed" in after


def test_stopping_over_a_source_that_does_not_end_needs_a_checkpoint(spark: Any, tmp_path: Path) -> None:
    write_events(tmp_path / "in", 1)
    env = StreamEnvironment(SparkRunner(spark, num_shards=2, trigger="available_now"))
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    env.from_files(
        str(tmp_path / "in"), format="json", schema="k STRING, ts BIGINT", streaming=True
    ).assign_timestamps_and_watermarks(strategy).key_by("k").window(TumblingEventTimeWindows.of(1_000)).reduce(
        lambda a, b: a
    ).sink_to(ListSink())
    with pytest.raises(ValueError, match="does not end: its open windows and timers would be lost"):
        env.execute()
