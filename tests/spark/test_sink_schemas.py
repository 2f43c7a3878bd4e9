"""One schema per sink for the life of a job, on both runners: declared, the stream's type, or inferred once.

A value that does not fit fails the job with the reason, or goes to the sink's error output; the files never
change schema between micro-batches, and both runners write the same layout (``path/batch=<n>/``) with the
same columns.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from panes.datastream import ListSink, OutputTag, StreamEnvironment
from panes.errors import ErrorRecord
from panes.local import LocalRunner
from panes.spark import SparkRunner
from panes.types import Types

pytestmark = pytest.mark.spark

DRIFTING = [[{"a": 1}], [{"a": 1.5}]]
REFUSED: OutputTag[Any] = OutputTag("refused")


def environments(spark: Any) -> list[tuple[str, StreamEnvironment]]:
    return [
        ("spark", StreamEnvironment(SparkRunner(spark, num_shards=2))),
        ("local", StreamEnvironment(LocalRunner(clock="stepping"))),
    ]


def read_back(spark: Any, path: Path) -> tuple[list[tuple[str, str]], list[tuple[Any, ...]]]:
    """The columns (name, Spark type) and sorted rows Spark reads from ``path``, without the batch column."""
    frame = spark.read.parquet(str(path))
    columns = [(f.name, f.dataType.simpleString()) for f in frame.schema.fields if f.name != "batch"]
    rows = sorted(tuple(r) for r in frame.select(*[name for name, _ in columns]).collect())
    return columns, rows


def test_a_drifting_value_fails_the_job_with_the_reason_on_both_runners(spark: Any, tmp_path: Path) -> None:
    for name, env in environments(spark):
        env.from_micro_batches(DRIFTING).sink_to_files(str(tmp_path / name))
        with pytest.raises(Exception, match=r"field 'a': 1\.5 \(float\) does not fit BIGINT") as failure:
            env.execute()
        assert "the sink's schema a BIGINT" in str(failure.value), name


def test_a_drifting_value_goes_to_the_sinks_error_output_and_the_files_read_back(spark: Any, tmp_path: Path) -> None:
    results = {}
    for name, env in environments(spark):
        refused = ListSink()
        sink = env.from_micro_batches(DRIFTING).sink_to_files(str(tmp_path / name), errors=REFUSED)
        sink.get_side_output(REFUSED).sink_to(refused)
        env.execute()
        (error,) = refused.values
        assert isinstance(error, ErrorRecord) and error.value == {"a": 1.5}
        assert "does not fit BIGINT" in error.reason
        where = str(tmp_path / name)
        results[name] = read_back(spark, tmp_path / name), (error.reason.replace(where, "<path>"), error.operator)
    assert results["spark"][0] == results["local"][0]
    # the same reason and sink (the operator string names each run's own path)
    assert results["spark"][1][0] == results["local"][1][0]
    assert results["spark"][0] == ([("a", "bigint")], [(1,)])
    # one directory per micro-batch on Spark; the local runner writes everything as batch 0
    assert sorted(p.name for p in (tmp_path / "local").iterdir()) == ["batch=0"]
    assert "batch=0" in {p.name for p in (tmp_path / "spark").iterdir()}


def test_a_declared_schema_is_kept_by_both_runners(spark: Any, tmp_path: Path) -> None:
    results = {}
    for name, env in environments(spark):
        env.from_micro_batches(DRIFTING).sink_to_files(str(tmp_path / name), schema="a DOUBLE, b STRING")
        env.execute()
        results[name] = read_back(spark, tmp_path / name)
        for file in (tmp_path / name).rglob("*.parquet"):
            assert pq.read_schema(file).names == ["a", "b"], (name, file)
    assert results["spark"] == results["local"] == ([("a", "double"), ("b", "string")], [(1.0, None), (1.5, None)])


def test_the_streams_type_is_the_sinks_schema(spark: Any, tmp_path: Path) -> None:
    results = {}
    for name, env in environments(spark):
        source = env.from_micro_batches([[("x", 1)], [("y", 2)]])
        typed = source.map(lambda t: (t[0], t[1] / 2), output_type=Types.TUPLE([Types.STRING(), Types.FLOAT()]))
        typed.sink_to_files(str(tmp_path / name))
        env.execute()
        results[name] = read_back(spark, tmp_path / name)
    assert results["spark"] == results["local"] == ([("_1", "string"), ("_2", "float")], [("x", 0.5), ("y", 1.0)])


def test_an_inferred_schema_is_kept_with_the_checkpoint_across_restarts(spark: Any, tmp_path: Path) -> None:
    checkpoint, output = str(tmp_path / "checkpoint"), tmp_path / "out"
    first = StreamEnvironment(SparkRunner(spark, checkpoint_location=checkpoint, num_shards=2))
    batches: list[list[Any]] = [[{"a": 1, "b": None}, {"a": 2, "b": "x"}], [{"a": 2.5, "b": "y"}]]
    first.from_micro_batches(batches[:1], end_of_input=False).sink_to_files(str(output))
    first.execute()
    # a restarted query with more input: the stored schema decides, so 2.5 does not fit
    refused = ListSink()
    second = StreamEnvironment(SparkRunner(spark, checkpoint_location=checkpoint, num_shards=2))
    sink = second.from_micro_batches(batches)
    sink.sink_to_files(str(output), errors=REFUSED).get_side_output(REFUSED).sink_to(refused)
    second.execute()
    assert [e.value for e in refused.values] == [{"a": 2.5, "b": "y"}]
    assert read_back(spark, output) == ([("a", "bigint"), ("b", "string")], [(1, None), (2, "x")])


def test_declared_output_types_are_checked_on_both_runners(spark: Any) -> None:
    errors: OutputTag[Any] = OutputTag("errors")
    results = {}
    for name, env in environments(spark):
        good, bad = ListSink(), ListSink()
        parsed = (
            env.from_micro_batches([["1", "2.5"], ["x", "4"]])
            .map(lambda s: {"n": float(s) if "." in s else (int(s) if s.isdigit() else s)}, output_type="n DOUBLE")
            .side_output_errors(errors)
        )
        parsed.sink_to(good)
        parsed.get_side_output(errors).sink_to(bad)
        env.execute()
        # reasons name the operator instance: "Map (1/1)" locally, "Map (shard 0/1)" on Spark
        results[name] = (good.values, [(e.value, re.sub(r" \(.*?\)", "", e.reason, count=1)) for e in bad.values])
    assert results["spark"] == results["local"]
    values, refused = results["local"]
    # ints widen to DOUBLE (as values come back from the typed column); a string does not fit
    assert values == [{"n": 1.0}, {"n": 2.5}, {"n": 4.0}] and all(type(v["n"]) is float for v in values)
    assert [value for value, _ in refused] == [{"n": "x"}]
    assert refused[0][1] == "a result of Map does not fit its type n DOUBLE: field 'n': 'x' (str) does not fit DOUBLE"
