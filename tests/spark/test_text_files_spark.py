"""JSON and CSV files with bad lines give the same rows and the same error records on Spark as on the local
runner (bounded and streaming reads), and a bad line without an error output fails both the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from panes.datastream import ListSink, OutputTag, StreamEnvironment
from panes.errors import BadRecordError
from panes.local import LocalRunner
from panes.spark import SparkRunner

pytestmark = pytest.mark.spark

BAD: OutputTag[Any] = OutputTag("bad")
SCHEMA = "k STRING, ts BIGINT"


def write_files(folder: Path, format: str) -> Path:
    folder.mkdir()
    if format == "json":
        (folder / "a.json").write_text('{"k":"a","ts":1}\n{"k":"b","ts":"x"}\n{"k":"a","ts":2}\nnull\n')
        (folder / "b.json").write_text('not json\n{"k":"b","ts":5}\n')
    else:
        (folder / "a.csv").write_text("k,ts\na,1\nb,x\na,2\n")
        (folder / "b.csv").write_text("k,ts\nb,5,6\nb,5\n")
    return folder


def run(env: StreamEnvironment, folder: Path, format: str, streaming: bool) -> tuple[list[Any], list[Any]]:
    rows, errors = ListSink(), ListSink()
    source = env.from_files(str(folder), format=format, schema=SCHEMA, streaming=streaming)
    source = source.side_output_errors(BAD)
    source.sink_to(rows)
    source.get_side_output(BAD).sink_to(errors)
    env.execute()
    return sorted(rows.values, key=repr), sorted(errors.values, key=repr)


@pytest.mark.parametrize("format", ["json", "csv"])
def test_bad_lines_reach_the_error_output_with_file_line_and_text_as_on_the_local_runner(
    spark: Any, tmp_path: Path, format: str
) -> None:
    folder = write_files(tmp_path / "in", format)
    local = run(StreamEnvironment(LocalRunner()), folder, format, streaming=False)
    on_spark = run(StreamEnvironment(SparkRunner(spark, num_shards=2)), folder, format, streaming=False)
    assert on_spark == local
    rows, errors = local
    assert rows == sorted([{"k": "a", "ts": 1}, {"k": "a", "ts": 2}, {"k": "b", "ts": 5}], key=repr)
    lines = sorted((Path(e.value["file"]).name, e.value["line"], e.value["text"]) for e in errors)
    if format == "json":
        assert lines == [("a.json", 2, '{"k":"b","ts":"x"}'), ("a.json", 4, "null"), ("b.json", 1, "not json")]
    else:
        assert lines == [("a.csv", 3, "b,x"), ("b.csv", 2, "b,5,6")]
    assert all(Path(e.value["file"]).is_absolute() for e in errors)


def test_a_streaming_read_routes_the_same_bad_lines(spark: Any, tmp_path: Path) -> None:
    folder = write_files(tmp_path / "in", "json")
    expected = run(StreamEnvironment(LocalRunner()), folder, "json", streaming=False)
    runner = SparkRunner(spark, num_shards=2, trigger="available_now", checkpoint_location=str(tmp_path / "cp"))
    assert run(StreamEnvironment(runner), folder, "json", streaming=True) == expected


def test_without_an_error_output_both_runners_fail_naming_the_file_and_line(spark: Any, tmp_path: Path) -> None:
    folder = write_files(tmp_path / "in", "json")
    for runner in (LocalRunner(), SparkRunner(spark, num_shards=2)):
        env = StreamEnvironment(runner)
        env.from_files(str(folder), format="json", schema=SCHEMA).sink_to(ListSink())
        with pytest.raises(BadRecordError, match=r"line \d of .*\.json is not a row of the source's schema"):
            env.execute()
