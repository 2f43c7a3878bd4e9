"""An error output written to files has one documented schema (``ERROR_RECORD_DDL``), whatever the records it
refused and whether any field is ``None`` in all of them, on both runners."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from panes.datastream import OutputTag, StreamEnvironment
from panes.errors import ERROR_RECORD_DDL
from panes.types import RecordType
from panes.watermarks import WatermarkStrategy

ERRORS: OutputTag[Any] = OutputTag("errors")
ROWS = [{"user": "u1", "ts": 1_000}, {"user": "u2"}, {"user": "u3", "ts": None}, {"user": "u4", "ts": 2_000}]
"""Two rows without a timestamp: the timestamps step refuses them (their ``timestamp`` is ``None``)."""


def build(env: StreamEnvironment, folder: Path, main: bool = True) -> None:
    """The timestamps step's error output to files, and (``main``) its stream to files too."""
    stamped = env.from_collection(ROWS).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    )
    stamped = stamped.side_output_errors(ERRORS)
    stamped.get_side_output(ERRORS).sink_to_files(str(folder / "errors"))
    if main:
        stamped.map(lambda row: {"user": row["user"]}, output_type="user STRING").sink_to_files(str(folder / "users"))


def read_errors(folder: Path) -> list[dict[str, Any]]:
    table = pq.read_table(folder / "errors")
    expected = RecordType.of(ERROR_RECORD_DDL)
    assert expected is not None
    assert table.drop_columns(["batch"]).schema.names == [field.name for field in expected.columns()]
    return sorted(table.drop_columns(["batch"]).to_pylist(), key=lambda row: row["value"])


def check(rows: list[dict[str, Any]]) -> None:
    assert [json.loads(row["value"]) for row in rows] == [{"user": "u2"}, {"user": "u3", "ts": None}]
    assert all(row["timestamp"] is None and row["key"] is None and row["window"] is None for row in rows)
    assert all("timestamp" in row["reason"] and row["operator"] for row in rows)
    # the reason alone: what to change belongs to a failure, not to a record already routed
    assert all("'ts'" in row["reason"] and "side_output_errors" not in row["reason"] for row in rows)


def test_a_missing_timestamp_fails_saying_what_and_what_to_change() -> None:
    from panes.errors import BadRecordError

    env = StreamEnvironment("local")
    env.from_collection(ROWS[:2]).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    ).print()
    with pytest.raises(BadRecordError) as failed:
        env.execute()
    what, change = str(failed.value).split("\n")
    assert what == "no timestamp for {'user': 'u2'}: it has no field 'ts'."
    assert "ColumnTimestampAssigner('ts')" in change and "side_output_errors(tag) on this step" in change


def test_an_error_output_of_timestamp_errors_writes_its_fixed_columns_on_the_local_runner(tmp_path: Path) -> None:
    env = StreamEnvironment("local")
    build(env, tmp_path)
    env.execute()
    check(read_errors(tmp_path))


@pytest.mark.spark
@pytest.mark.parametrize("main", [True, False], ids=["beside-the-stream", "alone"])
def test_an_error_output_of_timestamp_errors_writes_its_fixed_columns_on_spark(
    spark: Any, tmp_path: Path, main: bool
) -> None:
    """Also when the error output is all that is read of the step (the stream's own rows go nowhere)."""
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark))
    build(env, tmp_path, main)
    env.execute()
    check(read_errors(tmp_path))


LATE: OutputTag[Any] = OutputTag("late")


def build_quiet(env: StreamEnvironment, folder: Path) -> None:
    """A window whose late output and error output receive nothing."""
    from panes.functions import Count
    from panes.windowing import TumblingEventTimeWindows, WindowRow

    rows = [{"user": "u1", "ts": 1_000}, {"user": "u2", "ts": 2_000}]
    stamped = env.from_collection(rows, type_info="user STRING, ts BIGINT").assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    )
    stamped = stamped.side_output_errors(ERRORS)
    counts = (
        stamped.key_by("user")
        .window(TumblingEventTimeWindows.of(10_000))
        .side_output_late_data(LATE)
        .aggregate(Count(), WindowRow(key="user"))
    )
    counts.sink_to_files(str(folder / "counts"))
    counts.get_side_output(LATE).sink_to_files(str(folder / "late"))
    stamped.get_side_output(ERRORS).sink_to_files(str(folder / "errors"))


def check_quiet(folder: Path) -> None:
    assert pq.read_table(folder / "counts").num_rows == 2
    late = pq.read_table(folder / "late")
    assert late.num_rows == 0 and {"user", "ts"} <= set(late.schema.names)
    errors = pq.read_table(folder / "errors")
    assert errors.num_rows == 0 and {"value", "reason", "operator"} <= set(errors.schema.names)


def test_outputs_that_received_nothing_exist_with_their_columns_on_the_local_runner(tmp_path: Path) -> None:
    env = StreamEnvironment("local")
    build_quiet(env, tmp_path)
    env.execute()
    check_quiet(tmp_path)


@pytest.mark.spark
@pytest.mark.parametrize("streaming", [False, True], ids=["bounded", "micro-batches"])
def test_outputs_that_received_nothing_exist_with_their_columns_on_spark(
    spark: Any, tmp_path: Path, streaming: bool
) -> None:
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark))
    build_quiet(env, tmp_path)
    env.execute()
    check_quiet(tmp_path)


def refusing(value: dict[str, Any]) -> dict[str, Any]:
    if value["user"] == "u2":
        raise ValueError("u2 is refused")
    return value


def first_unless_u9(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    if b["user"] == "u9":
        raise ValueError("u9 is refused")
    return a


def error_steps(env: StreamEnvironment) -> list[tuple[str, str, str]]:
    """The (step, error type, value) of each error record of a map, a timestamps step and a keyed window's
    reduce, all routed to one error output."""
    from panes.datastream import ListSink
    from panes.windowing import TumblingEventTimeWindows

    rows = [*ROWS, {"user": "u9", "ts": 1_500}, {"user": "u9", "ts": 1_600}]
    mapped = env.from_collection(rows).map(refusing).name("refusing").side_output_errors(ERRORS)
    stamped = mapped.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    ).side_output_errors(ERRORS)
    reduced = (
        stamped.key_by(lambda row: row["user"])
        .window(TumblingEventTimeWindows.of(10_000))
        .reduce(first_unless_u9)
        .side_output_errors(ERRORS)
    )
    reduced.sink_to(ListSink())
    errors = ListSink()
    parts = [step.get_side_output(ERRORS) for step in (mapped, stamped, reduced)]
    parts[0].union(*parts[1:]).sink_to(errors)
    env.execute()
    return sorted((e.operator, e.error_type, json.dumps(e.value, sort_keys=True)) for e in errors.values)


def test_error_records_name_the_step_alike_on_both_runners(spark: Any) -> None:
    """The step as the plan names it, without the instance each runner numbers its own way (the local runner's
    ``(1/1)``, a Spark shard's ``(shard 2/4)``); the timestamps step on Spark by its name, not its class."""
    from panes.spark import SparkRunner

    local = error_steps(StreamEnvironment("local"))
    assert [(step, kind) for step, kind, _ in local] == [
        ("Timestamps/Watermarks", "BadRecordError"),
        ("Window(Reduce)", "ValueError"),
        ("refusing", "ValueError"),
    ]
    assert error_steps(StreamEnvironment(SparkRunner(spark, num_shards=4))) == local
