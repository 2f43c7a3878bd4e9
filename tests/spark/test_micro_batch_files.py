"""``from_micro_batches`` read from Parquet files in the checkpoint by Spark's file source
(``panes.spark.micro_batch_files``) gives what panes' Python data source gives: the same results, the same
micro-batches with the same input rows (clock rows and the end-of-input sentinel left out), and restarts that go
on where the checkpoint stopped. The job is ``test_processing_time``'s (processing-time windows and timers, empty
lists, a clock row per micro-batch). A job whose crash hook holds the data source's points reads through it, and a
checkpoint that source wrote stays with it on a restart."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from panes.datastream import ListSink, StreamEnvironment
from panes.local import LocalRunner
from panes.spark import SparkRunner
from panes.spark.crash_hook import VARIABLE
from panes.spark.micro_batch_files import FOLDER
from tests.spark.test_processing_time import BATCHES, TIMES, Reminder

pytestmark = pytest.mark.spark

UNREACHED_HOOK = "between:999:/nonexistent/panes-marker"
"""A crash hook holding a point of the data source no job here reaches: the job reads through the data source."""


def build(env: StreamEnvironment, lists: int, end_of_input: bool = True) -> tuple[ListSink, ListSink]:
    from panes.windowing import TumblingProcessingTimeWindows

    source = env.from_micro_batches(BATCHES[:lists], end_of_input=end_of_input, processing_times=TIMES[:lists])
    windows, timers = ListSink(), ListSink()
    keyed = source.key_by(lambda element: element[0])
    keyed.window(TumblingProcessingTimeWindows.of(10)).process(
        lambda key, ctx, rows: [(key, ctx.window().start, sorted(r[1] for r in rows))]
    ).sink_to(windows)
    keyed.process(Reminder()).sink_to(timers)
    return windows, timers


def run(spark: Any, lists: int = len(BATCHES), end_of_input: bool = True, **runner: Any) -> dict[str, Any]:
    """Run the job on Spark: its sinks' values, each micro-batch's input rows, the descriptions of the sources
    Spark read, and how panes read the micro-batches."""
    inputs: list[int] = []
    env = StreamEnvironment(
        SparkRunner(spark, num_shards=2, on_progress=lambda b: inputs.append(b.input_rows), **runner)
    )
    windows, timers = build(env, lists, end_of_input)
    result = env.execute()
    sources = {s["description"] for p in result.details["progress"] for s in p["sources"]}
    return {
        "values": (sorted(windows.values), sorted(timers.values)),
        "inputs": inputs,
        "sources": sources,
        "reading": result.details["micro_batch_sources"],
    }


def local() -> tuple[list[Any], list[Any]]:
    env = StreamEnvironment(LocalRunner())
    windows, timers = build(env, len(BATCHES))
    env.execute()
    return sorted(windows.values), sorted(timers.values)


@pytest.fixture(scope="module")
def uninterrupted(spark: Any) -> dict[str, Any]:
    """The job run once from files, without a checkpoint given (each test below compares with it)."""
    return run(spark)


def from_files(sources: set[str]) -> bool:
    return any(s.startswith("FileStreamSource[") and FOLDER in s for s in sources)


def test_the_lists_come_from_files_as_they_come_from_the_data_source(
    spark: Any, monkeypatch: Any, uninterrupted: dict[str, Any]
) -> None:
    files = uninterrupted
    assert from_files(files["sources"]), files["sources"]
    assert all(text.startswith("from files in ") for text in files["reading"].values()), files["reading"]
    monkeypatch.setenv(VARIABLE, UNREACHED_HOOK)
    python = run(spark)
    assert not from_files(python["sources"]), python["sources"]
    assert all("crash hook" in text for text in python["reading"].values()), python["reading"]
    assert files["values"] == python["values"] == local()
    assert files["inputs"] == python["inputs"]
    assert sum(files["inputs"]) == sum(map(len, BATCHES))


def test_a_restart_reads_no_file_again_and_goes_on_with_the_next_list(
    spark: Any, tmp_path: Path, uninterrupted: dict[str, Any]
) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    first = run(spark, lists=2, end_of_input=False, checkpoint_location=checkpoint)
    [folder] = [os.path.join(checkpoint, FOLDER, name) for name in os.listdir(os.path.join(checkpoint, FOLDER))]
    written = {name: os.stat(os.path.join(folder, name)) for name in os.listdir(folder)}
    assert len(written) == 2
    second = run(spark, checkpoint_location=checkpoint)
    for name, before in written.items():  # the files there hold their lists: left alone
        after = os.stat(os.path.join(folder, name))
        assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert len(os.listdir(folder)) == len(BATCHES) + 1  # the lists and the end of input's
    values = tuple(sorted(a + b) for a, b in zip(first["values"], second["values"], strict=True))
    assert values == local()
    assert [n for n in first["inputs"] + second["inputs"] if n] == [n for n in uninterrupted["inputs"] if n]


def test_a_checkpoint_the_data_source_wrote_stays_with_it(spark: Any, tmp_path: Path, monkeypatch: Any) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    monkeypatch.setenv(VARIABLE, UNREACHED_HOOK)
    first = run(spark, lists=2, end_of_input=False, checkpoint_location=checkpoint)
    monkeypatch.delenv(VARIABLE)
    second = run(spark, checkpoint_location=checkpoint)
    assert not from_files(first["sources"] | second["sources"])
    assert all("Python data source" in text for text in second["reading"].values()), second["reading"]
    assert not any(
        name.endswith(".parquet") for _, _, names in os.walk(os.path.join(checkpoint, FOLDER)) for name in names
    )
    assert tuple(sorted(a + b) for a, b in zip(first["values"], second["values"], strict=True)) == local()
