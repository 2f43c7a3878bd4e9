"""A checkpoint written by an older panes, in an older state format, restored by this one: refused before any
of its state is read, naming both formats and what to do, on both runners; the checkpoint stays as it was.

The files are real: ``tests/fixtures/state_format_4`` holds a local runner's snapshot and a Spark runner's
checkpoint of one job, written by panes in state format 4 (see its ``write.py``).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from panes.datastream import StreamEnvironment
from panes.datastream.fingerprint import STATE_FORMAT
from panes.errors import IncompatibleCheckpointError
from panes.local import LocalRunner
from tests.fixtures.state_format_4.job import BATCHES, EVENTS, build

FIXTURE = Path(__file__).parent / "fixtures" / "state_format_4"
REFUSED = rf"state format 4, and this panes \(.*\) reads state format {STATE_FORMAT}"
ADVICE = "start it from a new checkpoint directory"


def test_the_fixture_is_of_an_older_format() -> None:
    assert STATE_FORMAT > 4, "state format 4 is no longer older: write a fixture of the format before this one"
    assert (FIXTURE / "local.snapshot").stat().st_size > 0
    assert (FIXTURE / "spark-checkpoint" / "commits" / "1").is_file(), "the checkpoint committed two micro-batches"


def test_a_local_snapshot_of_state_format_4_is_refused() -> None:
    runner = LocalRunner(clock="stepping", advance="per_element")
    env = StreamEnvironment(runner, parallelism=2)
    build(env, env.from_collection(EVENTS))
    with pytest.raises(IncompatibleCheckpointError, match=r"in state format 4, and this panes reads") as caught:
        runner.start(env.plan(), env.config(), snapshot=(FIXTURE / "local.snapshot").read_bytes())
    assert ADVICE in str(caught.value)
    assert caught.value.changes == ((None, "state format", "4", str(STATE_FORMAT)),)


@pytest.mark.spark
def test_a_spark_checkpoint_of_state_format_4_is_refused_and_left_as_it_was(spark: Any, tmp_path: Path) -> None:
    from panes.spark import SparkRunner

    checkpoint = tmp_path / "checkpoint"
    shutil.copytree(FIXTURE / "spark-checkpoint", checkpoint)
    env = StreamEnvironment(SparkRunner(spark, checkpoint_location=str(checkpoint), quiet=True))
    tumbling, sessions = build(env, env.from_micro_batches(BATCHES))
    with pytest.raises(IncompatibleCheckpointError, match=REFUSED) as caught:
        env.execute("restored")
    assert ADVICE in str(caught.value)
    assert caught.value.changes == ((None, "state format", "4", str(STATE_FORMAT)),)
    assert tumbling.values == [] and sessions.values == []
    assert files(checkpoint) == files(FIXTURE / "spark-checkpoint"), "the refused restore changed the checkpoint"


def files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by its path relative to ``root``, with its bytes."""
    return {str(path.relative_to(root)): path.read_bytes() for path in root.rglob("*") if path.is_file()}


def test_a_snapshot_naming_a_class_this_panes_has_not_is_refused_saying_so() -> None:
    """A snapshot naming a class this panes no longer has (as one written by an older panes may): refused with
    the reason, before anything runs, rather than with Python's unpickling error alone."""
    runner = LocalRunner(clock="stepping", advance="per_element")
    env = StreamEnvironment(runner, parallelism=2)
    build(env, env.from_collection(EVENTS))
    gone = b"cpanes.operators.gone\nGone\n."  # a pickle of the class panes.operators.gone.Gone
    with pytest.raises(IncompatibleCheckpointError, match=r"this panes cannot read it \(ModuleNotFoundError") as caught:
        runner.start(env.plan(), env.config(), snapshot=gone)
    assert ADVICE in str(caught.value)
    assert isinstance(caught.value.__cause__, ImportError)
