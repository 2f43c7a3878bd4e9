"""Bounded versus streaming, and the bounded path's semantics (restarts after a kill: ``test_crash_points``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from panes.datastream import ListSink, StreamEnvironment
from panes.spark import SparkRunner
from panes.testing.scenario import PANE_FIELDS, PaneFunction, Scenario, collect_result, comparable
from panes.watermarks import WatermarkStrategy
from panes.windowing import EventTimeSessionWindows
from tests.conftest import CONFORMANCE
from tests.scenario_api import input_elements, scenario_pipeline

pytestmark = pytest.mark.spark


def test_bounded_and_streaming_runs_over_the_same_files_agree(spark: Any, tmp_path: Path) -> None:
    import json

    folder = tmp_path / "events"
    folder.mkdir()
    for index in range(4):
        with open(folder / f"part-{index}.json", "w") as handle:
            for i in range(25):
                ts = index * 2500 + i * 100
                handle.write(json.dumps({"user": f"u{(index + i) % 3}", "ts": ts}) + "\n")
        os.utime(folder / f"part-{index}.json", (1_700_000_000 + index, 1_700_000_000 + index))

    def panes(streaming: bool) -> list[dict[str, Any]]:
        # streaming files do not end: the query stops when the files there are read, keeping its open windows in
        # its checkpoint (a temporary checkpoint is refused: they would be lost)
        runner = (
            SparkRunner(spark, num_shards=2, trigger="available_now", checkpoint_location=str(tmp_path / "cp"))
            if streaming
            else SparkRunner(spark, num_shards=2)
        )
        env = StreamEnvironment(runner)
        stream = env.from_files(
            str(folder), "json", "user STRING, ts BIGINT", streaming=streaming, max_files_per_trigger=1
        )
        sink = ListSink()
        (
            stream.assign_timestamps_and_watermarks(
                WatermarkStrategy.for_bounded_out_of_orderness(500).with_timestamp_assigner("ts")
            )
            .map(lambda row: (row["user"], 1, row["ts"], 0))
            .key_by(lambda e: e[0])
            .window(EventTimeSessionWindows.with_gap(300))
            .process(PaneFunction())
            .sink_to(sink)
        )
        env.execute()
        return sink.values

    bounded = panes(streaming=False)
    streaming = panes(streaming=True)
    key = lambda p: (p["key"], p["window_start"], p["window_end"], p["count"])  # noqa: E731
    # a live job has not yet fired the windows only the end of input closes; everything else is identical
    assert sorted(map(key, streaming)) == sorted(key(p) for p in bounded if not p["end_of_input"])
    assert any(p["end_of_input"] for p in bounded)
    assert sum(p["count"] for p in bounded) == 100


@pytest.mark.parametrize("scenario", Scenario.load_all(CONFORMANCE)[:3], ids=lambda s: s.name)
def test_a_bounded_spark_run_is_the_local_runner_with_its_input_as_one_step(spark: Any, scenario: Scenario) -> None:
    # a collection is one step of input: no watermark but the final one, on both runners (and in the micro-batch
    # model, no batch at the last rated watermark before the end)
    def build(env: StreamEnvironment) -> ListSink:
        sink = ListSink()
        scenario_pipeline(env, env.from_collection(input_elements(scenario)), scenario).sink_to(sink)
        return sink

    env = StreamEnvironment(SparkRunner(spark, num_shards=3))
    sink = build(env)
    env.execute()
    reference_env = StreamEnvironment("local")
    reference = build(reference_env)
    reference_env.execute()
    fields = [f for f in PANE_FIELDS if f != "emit_seq"]
    assert comparable(collect_result(sink.values), fields) == comparable(collect_result(reference.values), fields)
