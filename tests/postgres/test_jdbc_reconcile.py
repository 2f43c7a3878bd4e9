"""``panes reconcile`` meets the table (``panes.connectors.jdbc_corrections``), on the local runner against a real
PostgreSQL: a window job with early firings and elements too late writes its results to an upsert table, and the
corrections applied through the same sink leave the table equal to the BATCH run's result over all the data
(``tests/postgres/test_jdbc_spark.py`` runs the loop on Spark)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from panes.cli.main import main
from panes.connectors.jdbc import JdbcConnectionOptions, JdbcSink
from panes.connectors.jdbc_corrections import apply_corrections
from panes.datastream import ListSink, RuntimeExecutionMode, StreamEnvironment
from panes.datastream.reconcile import reconcile
from panes.functions import Sum
from panes.watermarks import WatermarkStrategy
from panes.windowing import (
    AnyOf,
    CountTrigger,
    EventTimeSessionWindows,
    EventTimeTrigger,
    TumblingEventTimeWindows,
    WindowRow,
)
from tests.postgres.conftest import Database

BATCHES = [
    [("a", 1, 1), ("a", 2, 2), ("b", 12, 3)],
    [("a", 21, 4)],
    [("a", 3, 5), ("b", 14, 6), ("b", 13, 7)],
    [("a", 4, 8), ("a", 25, 9), ("b", 15, 10)],
]
"""Micro-batches of ``(key, timestamp, value)``, the watermark ``max - 1`` after each: a's [0, 10) fires early (two
elements) and on time at watermark 11, and is cleaned up (lateness 5) at watermark 20, before a@3 and a@4 come: too
late. b's [10, 20) fires on time at watermark 20, then late, early by count (b@14, b@13) and again (b@15)."""

TABLE = (
    "CREATE TABLE sums (key text NOT NULL, window_start bigint NOT NULL, window_end bigint NOT NULL, value bigint, "
    "PRIMARY KEY (key, window_start, window_end))"
)
SCHEMA = "k STRING, v BIGINT, ts BIGINT"
SUMS = "key STRING, window_start BIGINT, window_end BIGINT, value BIGINT"
"""The window's results (a retracting window adds ``retract BOOLEAN``)."""


def table_sink(url: str) -> JdbcSink:
    """The upsert sink of :data:`TABLE` at libpq ``url``."""
    options = JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url(url).build()
    builder = JdbcSink.upsert_builder().with_table("sums").with_key_columns("key", "window_start", "window_end")
    return builder.with_connection_options(options).build()


def job(late: str, sink: Any, mode: str, sessions: bool = False) -> Any:
    """Sums per key over tumbling 10 ms windows of :data:`BATCHES` (or, with ``sessions``, sessions of gap 4),
    early every two elements, 5 ms of lateness, in accumulation ``mode``, into ``sink``; too-late elements kept
    under ``late``."""

    def build(env: StreamEnvironment) -> None:
        rows = [[{"k": k, "v": v, "ts": ts} for k, ts, v in batch] for batch in BATCHES]
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
        windowed = (
            env.from_micro_batches(rows, type_info=SCHEMA)
            .assign_timestamps_and_watermarks(strategy)
            .key_by("k")
            .window(EventTimeSessionWindows.with_gap(4) if sessions else TumblingEventTimeWindows.of(10))
            .trigger(AnyOf(CountTrigger.of(2), EventTimeTrigger()))
            .allowed_lateness(5)
            .late_data_table(late)
        )
        if mode == "retracting":
            windowed = windowed.retracting_fired_panes()
        windowed.aggregate(Sum("v"), WindowRow(), output_type=SUMS).add_sink(sink)

    return build


def batch_result(mode: str, late: str, sessions: bool = False) -> list[tuple[Any, ...]]:
    """What one BATCH run of :func:`job` over all the data leaves in an upsert table: each window's latest row."""
    emitted = ListSink()
    env = StreamEnvironment().set_runtime_mode(RuntimeExecutionMode.BATCH)
    job(late, emitted, mode, sessions)(env)
    env.execute()
    table: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for row in emitted.values:
        window = (row["key"], row["window_start"], row["window_end"])
        if row.get("retract", False):
            table.pop(window, None)
        else:
            table[window] = (*window, row["value"])
    return sorted(table.values())


def sums(postgres: Database) -> list[tuple[Any, ...]]:
    return postgres.execute("SELECT key, window_start, window_end, value FROM sums ORDER BY 1, 2, 3")


@pytest.mark.parametrize(
    ("mode", "sessions"),
    [("accumulating", False), ("retracting", False), ("accumulating", True)],
    ids=["accumulating", "retracting", "sessions"],
)
def test_corrections_applied_through_the_sink_leave_the_batch_result(
    postgres: Database, tmp_path: Path, mode: str, sessions: bool
) -> None:
    """With sessions, the stream also split b's session: b@12's [12, 16) was cleaned up before b@14, b@13 and
    b@15 came, which fired as [14, 18), [13, 18) and [13, 19) in turn (each past its end at watermark 20), where
    BATCH's session grows to [12, 19). The corrections delete the stream's rows of b and insert BATCH's."""
    postgres.execute(TABLE)
    late = str(tmp_path / "late")
    env = StreamEnvironment("local")
    job(late, table_sink(postgres.url), mode, sessions)(env)
    env.execute()
    expected = batch_result(mode, str(tmp_path / "unused"), sessions)
    assert sums(postgres) != expected  # the stream alone misses the elements too late
    if sessions:
        streamed_b = {row[:3] for row in sums(postgres) if row[0] == "b"}
        batch_b = {row[:3] for row in expected if row[0] == "b"}
        assert ("b", 12, 16) in streamed_b - batch_b and ("b", 12, 19) in batch_b - streamed_b  # b's session split

    corrections = reconcile(job(late, ListSink(), mode, sessions), late)
    assert corrections.late_elements == 2
    assert apply_corrections(corrections, table_sink(postgres.url)) == len(corrections.rows) > 0
    assert sums(postgres) == expected
    apply_corrections(corrections, table_sink(postgres.url))  # applied again: nothing changes
    assert sums(postgres) == expected


def test_the_cli_applies_the_corrections_through_the_jobs_sink(postgres: Database, tmp_path: Path, capsys: Any) -> None:
    postgres.execute(TABLE)
    late = tmp_path / "late"
    job_file = tmp_path / "job.py"
    job_file.write_text(
        "from tests.postgres.test_jdbc_reconcile import job, table_sink\n"
        "def build(env):\n"
        f"    job({str(late)!r}, table_sink({postgres.url!r}), 'accumulating')(env)\n"
    )
    assert main(["run", str(job_file)]) == 0
    assert main(["reconcile", str(job_file), "--late", str(late)]) == 2
    assert "--output FILE, --apply, or both" in capsys.readouterr().err
    assert main(["reconcile", str(job_file), "--late", str(late), "--apply"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 late elements of step window#2: ")
    assert "written to JdbcSink(upsert into sums by (key, window_start, window_end), " in out
    assert postgres.server.password not in out
    assert sums(postgres) == batch_result("accumulating", str(tmp_path / "unused"))


def test_what_cannot_apply_corrections_is_refused_saying_why(tmp_path: Path) -> None:
    from panes.connectors.jdbc_corrections import check_applicable
    from panes.datastream.reconcile import Corrections

    options = JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url("jdbc:postgresql://h:1/d").build()
    plain = JdbcSink.sink("INSERT INTO sums VALUES (?, ?, ?, ?)", None, options)
    accumulating = Corrections([], None, "window#3", 0, "accumulating")
    with pytest.raises(ValueError, match="cannot apply a retraction"):
        check_applicable(accumulating, plain)
    with pytest.raises(ValueError, match="fires discarding panes"):
        check_applicable(Corrections([], None, "window#3", 0, "discarding"), table_sink("postgresql://h:1/d"))
    with pytest.raises(TypeError, match="through a JdbcSink"):
        check_applicable(accumulating, ListSink())
