"""A query restarted on its checkpoint after the job changed: a changed window is refused before anything
runs, naming the window; a changed map function runs on from the checkpoint (see
``panes.datastream.fingerprint`` and docs/spark-runner.md, "Checkpoints and restarts")."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from panes.datastream import ListSink, StreamEnvironment
from panes.datastream.fingerprint import operator_uids
from panes.errors import IncompatibleCheckpointError
from panes.local import LocalRunner
from panes.spark import SparkRunner
from panes.spark.restarts import restored_fingerprint
from panes.watermarks import WatermarkStrategy
from panes.windowing import ProcessWindowFunction, TumblingEventTimeWindows

pytestmark = pytest.mark.spark

ROW = "page STRING, ts BIGINT, n BIGINT"
BATCHES = [[{"page": f"/p{(b + i) % 2}", "ts": b * 1000 + i * 100, "n": i + 1} for i in range(3)] for b in range(5)]
FIRST = 3
"""The first run reads this many micro-batches; the restarted job reads the others (offsets count batches)."""


def unchanged(row: dict[str, Any]) -> dict[str, Any]:
    return row


def heavier(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "n": row["n"] * 10}


def switching(row: dict[str, Any]) -> dict[str, Any]:
    """What one run whose map changed at the restart gives: the first run's rows unchanged, the others heavier."""
    return unchanged(row) if row["ts"] < FIRST * 1000 else heavier(row)


def build(env: StreamEnvironment, mapper: Any, size: int, batches: list[Any], end: bool) -> ListSink:
    views = env.from_micro_batches(batches, end_of_input=end, type_info=ROW).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    )
    sums = (
        views.map(mapper, output_type=ROW)
        .key_by("page")
        .window(TumblingEventTimeWindows.of(size))
        .reduce(lambda a, b: {"page": a["page"], "ts": max(a["ts"], b["ts"]), "n": a["n"] + b["n"]})
    )
    sink = ListSink()
    sums.sink_to(sink)
    return sink


def rows(sink: ListSink) -> list[tuple[Any, ...]]:
    return sorted((v["page"], v["ts"], v["n"]) for v in sink.values)


def test_a_restart_refuses_a_changed_window_and_runs_a_changed_map_on(spark: Any, tmp_path: Path) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    fingerprints = tmp_path / "checkpoint" / "panes" / "fingerprint"

    env = StreamEnvironment(SparkRunner(spark, checkpoint_location=checkpoint, num_shards=2))
    first = build(env, unchanged, 1000, BATCHES[:FIRST], end=False)
    env.execute("first")
    assert first.values, "the first window fired in the first run (the watermark passed it in batch 1)"
    assert len(os.listdir(fingerprints)) == 1

    # a 1 s window become 2 s: refused before the query starts, naming the window (its default uid)
    env = StreamEnvironment(SparkRunner(spark, checkpoint_location=checkpoint))
    build(env, unchanged, 2000, BATCHES, end=True)
    plan = env.plan()
    window = next(operator_uids(plan)[t.id] for t in plan if getattr(t, "op_kind", None) == "window")
    with pytest.raises(IncompatibleCheckpointError) as caught:
        env.execute("wider windows")
    assert caught.value.operator == window
    message = str(caught.value)
    assert f"operator {window!r}" in message and "new checkpoint directory" in message
    assert "TumblingEventTimeWindows(size=1000, offset=0) to TumblingEventTimeWindows(size=2000, offset=0)" in message
    assert len(os.listdir(fingerprints)) == 1, "a refused job stores no fingerprint"

    # another map function: runs on from the checkpoint (num_shards not given: the checkpoint's 2)
    env = StreamEnvironment(SparkRunner(spark, checkpoint_location=checkpoint))
    rest = build(env, heavier, 1000, BATCHES, end=True)
    env.execute("heavier")
    assert len(os.listdir(fingerprints)) == 2

    reference_env = StreamEnvironment(LocalRunner())
    reference = build(reference_env, switching, 1000, BATCHES, end=True)
    reference_env.execute("reference")
    assert sorted(rows(first) + rows(rest)) == rows(reference)
    assert any(n >= 10 for _, _, n in rows(rest))

    # committed batches without a fingerprint: a checkpoint of a panes that kept none, another state format
    shutil.rmtree(fingerprints)
    env = StreamEnvironment(SparkRunner(spark, checkpoint_location=checkpoint))
    build(env, heavier, 1000, BATCHES, end=True)
    with pytest.raises(IncompatibleCheckpointError, match=r"no panes fingerprint.*state format 1"):
        env.execute("older")


class Pages(ProcessWindowFunction[Any, Any, Any, Any]):
    """Each page's window as one row: its views' summed ``n`` (a ``ProcessWindowFunction`` over a typed stream,
    which this panes runs on columns)."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield {"page": key, "ts": context.window().max_timestamp(), "n": sum(e["n"] for e in elements)}


def paged(env: StreamEnvironment, batches: list[Any], end: bool, function: str = "process") -> ListSink:
    """Each page's window summed by a ``ProcessWindowFunction`` (``function`` ``"process"``) or by a ``reduce``
    (``"reduce"``), both of which this panes runs on columns over a typed stream."""
    views = env.from_micro_batches(batches, end_of_input=end, type_info=ROW).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    )
    sink = ListSink()
    windowed = views.key_by("page").window(TumblingEventTimeWindows.of(2000))
    if function == "reduce":
        summed = windowed.reduce(lambda a, b: {"page": a["page"], "ts": max(a["ts"], b["ts"]), "n": a["n"] + b["n"]})
    else:
        summed = windowed.process(Pages(), output_type=ROW)
    summed.sink_to(sink)
    return sink


@pytest.mark.parametrize("function", ["process", "reduce"])
def test_a_window_whose_checkpoint_holds_element_by_element_state_goes_on_element_by_element(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, function: str
) -> None:
    """A checkpoint written while a window ran element by element (an older panes, before such windows ran on
    columns) is restored with the window kept element by element, not refused: the state's layout decides."""
    import panes.spark.runner as runner

    checkpoint = str(tmp_path / "checkpoint")
    env = StreamEnvironment(SparkRunner(spark, checkpoint_location=checkpoint, num_shards=2))
    first = paged(env, BATCHES[:FIRST], end=False, function=function)
    plan = env.plan()
    window = next(operator_uids(plan)[t.id] for t in plan if getattr(t, "op_kind", None) == "window")
    with monkeypatch.context() as older:  # the older panes: this window element by element
        older.setattr(runner, "element_by_element_steps", lambda stored: frozenset({window}))
        env.execute("element by element")
    stored = restored_fingerprint(spark, checkpoint)
    assert stored is not None
    assert {o.uid: o.properties["state layout"] for o in stored.operators}[window] == "aligned"

    # without keeping the checkpoint's layout, this panes would put the window on columns: refused
    env = StreamEnvironment(SparkRunner(spark, checkpoint_location=checkpoint))
    paged(env, BATCHES, end=True, function=function)
    with monkeypatch.context() as forgetful, pytest.raises(IncompatibleCheckpointError, match="state layout"):
        forgetful.setattr(runner, "element_by_element_steps", lambda stored: frozenset())
        env.execute("columns")

    env = StreamEnvironment(SparkRunner(spark, checkpoint_location=checkpoint))
    rest = paged(env, BATCHES, end=True, function=function)
    env.execute("restored")

    local = StreamEnvironment(LocalRunner())
    whole = paged(local, BATCHES, end=True, function=function)
    local.execute("uninterrupted")
    assert rows(first) and rows(rest)
    assert sorted(rows(first) + rows(rest)) == rows(whole)
