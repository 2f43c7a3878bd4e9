"""PyFlink's file connectors on Spark: the same lines as on the local runner, in parts named as configured, from
a bounded run, a streaming run whose tasks write the files, and one written through ``foreachBatch``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from panes.connectors.file_system import (
    BucketAssigner,
    Encoder,
    FileSink,
    FileSource,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)
from panes.datastream import ListSink, StreamEnvironment
from panes.local import LocalRunner
from panes.spark import SparkRunner
from panes.types import Types

pytestmark = pytest.mark.spark


def sink(path: Path) -> Any:
    return (
        FileSink.for_row_format(str(path), Encoder.simple_string_encoder())
        .with_output_file_config(OutputFileConfig.builder().with_part_prefix("prefix").with_part_suffix(".ext").build())
        .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=20))
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )


def written(path: Path) -> tuple[list[str], set[str]]:
    """The lines of every part under ``path`` (sorted) and the parts' names, without the part numbers."""
    files = [f for f in path.rglob("*") if f.is_file() and not f.name.startswith((".", "_"))]
    lines = sorted(line for f in files for line in f.read_text().splitlines())
    return lines, {f.relative_to(path).as_posix().split("/")[0] + "/" + f.name.split("-")[0] for f in files}


def test_text_lines_in_and_out_as_on_the_local_runner(spark: Any, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("to be or\nnot to be\n")
    (folder / "b.txt").write_text("that is the question\r\n")
    results = []
    for name, runner in (("local", LocalRunner()), ("spark", SparkRunner(spark, num_shards=2))):
        env = StreamEnvironment(runner)
        source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(folder)).build()
        words = env.from_source(source, source_name="lines").flat_map(lambda line: line.split())
        pairs = words.map(lambda w: (w, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        pairs.key_by(lambda p: p[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).sink_to(sink(tmp_path / name))
        env.execute()
        results.append(written(tmp_path / name))
    assert results[0] == results[1]
    assert "(be,2)" in results[0][0] and results[0][1] == {"batch=0/prefix"}


@pytest.mark.parametrize("with_driver_sink", [False, True], ids=["tasks-write", "foreach-batch"])
def test_a_streaming_run_writes_each_micro_batch_to_its_folder(
    spark: Any, tmp_path: Path, with_driver_sink: bool
) -> None:
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    stream = env.from_micro_batches([[("a", 1), ("b", 2)], [("c", 3)]], type_info="f0 STRING, f1 INT")
    typed = stream.map(lambda row: (row["f0"], row["f1"]), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
    typed.sink_to(sink(tmp_path / "out"))
    if with_driver_sink:
        typed.sink_to(ListSink())
    env.execute()
    by_batch = {
        folder.name: sorted(line for f in folder.iterdir() for line in f.read_text().splitlines())
        for folder in (tmp_path / "out").iterdir()
        if folder.name.startswith("batch=")
    }
    assert by_batch == {"batch=0": ["(a,1)", "(b,2)"], "batch=1": ["(c,3)"]}
    assert not (tmp_path / "out" / "_panes_staging").exists()
    for folder in (tmp_path / "out").iterdir():
        assert all(f.name.startswith("prefix-") and f.name.endswith(".ext") for f in folder.iterdir())
