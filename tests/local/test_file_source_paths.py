"""Where a file source reads on the local runner: a path that does not exist fails the job when it starts, as
Spark's reader fails when the query is built (``PATH_NOT_FOUND``); a file path reads that file."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from panes.datastream import ListSink, StreamEnvironment
from panes.local import LocalRunner


def test_a_missing_input_path_fails_at_execute_naming_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    env = StreamEnvironment(LocalRunner())
    sink = ListSink()
    env.from_files(str(missing)).map(lambda row: row).sink_to(sink)  # building the plan does not fail
    with pytest.raises(FileNotFoundError, match=f"{missing}.*does not exist"):
        env.execute()
    assert sink.values == []


def test_a_missing_path_fails_before_any_other_source_is_read(tmp_path: Path) -> None:
    env = StreamEnvironment(LocalRunner())
    seen: list[int] = []
    env.from_collection([1, 2, 3]).add_sink(seen.append)
    env.from_files(str(tmp_path / "gone"), format="json", schema="k STRING").add_sink(seen.append)
    with pytest.raises(FileNotFoundError, match="gone"):
        env.execute()
    assert seen == []


def test_a_path_to_one_file_reads_that_file_and_an_empty_directory_reads_nothing(tmp_path: Path) -> None:
    file = tmp_path / "part-0.parquet"
    pq.write_table(pa.table({"k": ["a", "b"], "v": [1, 2]}), file)
    (tmp_path / "empty").mkdir()
    env = StreamEnvironment(LocalRunner())
    one, none = ListSink(), ListSink()
    env.from_files(str(file)).sink_to(one)
    env.from_files(str(tmp_path / "empty")).sink_to(none)
    env.execute()
    assert one.values == [{"k": "a", "v": 1}, {"k": "b", "v": 2}]
    assert none.values == []
