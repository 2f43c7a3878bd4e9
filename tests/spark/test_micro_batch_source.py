"""The ``from_micro_batches`` source's Spark data source (``panes.spark.sources``), without a SparkSession: what
Spark pickles into its read tasks carries one list, not all of them. Its files (``panes.spark.micro_batch_files``):
one per list, in order, rewritten on a restart only where the list changed; the control rows a micro-batch read
from its progress; the reading's fallbacks and what ``panes explain`` says."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from panes.spark.crash_hook import VARIABLE
from panes.spark.layout import CLOCK, ChannelCodes, Layout, Record, pack
from panes.spark.micro_batch_files import (
    FOLDER,
    MicroBatchFiles,
    control_rows_read,
    query_reading,
    source_reading,
)
from panes.spark.sources import PanesMicroBatches, _BatchPartition, _encode_batches, _MicroBatchReader
from panes.types import RecordType

TYPED = RecordType.of("user STRING, n BIGINT")
assert TYPED is not None
CODES = ChannelCodes({(1, None): TYPED})
LAYOUT = Layout(CODES, [(1, None)])


def source_of(lists: int, rows: int) -> PanesMicroBatches:
    payloads = []
    for index in range(lists):
        records = [Record((1, None), {"user": f"u{index}-{row}", "n": row}, row, row + 1, 1) for row in range(rows)]
        payloads.append(pack([LAYOUT.encode(records)], LAYOUT.schema))
    return PanesMicroBatches({"batches": _encode_batches(payloads), "schema": LAYOUT.ddl()})


def read_function_size(source: PanesMicroBatches) -> tuple[int, _MicroBatchReader]:
    """The pickled size of what Spark's read function holds (the data source and its reader), and the reader."""
    reader = source.streamReader(None)
    assert isinstance(reader, _MicroBatchReader)
    return len(pickle.dumps((source, reader))), reader


def test_each_partition_carries_its_own_list_and_reads_it_back() -> None:
    source = source_of(lists=3, rows=4)
    reader = source.streamReader(None)
    assert isinstance(reader, _MicroBatchReader)
    start = reader.initialOffset()
    end = reader.latestOffset(start, None)
    (partition,) = reader.partitions(start, end)
    shipped = pickle.loads(pickle.dumps(reader))
    rows = pa.Table.from_batches(list(shipped.read(pickle.loads(pickle.dumps(partition)))))
    assert rows.column("c0").to_pylist() == [{"user": f"u0-{row}", "n": row} for row in range(4)]
    later = reader.partitions(end, reader.latestOffset(end, None))
    assert [(type(p), p.index) for p in later if isinstance(p, _BatchPartition)] == [(_BatchPartition, 1)]


def test_what_a_read_task_receives_does_not_grow_with_the_other_lists() -> None:
    few, _ = read_function_size(source_of(lists=2, rows=200))
    many, reader = read_function_size(source_of(lists=200, rows=200))
    assert reader.count == 200  # the planning reader still holds every list
    assert many < few + 1_000, (few, many)


# -- the same lists as files (``micro_batch_files``), without a SparkSession ----------------------------------


def files_of(folder: Path, lists: list[int]) -> MicroBatchFiles:
    batches = []
    for index, rows in enumerate(lists):
        records = [Record((1, None), {"user": f"u{index}-{row}", "n": row}, row, row + 1, 1) for row in range(rows)]
        batches.append([LAYOUT.encode(records), LAYOUT.row(ch=CLOCK, ts=index, seq=0, ph=1)])
    return MicroBatchFiles(str(folder), batches, LAYOUT.schema, tuple(range(len(lists) + 1)))


def test_each_list_is_a_file_in_its_order_and_a_restart_rewrites_only_what_changed(tmp_path: Path) -> None:
    folder = tmp_path / "files"
    files_of(folder, [2, 0, 3]).write()
    names = sorted(os.listdir(folder))
    assert names == [f"batch-{i:09d}.parquet" for i in range(3)]  # no temporary file left
    times = [os.stat(folder / name).st_mtime_ns for name in names]
    assert times == sorted(set(times))  # strictly increasing: Spark's file source reads them in this order
    tables = [pq.read_table(folder / name) for name in names]
    assert [t.num_rows for t in tables] == [3, 1, 4]  # the records and the clock row; an empty list is a file
    assert tables[2].column("c0").to_pylist()[:3] == [{"user": f"u2-{row}", "n": row} for row in range(3)]
    before = {name: os.stat(folder / name) for name in names}
    files_of(folder, [2, 0, 4, 1]).write()  # list 2 changed, list 3 new
    after = {name: os.stat(folder / name) for name in sorted(os.listdir(folder))}
    unchanged = [
        n for n in names if (after[n].st_ino, after[n].st_mtime_ns) == (before[n].st_ino, before[n].st_mtime_ns)
    ]
    assert unchanged == names[:2]
    assert after[names[2]].st_mtime_ns == before[names[2]].st_mtime_ns  # rewritten in its place
    assert pq.read_table(folder / names[2]).num_rows == 5


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            {
                "description": "FileStreamSource[file:/c/panes/micro-batches/source-a]",
                "startOffset": None,
                "endOffset": {"logOffset": 0},
            },
            1,
        ),
        (
            {
                "description": "FileStreamSource[file:/c/panes/micro-batches/source-a]",
                "startOffset": '{"logOffset":0}',
                "endOffset": '{"logOffset":2}',
            },
            5,
        ),
        (
            {
                "description": "FileStreamSource[file:/c/panes/micro-batches/source-a]",
                "startOffset": '{"logOffset":2}',
                "endOffset": '{"logOffset":2}',
            },
            0,
        ),  # a batch without new data
        (
            {
                "description": "FileStreamSource[file:/c/panes/micro-batches/source-ab]",
                "startOffset": None,
                "endOffset": {"logOffset": 0},
            },
            0,
        ),  # another folder
        ({"description": "panes_micro_batches", "startOffset": None, "endOffset": '{"b": 1, "c": 1}'}, 0),
    ],
)
def test_the_control_rows_a_micro_batch_read_from_files(source: dict[str, Any], expected: int) -> None:
    controls = {"/c/panes/micro-batches/source-a": (0, 1, 3, 6)}
    assert control_rows_read(source, controls) == expected


def test_the_reading_falls_back_to_the_data_source_with_its_reason(tmp_path: Path, monkeypatch: Any) -> None:
    classic = object()  # not a Spark Connect session
    monkeypatch.delenv(VARIABLE, raising=False)
    assert "not on this machine" in str(query_reading(classic, "hdfs://namenode/checkpoint", "available_now").reason)
    assert query_reading(classic, str(tmp_path), "once").folder is None
    query = query_reading(classic, f"file:{tmp_path}", "available_now")
    assert query.folder == str(tmp_path / FOLDER)
    assert source_reading(query, "source#0").folder == str(tmp_path / FOLDER / "source-source%230")
    monkeypatch.setenv(VARIABLE, "state:1:/m;between:2:/n")
    assert "between" in source_reading(query, "source#0").reason
    monkeypatch.setenv(VARIABLE, "state:1:/m")
    assert source_reading(query, "source#0").folder is not None  # the state point is reached on files too
    (tmp_path / "offsets").mkdir()
    (tmp_path / "offsets" / "0").write_text("v1")
    restarted = source_reading(query, "source#0")
    assert restarted.folder is None and "Python data source" in restarted.reason
    (tmp_path / FOLDER / "source-source%230").mkdir(parents=True)  # as a refused restart leaves it
    assert source_reading(query, "source#0").folder is None
    (tmp_path / FOLDER / "source-source%230" / "batch-000000000.parquet").write_bytes(b"")
    assert source_reading(query, "source#0").folder is not None  # a checkpoint of files stays on files


def test_panes_explain_says_how_micro_batches_are_read(monkeypatch: Any) -> None:
    from panes.datastream import StreamEnvironment
    from panes.spark.stages import describe_stages

    monkeypatch.delenv(VARIABLE, raising=False)
    env = StreamEnvironment("local")
    env.from_micro_batches([[1], [2]]).print()
    [read] = [line for line in describe_stages(env.plan()) if line.startswith("read ")]
    assert "Parquet file in the query's checkpoint" in read and "Spark Connect" in read
    monkeypatch.setenv(VARIABLE, "batch:1:/m")
    [read] = [line for line in describe_stages(env.plan()) if line.startswith("read ")]
    assert "through panes' Python data source: a crash hook" in read
