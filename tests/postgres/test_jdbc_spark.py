"""The JDBC sink on the Spark runner, against a real PostgreSQL: Spark tasks write upserts and retractions that leave
the local runner's table (pane info included); a micro-batch replayed after its writers committed writes nothing
twice, and the rows the table refused in it reach the error output once; a job killed before or after a writer
committed and restarted leaves the table of an uninterrupted run; refused rows and an unreachable server end as on
the local runner; ``reconcile`` on Spark applies its corrections through the sink, leaving the BATCH result."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from panes.connectors.jdbc import JdbcConnectionError, JdbcExecutionOptions, JdbcSink, RefusedRowError
from panes.datastream import OutputTag, StreamEnvironment
from panes.datastream.sinks import ListSink
from panes.errors import ErrorRecord
from panes.spark import SparkRunner
from panes.types import Row
from tests.postgres.conftest import Database
from tests.postgres.test_jdbc_sink import REFUSED, ROW, closed_port, refusing_table
from tests.postgres.test_jdbc_upsert import (
    KEYS,
    LATEST,
    SESSIONS_TABLE,
    TOTALS_TABLE,
    clicks,
    totals,
    upsert,
)

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]
TOTALS_COLUMNS = "customer, window_start, window_end, total, pane_index, pane_timing, pane_last"


def test_upserts_and_retractions_from_spark_tasks_leave_the_local_runners_table(postgres: Database, spark: Any) -> None:
    """Three micro-batches of a retracting window with early, on-time and late firings; two writers, each key's
    changes in one of them, in order."""
    for table in ("totals", "local_totals"):
        postgres.execute(TOTALS_TABLE.replace("TABLE totals", f"TABLE {table}"))
    env = StreamEnvironment("local")
    totals(env, "retracting").add_sink(upsert(postgres, "local_totals", *KEYS).build())
    env.execute()
    env = StreamEnvironment(SparkRunner(spark))
    totals(env, "retracting").add_sink(upsert(postgres, "totals", *KEYS).build()).set_parallelism(2)
    env.execute()
    on_spark = postgres.execute(f"SELECT {TOTALS_COLUMNS} FROM totals ORDER BY 1, 2")
    assert on_spark == postgres.execute(f"SELECT {TOTALS_COLUMNS} FROM local_totals ORDER BY 1, 2") == LATEST
    # each writer committed its share of a micro-batch with a marker named by the micro-batch
    markers = postgres.execute("SELECT checkpoint_id, subtask FROM panes_sink_commits")
    assert {subtask for _, subtask in markers} == {0, 1}
    assert len(markers) == len(set(markers)) > 2


def test_retractions_from_spark_delete_the_rows_of_merged_sessions(postgres: Database, spark: Any) -> None:
    postgres.execute(SESSIONS_TABLE)
    env = StreamEnvironment(SparkRunner(spark))
    sink = upsert(postgres, "sessions", "user", "window_start", "window_end").build()
    clicks(env, "retracting").add_sink(sink).set_parallelism(2)
    env.execute()
    assert postgres.execute("SELECT * FROM sessions ORDER BY 1, 2") == [
        ("a", 0, 13_000, 3),
        ("b", 0, 5_000, 1),
        ("b", 20_000, 25_000, 1),
    ]


class _FailOnce:
    """A driver sink function that fails the micro-batch holding ``value`` the first time it sees it (after the
    JDBC sink, a task sink, committed that micro-batch)."""

    failed = False

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self, value: Any) -> None:
        if value == self.value and not _FailOnce.failed:
            _FailOnce.failed = True
            raise RuntimeError("crash after the JDBC sink committed the micro-batch")


def test_a_replayed_micro_batch_writes_nothing_twice_and_gives_its_refused_rows_once(
    postgres: Database, spark: Any, tmp_path: Path
) -> None:
    """Micro-batch 1 has rows the table refuses; the job fails after the JDBC writers committed it (rows, markers
    and the refused rows kept with them) and before Spark committed it. The restart replays micro-batch 1: the
    writers find their markers and write nothing, and the error output (a file sink, written once per micro-batch)
    gets the kept refused rows."""
    refusing_table(postgres)
    batches = [[Row(page="/a", n=1), Row(page="/b", n=2)], [Row(page=p, n=n) for p, n in REFUSED[2:]], []]
    checkpoint = str(tmp_path / "checkpoint")
    refused_files = str(tmp_path / "refused")

    def run(function: Any) -> None:
        env = StreamEnvironment(SparkRunner(spark, checkpoint_location=checkpoint, trigger="available_now"))
        stream = env.from_micro_batches(batches, end_of_input=False, type_info=ROW)
        errors: OutputTag[ErrorRecord] = OutputTag("refused")
        sink = JdbcSink.sink("INSERT INTO hits VALUES (?, ?)", ROW, postgres.options())
        written = stream.sink_to(sink, errors).set_parallelism(2)
        written.get_side_output(errors).sink_to_files(refused_files, format="json")
        stream.add_sink(function)
        env.execute()

    _FailOnce.failed = False
    with pytest.raises(Exception, match="crash after the JDBC sink committed"):
        run(_FailOnce(Row(page="/c", n=6)))
    assert postgres.execute("SELECT page, n FROM hits ORDER BY n") == [("/a", 1), ("/b", 2), ("/c", 6)]
    run(lambda value: None)
    assert postgres.execute("SELECT page, n FROM hits ORDER BY n") == [("/a", 1), ("/b", 2), ("/c", 6)]
    refused = spark.read.json(refused_files).orderBy("error_type").collect()
    assert [(r.batch, r.error_type) for r in refused] == [
        (1, "CheckViolation"),
        (1, "NotNullViolation"),
        (1, "UniqueViolation"),
    ]
    assert 'violates check constraint "n_positive"' in refused[0].reason
    assert refused[0].operator == "Sink: JdbcSink" and refused[0].reason.startswith("Sink: JdbcSink (")


def test_refused_rows_on_spark_go_to_the_error_output_or_fail_the_job(postgres: Database, spark: Any) -> None:
    refusing_table(postgres)
    rows = [Row(page=p, n=n) for p, n in REFUSED]
    env = StreamEnvironment(SparkRunner(spark))
    errors: OutputTag[ErrorRecord] = OutputTag("refused")
    sink = JdbcSink.sink("INSERT INTO hits VALUES (?, ?)", ROW, postgres.options())
    refused = env.from_collection(rows, type_info=ROW).sink_to(sink, errors).get_side_output(errors)
    out = ListSink()
    refused.sink_to(out)
    env.execute()
    assert postgres.execute("SELECT page, n FROM hits ORDER BY n") == [("/a", 1), ("/c", 6)]
    assert [(r.value, r.error_type) for r in out.values] == [
        (Row(page="/toolong", n=2), "StringDataRightTruncation"),
        (Row(page="/b", n=-3), "CheckViolation"),
        (Row(page="/a", n=4), "UniqueViolation"),
        (Row(page=None, n=5), "NotNullViolation"),
    ]
    assert out.values[0].reason == (
        "Sink: JdbcSink (1/1): PostgreSQL refused the row (the sink's statement): value too long for type character "
        "varying(4) [SQLSTATE 22001]"
    )

    postgres.execute("TRUNCATE hits")
    env = StreamEnvironment(SparkRunner(spark))
    env.from_collection(rows, type_info=ROW).add_sink(
        JdbcSink.sink("INSERT INTO hits VALUES (?, ?)", ROW, postgres.options())
    )
    with pytest.raises(RefusedRowError) as failure:
        env.execute()
    assert str(failure.value).startswith(
        "Sink: JdbcSink (1/1): PostgreSQL refused the row (the sink's statement): value too long for type character "
        "varying(4) [SQLSTATE 22001]; the row: Row(page='/toolong', n=2)\n"
    )
    assert (failure.value.sqlstate, failure.value.constraint) == ("22001", None)
    assert postgres.execute("SELECT count(*) FROM hits") == [(0,)]  # the writer's transaction was rolled back


def test_an_unreachable_server_fails_the_spark_job_after_the_retries(postgres: Database, spark: Any) -> None:
    port = closed_port()
    options = postgres.options(url=f"jdbc:postgresql://127.0.0.1:{port}/shop")
    execution = JdbcExecutionOptions.builder().with_max_retries(1).build()
    env = StreamEnvironment(SparkRunner(spark))
    env.from_collection([Row(page="/a", n=1)], type_info=ROW).add_sink(
        JdbcSink.sink("INSERT INTO hits VALUES (?, ?)", ROW, options, execution)
    )
    with pytest.raises(JdbcConnectionError) as failure:
        env.execute()
    message = str(failure.value)
    assert message.startswith(
        f"Sink: JdbcSink (1/1): cannot connect to PostgreSQL at jdbc:postgresql://127.0.0.1:{port}/shop as user "
        "'panes' (2 attempts): "
    )
    assert message.endswith("JdbcExecutionOptions' max_retries sets how often the sink tries.")
    assert postgres.server.password not in message


def test_a_job_killed_before_and_after_its_writers_committed_leaves_the_table_of_an_uninterrupted_run(
    postgres: Database, tmp_path: Path, spark: Any
) -> None:
    """SIGKILL of the job's whole process group (driver JVM, Python workers) while a writer holds at a crash point,
    twice in turn on one checkpoint: at ``jdbc_open`` of micro-batch 1, its rows and marker sent in its transaction,
    not committed (the server rolls it back when the connection dies; every writer of the micro-batch stops there,
    so none of its rows is in the table); restarted, at ``jdbc`` of micro-batch 2, its transaction committed and
    Spark's batch not. The restart to the end (in this process) replays micro-batch 2, whose writers write it, or
    find their markers and write nothing, and goes on: each row once."""
    from tests.postgres.jdbc_fault_job import BATCHES, main
    from tests.spark.crash_points import kill_when_held

    postgres.execute("CREATE TABLE hits (batch int, n int)")
    checkpoint = str(tmp_path / "checkpoint")
    command = [sys.executable, "-m", "tests.postgres.jdbc_fault_job", postgres.url, checkpoint]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    for point, batch in (("jdbc_open", 1), ("jdbc", 2)):
        kill_when_held(command, environment, point, batch, tmp_path / f"held-{point}")
        committed = postgres.execute("SELECT DISTINCT batch FROM hits ORDER BY 1")
        if point == "jdbc":  # micro-batch 1 replayed, and a writer of micro-batch 2 committed before the kill
            assert (1,) in committed and (2,) in committed and (3,) not in committed
        else:  # micro-batch 0 committed, 1 held open, then rolled back
            assert committed == [(0,)]
    main(postgres.url, checkpoint, spark)
    expected = sorted(row for batch in BATCHES for row in batch)
    assert postgres.execute("SELECT batch, n FROM hits ORDER BY 1, 2") == expected  # each row once


def test_reconcile_on_spark_applies_its_corrections_through_the_sink(
    postgres: Database, spark: Any, tmp_path: Path
) -> None:
    """The stream, reconcile's two runs and the corrections' writers all on Spark (two writers): the table the
    stream left, wrong by its elements too late, becomes the BATCH run's result over all the data."""
    from panes.connectors.jdbc_corrections import apply_corrections
    from panes.datastream.reconcile import reconcile
    from tests.postgres import test_jdbc_reconcile as loop

    postgres.execute(loop.TABLE)
    late = str(tmp_path / "late")
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    loop.job(late, loop.table_sink(postgres.url), "retracting")(env)
    env.execute()
    expected = loop.batch_result("retracting", str(tmp_path / "unused"))
    assert loop.sums(postgres) != expected
    corrections = reconcile(loop.job(late, ListSink(), "retracting"), late, SparkRunner(spark, num_shards=2))
    assert corrections.late_elements == 2
    apply_corrections(corrections, loop.table_sink(postgres.url), SparkRunner(spark), parallelism=2)
    assert loop.sums(postgres) == expected
