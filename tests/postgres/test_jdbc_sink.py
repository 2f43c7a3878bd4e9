"""PyFlink's ``JdbcSink.sink`` against a real PostgreSQL: values of every shape as the statement's parameters, rows
the table refuses to the error output or failing the job, and what an unreachable server, wrong credentials or a
statement that cannot work tell the user."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from panes.connectors.jdbc import (
    JdbcConnectionError,
    JdbcConnectionOptions,
    JdbcExecutionOptions,
    JdbcSink,
    JdbcStatementError,
    RefusedRowError,
)
from panes.datastream import OutputTag, StreamEnvironment
from panes.errors import ErrorRecord
from panes.types import Row, Types
from tests.postgres.conftest import Database

ROW = Types.ROW_NAMED(["page", "n"], [Types.STRING(), Types.LONG()])


def batches(size: int, retries: int = 0) -> JdbcExecutionOptions:
    return JdbcExecutionOptions.builder().with_batch_size(size).with_max_retries(retries).build()


def test_a_statement_runs_once_per_value_with_its_columns_in_order(postgres: Database) -> None:
    postgres.execute("CREATE TABLE hits (page text, n bigint, note text)")
    env = StreamEnvironment("local")
    rows = [Row(page=f"/{i}", n=i) for i in range(7)]
    insert = "INSERT INTO hits (page, n, note) VALUES (?, ?, 'why? 100%')"
    env.from_collection(rows, type_info=ROW).add_sink(JdbcSink.sink(insert, ROW, postgres.options(), batches(3)))
    # untyped values: a dict's values, a tuple's positions, in order
    untyped: list[Any] = [{"page": "/d", "n": 100}, ("/t", 200)]
    env.from_collection(untyped).add_sink(JdbcSink.sink(insert, None, postgres.options(), batches(0)))
    env.execute()
    assert postgres.execute("SELECT page, n, note FROM hits ORDER BY n") == [
        *((f"/{i}", i, "why? 100%") for i in range(7)),
        ("/d", 100, "why? 100%"),
        ("/t", 200, "why? 100%"),
    ]


def test_the_streams_type_orders_the_columns_when_the_sink_has_none(postgres: Database) -> None:
    postgres.execute("CREATE TABLE hits (n bigint, page text, tags jsonb)")
    env = StreamEnvironment("local")
    values = [{"tags": {"a": 1}, "page": "/x", "n": 1}, {"page": "/y", "n": 2, "tags": None}]
    stream = env.from_collection(values, type_info="n BIGINT, page STRING, tags MAP<STRING, BIGINT>")
    stream.sink_to(JdbcSink.sink("INSERT INTO hits VALUES (?, ?, ?)", None, postgres.options()))
    env.execute()
    assert postgres.execute("SELECT n, page, tags FROM hits ORDER BY n") == [(1, "/x", {"a": 1}), (2, "/y", None)]


def refusing_table(postgres: Database) -> None:
    postgres.execute(
        "CREATE TABLE hits (page varchar(4) NOT NULL, n bigint CONSTRAINT n_positive CHECK (n > 0), "
        "CONSTRAINT one_per_page UNIQUE (page))"
    )


REFUSED = [("/a", 1), ("/toolong", 2), ("/b", -3), ("/a", 4), (None, 5), ("/c", 6)]


def test_rows_the_table_refuses_go_to_the_error_output_with_the_databases_reason(postgres: Database) -> None:
    refusing_table(postgres)
    env = StreamEnvironment("local")
    errors: OutputTag[ErrorRecord] = OutputTag("refused")
    rows = [Row(page=p, n=n) for p, n in REFUSED]
    sink = env.from_collection(rows, type_info=ROW).sink_to(
        JdbcSink.sink("INSERT INTO hits VALUES (?, ?)", ROW, postgres.options(), batches(4)), errors
    )
    refused = sink.get_side_output(errors).execute_and_collect()
    assert postgres.execute("SELECT page, n FROM hits ORDER BY n") == [("/a", 1), ("/c", 6)]
    operator = "Sink: JdbcSink"  # the step; its reason names the writer
    prefix = f"{operator} (1/1): PostgreSQL refused the row (the sink's statement): "
    assert [(r.value, r.reason, r.error_type, r.operator) for r in refused] == [
        (
            Row(page="/toolong", n=2),
            prefix + "value too long for type character varying(4) [SQLSTATE 22001]",
            "StringDataRightTruncation",
            operator,
        ),
        (
            Row(page="/b", n=-3),
            prefix + 'new row for relation "hits" violates check constraint "n_positive" (constraint '
            "'n_positive'); Failing row contains (/b, -3). [SQLSTATE 23514]",
            "CheckViolation",
            operator,
        ),
        (
            Row(page="/a", n=4),
            prefix + "duplicate key value violates unique constraint \"one_per_page\" (constraint 'one_per_page'); "
            "Key (page)=(/a) already exists. [SQLSTATE 23505]",
            "UniqueViolation",
            operator,
        ),
        (
            Row(page=None, n=5),
            prefix + 'null value in column "page" of relation "hits" violates not-null constraint; Failing row '
            "contains (null, 5). [SQLSTATE 23502]",
            "NotNullViolation",
            operator,
        ),
    ]


def test_a_value_that_does_not_fit_the_sinks_type_goes_to_the_error_output(postgres: Database) -> None:
    postgres.execute("CREATE TABLE hits (page text, n bigint)")
    env = StreamEnvironment("local")
    errors: OutputTag[ErrorRecord] = OutputTag("refused")
    values: list[Any] = [Row(page="/a", n=1), Row(page="/b", n="two")]
    sink = env.from_collection(values).sink_to(
        JdbcSink.sink("INSERT INTO hits VALUES (?, ?)", ROW, postgres.options()), errors
    )
    refused = sink.get_side_output(errors).execute_and_collect()
    assert postgres.execute("SELECT page, n FROM hits") == [("/a", 1)]
    assert [(r.value, r.error_type) for r in refused] == [(Row(page="/b", n="two"), "RowRefused")]
    assert refused[0].reason.startswith(
        "Sink: JdbcSink (1/1): the value does not fit the sink's type page STRING, n BIGINT"
    )


def test_a_refused_row_fails_a_sink_without_error_output_and_nothing_is_committed(postgres: Database) -> None:
    refusing_table(postgres)
    env = StreamEnvironment("local")
    rows = [Row(page=p, n=n) for p, n in REFUSED]
    env.from_collection(rows, type_info=ROW).add_sink(
        JdbcSink.sink("INSERT INTO hits VALUES (?, ?)", ROW, postgres.options(), batches(1))
    )
    with pytest.raises(RefusedRowError) as failure:
        env.execute()
    assert str(failure.value) == (
        "Sink: JdbcSink (1/1): PostgreSQL refused the row (the sink's statement): value too long for type character "
        "varying(4) [SQLSTATE 22001]; the row: Row(page='/toolong', n=2)\n"
        "Change the value upstream or the table, or give the sink an error output (sink_to(sink, errors=tag)) to "
        "send refused rows there as ErrorRecords and go on."
    )
    assert (failure.value.sqlstate, failure.value.constraint, failure.value.operator) == (
        "22001",
        None,
        "Sink: JdbcSink (1/1)",
    )
    # the job failed: its open transaction (the first row, sent alone) was rolled back
    assert postgres.execute("SELECT count(*) FROM hits") == [(0,)]

    env = StreamEnvironment("local")
    env.from_collection([Row(page="/a", n=1), Row(page="/a", n=2)], type_info=ROW).add_sink(
        JdbcSink.sink("INSERT INTO hits VALUES (?, ?)", ROW, postgres.options())
    )
    with pytest.raises(RefusedRowError, match=r"violates unique constraint \"one_per_page\"") as unique:
        env.execute()
    assert unique.value.constraint == "one_per_page"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_server_fails_the_job_after_the_retries_saying_what_to_check(postgres: Database) -> None:
    port = closed_port()
    options = postgres.options(url=f"jdbc:postgresql://127.0.0.1:{port}/shop")
    env = StreamEnvironment("local")
    env.from_collection([Row(page="/a", n=1)], type_info=ROW).add_sink(
        JdbcSink.sink("INSERT INTO hits VALUES (?, ?)", ROW, options, batches(10, retries=1))
    )
    with pytest.raises(JdbcConnectionError) as failure:
        env.execute()
    message = str(failure.value)
    assert message.startswith(
        f"Sink: JdbcSink (1/1): cannot connect to PostgreSQL at jdbc:postgresql://127.0.0.1:{port}/shop as user "
        f"'panes' (2 attempts): connection failed: connection to server at \"127.0.0.1\", port {port} failed: "
        "Connection refused"
    )
    assert message.endswith(
        "Check that the server runs and accepts TCP connections on that host and port (listen_addresses, port), and "
        "that the URL names them; JdbcExecutionOptions' max_retries sets how often the sink tries."
    )
    assert failure.value.__cause__ is None and failure.value.__context__ is None  # psycopg's error is in the text
    assert postgres.server.password not in message


def test_wrong_credentials_and_a_missing_database_say_so(postgres: Database) -> None:
    env = StreamEnvironment("local")
    wrong = "not-the-password-42"
    env.from_collection([Row(page="/a", n=1)], type_info=ROW).add_sink(
        JdbcSink.sink("INSERT INTO hits VALUES (?, ?)", ROW, postgres.options(password=wrong), batches(10))
    )
    with pytest.raises(JdbcConnectionError) as failure:
        env.execute()
    message = str(failure.value)
    assert message == (
        f"Sink: JdbcSink (1/1): cannot connect to PostgreSQL at {postgres.jdbc_url} as user 'panes' (1 attempt): "
        f'connection failed: connection to server at "127.0.0.1", port {postgres.server.port} failed: FATAL: '
        'password authentication failed for user "panes"\n'
        "PostgreSQL refused the credentials: check the user name and password (with_user_name and with_password, "
        "or the URL's user and password), and that the server lets this user in from here (pg_hba.conf)."
    )
    assert wrong not in message

    env = StreamEnvironment("local")
    missing = postgres.options(url=f"jdbc:postgresql://127.0.0.1:{postgres.server.port}/no_such_db")
    env.from_collection([Row(page="/a", n=1)], type_info=ROW).add_sink(
        JdbcSink.sink("INSERT INTO hits VALUES (?, ?)", ROW, missing, batches(10))
    )
    with pytest.raises(JdbcConnectionError, match=r"The database does not exist: create it \(CREATE DATABASE\)"):
        env.execute()


def test_a_statement_that_cannot_work_fails_the_job_with_the_statement(postgres: Database) -> None:
    env = StreamEnvironment("local")
    env.from_collection([Row(page="/a", n=1)], type_info=ROW).add_sink(
        JdbcSink.sink("INSERT INTO nowhere VALUES (?, ?)", ROW, postgres.options())
    )
    with pytest.raises(JdbcStatementError) as failure:
        env.execute()
    assert str(failure.value) == (
        'Sink: JdbcSink (1/1): PostgreSQL cannot run the sink\'s statement: relation "nowhere" does not exist '
        "[SQLSTATE 42P01]\n"
        "  statement: INSERT INTO nowhere VALUES (%s, %s)\n"
        "Fix the statement or the table. Create the table first (panes does not create it), or name the schema "
        "(schema.table)."
    )


def test_a_stream_that_does_not_fit_the_statement_fails_when_the_job_starts(postgres: Database) -> None:
    env = StreamEnvironment("local")
    env.from_collection([Row(page="/a", n=1)], type_info=ROW).add_sink(
        JdbcSink.sink("INSERT INTO hits VALUES (?, ?, ?)", None, postgres.options())
    )
    with pytest.raises(ValueError) as failure:
        env.execute()
    assert str(failure.value) == (
        "Sink: JdbcSink (1/1): the statement has 3 parameters (?) and the rows 2 columns (page, n): give one ? per "
        "column, in order (the sink's type_info, or the stream's type: page STRING, n BIGINT)"
    )


def test_a_connection_keyword_libpq_does_not_know_fails_at_once(postgres: Database) -> None:
    options = (
        JdbcConnectionOptions.JdbcConnectionOptionsBuilder()
        .with_url(postgres.jdbc_url)
        .with_user_name(postgres.server.user)
        .with_password(postgres.server.password)
        .with_property("no_such_keyword", "1")
        .build()
    )
    env = StreamEnvironment("local")
    env.from_collection([Row(page="/a", n=1)], type_info=ROW).add_sink(
        JdbcSink.sink("INSERT INTO hits VALUES (?, ?)", ROW, options, batches(10, retries=3))
    )
    with pytest.raises(JdbcConnectionError, match=r"\(1 attempt\): .*no_such_keyword") as failure:
        env.execute()
    assert postgres.server.password not in str(failure.value)


JOB = """
from panes.connectors.jdbc import JdbcConnectionOptions, JdbcSink
from panes.types import Types


def build(env):
    options = (
        JdbcConnectionOptions.JdbcConnectionOptionsBuilder()
        .with_url({url!r})
        .with_user_name("panes")
        .with_password({password!r})
        .build()
    )
    row = Types.ROW_NAMED(["page", "n"], [Types.STRING(), Types.LONG()])
    sink = JdbcSink.sink("INSERT INTO hits VALUES (?, ?)", row, options)
    env.from_collection([("/a", 1)], type_info=row).add_sink(sink)
"""


def test_panes_run_and_explain_show_neither_the_password_nor_psycopgs_traceback(
    postgres: Database, tmp_path: Any
) -> None:
    from tests.cli.support import panes

    wrong = "Wrong-Password-77"
    job = tmp_path / "to_postgres.py"
    job.write_text(JOB.format(url=postgres.jdbc_url + f"?password={wrong}", password=wrong))
    done = panes("run", str(job))
    assert done.returncode == 1
    failure = done.stderr.split("panes: the job failed: ", 1)[1]
    assert failure.startswith(
        f"JdbcConnectionError: Sink: JdbcSink (1/1): cannot connect to PostgreSQL at {postgres.jdbc_url}?password=***"
    )
    assert "caused by" not in failure and "Traceback" not in failure
    traced = panes("run", str(job), "--traceback")
    explained = panes("explain", str(job))
    assert explained.returncode == 0, explained.stderr
    assert f"{postgres.jdbc_url}?password=***" in explained.stdout
    for output in (done, traced, explained):
        assert wrong not in output.stdout + output.stderr
    assert "psycopg" not in traced.stderr.split("Traceback", 1)[0]
    assert "OperationalError" not in traced.stderr
