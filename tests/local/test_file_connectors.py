"""PyFlink's file connectors on panes: text lines in, values as PyFlink's ``toString`` lines out, with part
names, buckets and part sizes as configured (``panes.connectors.file_system``)."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

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
from panes.datastream import ListSink, RuntimeExecutionMode, StreamExecutionEnvironment
from panes.datastream.sources import FileSource as PanesFileSource
from panes.types import Types
from panes.watermarks import WatermarkStrategy


def word_count(env: StreamExecutionEnvironment, source: PanesFileSource, sink: object) -> None:
    lines = env.from_source(source, WatermarkStrategy.for_monotonous_timestamps(), "file_source")
    counts = (
        lines.flat_map(lambda line: line.split())
        .map(lambda word: (word, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        .key_by(lambda pair: pair[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )
    counts.sink_to(sink)  # type: ignore[arg-type]


def text_files(folder: Path) -> Path:
    folder.mkdir()
    (folder / "a.txt").write_text("to be or\r\nnot to be\n")
    (folder / "b.txt").write_bytes("that is the question\rcaf\xe9".encode("latin-1"))
    return folder


def test_text_lines_in_and_java_lines_out_with_the_configured_part_names(tmp_path: Path) -> None:
    folder = text_files(tmp_path / "in")
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    source = FileSource.for_record_stream_format(StreamFormat.text_line_format("latin-1"), str(folder)).build()
    sink = (
        FileSink.for_row_format(str(tmp_path / "out"), Encoder.simple_string_encoder())
        .with_output_file_config(OutputFileConfig.builder().with_part_prefix("prefix").with_part_suffix(".ext").build())
        .with_rolling_policy(RollingPolicy.default_rolling_policy())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    word_count(env, source, sink)
    env.execute()
    (written,) = (tmp_path / "out").rglob("*.ext")
    assert written.relative_to(tmp_path / "out").as_posix() == "batch=0/prefix-00000-0.ext"
    lines = written.read_text().splitlines()
    expected = {"to": 2, "be": 2, "or": 1, "not": 1, "that": 1, "is": 1, "the": 1, "question": 1, "café": 1}
    assert sorted(lines) == sorted(f"({word},{n})" for word, n in expected.items())


def test_lines_of_several_paths_and_a_continuous_source(tmp_path: Path) -> None:
    folder = text_files(tmp_path / "in")
    builder = FileSource.for_record_stream_format(
        StreamFormat.text_line_format("latin-1"), str(folder / "b.txt"), str(folder / "a.txt")
    )
    env = StreamExecutionEnvironment.get_execution_environment()
    out = ListSink()
    env.from_source(builder.build(), source_name="two files").sink_to(out)
    env.execute()
    assert out.values == ["that is the question", "café", "to be or", "not to be"]
    streaming = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(folder))
    assert streaming.monitor_continuously(1_000).build().is_bounded() is False
    with pytest.raises(ValueError, match="reads one directory"):
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), "a", "b").monitor_continuously(
            1_000
        ).build()


def test_parts_roll_at_the_part_size_and_buckets_follow_the_wall_clock(tmp_path: Path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    before = datetime.now().strftime("%Y-%m-%d--%H")
    sink = (
        FileSink.for_row_format(str(tmp_path / "out"), Encoder.simple_string_encoder())
        .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=10))
        .build()
    )
    env.from_collection([f"line {i}" for i in range(5)]).sink_to(sink)
    env.execute()
    after = datetime.now().strftime("%Y-%m-%d--%H")
    (bucket,) = (tmp_path / "out").iterdir()
    assert bucket.name in (before, after)
    parts = sorted((bucket / "batch=0").iterdir())
    assert [p.name for p in parts] == [f"part-00000-{n}" for n in range(5)]  # 7 bytes a line: one per part
    assert [p.read_text() for p in parts] == [f"line {i}\n" for i in range(5)]


def test_a_bucket_pattern_is_read_as_javas_date_time_pattern() -> None:
    moment = int(time.mktime((2026, 3, 4, 5, 6, 7, 0, 0, -1)) * 1000)
    assert BucketAssigner.date_time_bucket_assigner()(moment) == "2026-03-04--05"
    assert BucketAssigner.date_time_bucket_assigner("yyyy/MM/dd 'at' HH:mm:ss")(moment) == "2026/03/04 at 05:06:07"
    assert BucketAssigner.date_time_bucket_assigner("yyyyMMdd", "UTC")(0) == "19700101"
    with pytest.raises(ValueError, match="uses 'EEE'"):
        BucketAssigner.date_time_bucket_assigner("EEE")


def test_values_without_a_type_are_written_as_python_shows_them(tmp_path: Path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    sink = (
        FileSink.for_row_format(str(tmp_path / "out"), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    stream = env.from_collection([("a", 1), ("b", None)])
    stream.sink_to(sink)
    stream.map(lambda pair: pair, output_type=Types.TUPLE([Types.STRING(), Types.INT()])).sink_to(
        FileSink.for_row_format(str(tmp_path / "typed"), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    env.execute()
    assert (tmp_path / "out" / "batch=0" / "part-00000-0").read_text() == "('a', 1)\n('b', None)\n"
    assert (tmp_path / "typed" / "batch=0" / "part-00000-0").read_text() == "(a,1)\n(b,null)\n"
