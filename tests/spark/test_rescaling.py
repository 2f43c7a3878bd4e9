"""A streaming query restarted from its checkpoint with another number of shards: each key's state moves to its
new shard (``panes.spark.rescaling``), and the job's output is what the uninterrupted job gives."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from panes.datastream import ListSink, OutputTag, StreamEnvironment
from panes.errors import IncompatibleCheckpointError
from panes.functions import Aggregates, Count, Sum
from panes.local import LocalRunner
from panes.watermarks import WatermarkStrategy
from panes.windowing import EventTimeSessionWindows, TumblingEventTimeWindows, WindowRow
from tests.local.test_rescaling import Contents, Silence

pytestmark = pytest.mark.spark

LATE: OutputTag[Any] = OutputTag("late")
BATCHES = [
    [{"k": f"k{(b * 31 + i * 7) % 23}", "ts": b * 2_000 + i * 97 - (i % 5) * 700, "v": i} for i in range(40)]
    for b in range(10)
]
"""Ten micro-batches over 23 keys, out of order: some elements late, some within the allowed lateness."""
CUT = 6


def build(env: StreamEnvironment, batches: list[list[dict[str, Any]]], end: bool) -> dict[str, ListSink]:
    """Three keyed steps (a columnar count+sum, sessions with a Python function and late data, keyed timers),
    each with a sink: the outputs by name."""
    stamped = env.from_micro_batches(batches, end_of_input=end, type_info="k STRING, ts BIGINT, v BIGINT")
    stamped = stamped.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(400).with_timestamp_assigner("ts")
    )
    sums = (
        stamped.key_by("k")
        .window(TumblingEventTimeWindows.of(1_000))
        .allowed_lateness(500)
        .aggregate(Aggregates(n=Count(), total=Sum("v")), WindowRow(key="k", start="start"))
        .uid("sums")
    )
    sessions = (
        stamped.map(lambda row: (row["k"], row["ts"], row["v"]))
        .key_by(lambda e: e[0])
        .window(EventTimeSessionWindows.with_gap(700))
        .allowed_lateness(500)
        .side_output_late_data(LATE)
        .process(Contents())
        .uid("sessions")
    )
    silence = stamped.map(lambda row: (row["k"], row["ts"], row["v"])).key_by(lambda e: e[0]).process(Silence())
    sinks = {name: ListSink() for name in ("sums", "sessions", "late", "silence")}
    sums.sink_to(sinks["sums"])
    sessions.sink_to(sinks["sessions"])
    sessions.get_side_output(LATE).sink_to(sinks["late"])
    silence.uid("silence").sink_to(sinks["silence"])
    return sinks


def run(spark: Any, checkpoint: Path, shards: int, batches: list[list[dict[str, Any]]], end: bool) -> dict[str, Any]:
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark, checkpoint_location=str(checkpoint), num_shards=shards))
    sinks = build(env, batches, end)
    result = env.execute("rescaling")
    return {"outputs": {name: sink.values for name, sink in sinks.items()}, "metrics": result.metrics}


def multisets(*runs: dict[str, Any]) -> dict[str, Counter[str]]:
    found: dict[str, Counter[str]] = {}
    for one in runs:
        for name, values in one["outputs"].items():
            found.setdefault(name, Counter()).update(repr(v) for v in values)
    return found


@pytest.fixture(scope="module")
def uninterrupted() -> dict[str, Counter[str]]:
    """The outputs of the job run without a stop, on the local runner (whose results a Spark run gives: the same
    micro-batches, the watermark moving at their ends; once for every restart it is compared with)."""
    env = StreamEnvironment(LocalRunner())
    sinks = build(env, BATCHES, True)
    env.execute("rescaling")
    return multisets({"outputs": {name: sink.values for name, sink in sinks.items()}})


@dataclass(frozen=True)
class Stopped:
    """The job's first :data:`CUT` micro-batches run on four shards, then stopped: its checkpoint and outputs."""

    checkpoint: Path
    first: dict[str, Any]

    def copy(self, to: Path) -> Path:
        """A copy of the checkpoint at ``to`` (each test restarts its own)."""
        shutil.copytree(self.checkpoint, to)
        return to


@pytest.fixture(scope="module")
def stopped(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Stopped:
    """The job stopped after its first micro-batches (once for every test that restarts it)."""
    checkpoint = tmp_path_factory.mktemp("stopped") / "checkpoint"
    return Stopped(checkpoint, run(spark, checkpoint, 4, BATCHES[:CUT], False))


@pytest.mark.parametrize("after", [8, 2])
def test_a_query_restarted_with_other_shard_counts_gives_the_uninterrupted_output(
    spark: Any, tmp_path: Path, uninterrupted: dict[str, Counter[str]], stopped: Stopped, after: int
) -> None:
    second = run(spark, stopped.copy(tmp_path / "checkpoint"), after, BATCHES, True)
    assert all(sum(found.values()) > 0 for found in uninterrupted.values()), uninterrupted
    assert multisets(stopped.first, second) == uninterrupted
    for name, step in second["metrics"].items():
        if name.startswith(("Window", "KeyedProcess")):
            # the new shards that hold keys of the old ones restored once, from their pieces
            assert 0 < step.restores <= after, (name, step)


def test_a_rescale_from_a_checkpoint_with_an_unfinished_batch_is_refused(
    spark: Any, tmp_path: Path, stopped: Stopped
) -> None:
    checkpoint = stopped.copy(tmp_path / "checkpoint")
    # the query planned one more micro-batch and stopped before committing it
    last = max(int(name) for name in os.listdir(checkpoint / "offsets") if name.isdigit())
    (checkpoint / "offsets" / str(last + 1)).write_text((checkpoint / "offsets" / str(last)).read_text())
    with pytest.raises(IncompatibleCheckpointError, match=f"micro-batch {last + 1} was planned but not committed"):
        run(spark, checkpoint, 8, BATCHES, True)
