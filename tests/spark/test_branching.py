"""Every way a plan can branch, on Spark and on the local runner: each sink gets the same records.

A stream read by a sink and by another step, several sinks on one stream, main and side outputs both
consumed, one stream feeding two keyed steps, unions of branches. The plans are built so micro-batches
cannot change the results (no element is late), and each sink's records are compared as multisets (Spark
does not promise the order across keys).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from panes.datastream import DataStream, ListSink, OutputTag, ProcessFunction, StreamEnvironment
from panes.local import LocalRunner
from panes.spark import SparkRunner
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows

pytestmark = pytest.mark.spark

BATCHES = [
    [{"k": "a", "n": 1, "ts": 100}, {"k": "b", "n": 2, "ts": 200}],
    [{"k": "a", "n": 3, "ts": 1_100}, {"k": "c", "n": 4, "ts": 1_200}],
    [{"k": "b", "n": 5, "ts": 2_300}],
]
ODD: OutputTag[Any] = OutputTag("odd")

Build = Callable[[DataStream], list[DataStream]]


def windowed_sum(stream: DataStream, field: str = "k") -> DataStream:
    stamped = stream.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    )
    return (
        stamped.key_by(field)
        .window(TumblingEventTimeWindows.of(1_000))
        .reduce(
            lambda a, b: {**a, "n": a["n"] + b["n"]},
            lambda key, window, rows: [(key, window.start, next(iter(rows))["n"])],
        )
    )


def sink_and_step(source: DataStream) -> list[DataStream]:
    """The issue's repro: the source goes to a sink and to a map that goes to another sink."""
    return [source, source.map(lambda v: {**v, "n": v["n"] * 10})]


def several_sinks_on_one_stream(source: DataStream) -> list[DataStream]:
    doubled = source.map(lambda v: v["n"] * 2)
    return [doubled, doubled, doubled.filter(lambda n: n > 4)]


class Split(ProcessFunction[Any, Any]):
    """Even numbers on the main output, odd ones on ``ODD``."""

    def process_element(self, value: Any, ctx: Any) -> Any:
        yield (ODD, value["n"]) if value["n"] % 2 else value["n"]


def main_and_side_outputs(source: DataStream) -> list[DataStream]:
    split = source.process(Split())
    return [split, split.get_side_output(ODD), split.get_side_output(ODD).map(lambda n: -n)]


def two_keyed_steps(source: DataStream) -> list[DataStream]:
    return [windowed_sum(source, "k"), source.key_by("k").reduce(lambda a, b: {**a, "n": a["n"] + b["n"]}), source]


def union_of_branches(source: DataStream) -> list[DataStream]:
    small = source.filter(lambda v: v["n"] < 3).map(lambda v: ("small", v["n"]))
    large = source.filter(lambda v: v["n"] >= 3).map(lambda v: ("large", v["n"]))
    both = small.union(large)
    return [both, both.key_by(lambda e: e[0]).reduce(lambda a, b: (a[0], a[1] + b[1])), small]


def keyed_then_sinks_before_and_after(source: DataStream) -> list[DataStream]:
    sums = windowed_sum(source)
    return [source, sums, sums.map(lambda t: t[2])]


PLANS = [
    sink_and_step,
    several_sinks_on_one_stream,
    main_and_side_outputs,
    two_keyed_steps,
    union_of_branches,
    keyed_then_sinks_before_and_after,
]


def run(env: StreamEnvironment, build: Build) -> list[Counter[Any]]:
    outputs = build(env.from_micro_batches(BATCHES))
    sinks = [ListSink() for _ in outputs]
    for stream, sink in zip(outputs, sinks, strict=True):
        stream.sink_to(sink)
    env.execute()
    return [Counter(map(repr, sink.values)) for sink in sinks]


@pytest.mark.parametrize("build", PLANS, ids=lambda b: b.__name__)
def test_every_sink_gets_its_records_on_spark_as_on_the_local_runner(spark: Any, build: Build) -> None:
    on_spark = run(StreamEnvironment(SparkRunner(spark, num_shards=2)), build)
    on_local = run(StreamEnvironment(LocalRunner(clock="stepping")), build)
    assert on_spark == on_local
    assert all(on_local), "every sink of these plans receives records"


def test_file_and_print_sinks_on_a_stream_that_feeds_another_step(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = {}
    for name, env in (
        ("spark", StreamEnvironment(SparkRunner(spark, num_shards=2))),
        ("local", StreamEnvironment(LocalRunner(clock="stepping"))),
    ):
        source = env.from_micro_batches(BATCHES)
        source.sink_to_files(str(tmp_path / name), schema="k STRING, n BIGINT, ts BIGINT")
        source.print("seen")
        source.map(lambda v: v["n"]).sink_to(ListSink())
        env.execute()
        printed = sorted(line for line in capsys.readouterr().out.splitlines() if line.startswith("seen>"))
        rows = sorted(tuple(r) for r in spark.read.parquet(str(tmp_path / name)).select("k", "n", "ts").collect())
        results[name] = (printed, rows)
    assert results["spark"] == results["local"]
    assert len(results["spark"][1]) == 5 and len(results["spark"][0]) == 5
