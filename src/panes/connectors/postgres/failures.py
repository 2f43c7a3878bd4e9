"""What a JDBC sink tells when the database refuses: the errors that fail a job, the reason an ``ErrorRecord`` of a
refused row carries, and which of psycopg's errors are a refused row, a connection to retry, or a statement that
cannot work.

Every error names the sink instance (its ``operator``, so the steps upstream let it through, see
``panes.errors.located``) and says what to change. None carries the password, nor psycopg's traceback: the
database's own message is part of the text, with the password (should the message hold it) replaced by ``***``.
"""

from __future__ import annotations

from typing import Any

from panes.errors import BadRecordError

REFUSED_CLASSES = ("22", "23")
"""SQLSTATE classes of a row the table refuses: data exceptions (a value too long, out of range, not of the
column's type) and integrity constraint violations (not null, unique, foreign key, check, exclusion)."""

REFUSED_STATES = ("42804",)
"""Other SQLSTATEs that are one row's own: ``datatype_mismatch`` (a ``bool`` column given an ``int``), which depends
on the Python type of the row's value."""

CREDENTIAL_STATES = ("28000", "28P01")
CREDENTIAL_TEXTS = ("password authentication failed", "no password supplied", "authentication failed")


class JdbcSinkError(RuntimeError):
    """A JDBC sink failed the job (see the subclasses); ``operator`` names the sink instance."""

    def __init__(self, message: str, operator: str | None = None) -> None:
        super().__init__(message)
        self.operator = operator


class JdbcConnectionError(JdbcSinkError):
    """The sink could not connect (or lost its connection) and the retries did not help: the server is not
    reachable, refused the credentials, or has no such database. The message says which and what to do."""


class JdbcStatementError(JdbcSinkError):
    """The sink's statement cannot work whatever the rows: a missing table or column, a syntax error, no unique
    constraint for an upsert's keys, a missing privilege. The message has the statement and the database's
    message."""


class JdbcReplayError(JdbcSinkError):
    """A replay of a checkpoint the sink had committed (its marker is in the commit table) brought other rows
    than the committed ones: the table cannot be kept exactly once (see ``docs/sources-and-sinks.md``)."""


class RefusedRowError(BadRecordError):
    """The table refused a row and the sink has no error output: the message names the row, the database's
    message and the constraint; ``sqlstate`` and ``constraint`` (``None`` when the database names none) are the
    database's."""

    def __init__(self, message: str, sqlstate: str | None, constraint: str | None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        self.constraint = constraint


def scrub(text: str, password: str | None) -> str:
    """``text`` with ``password`` replaced by ``***``."""
    return text.replace(password, "***") if password else text


def sqlstate(error: BaseException) -> str | None:
    state = getattr(error, "sqlstate", None)
    return state if isinstance(state, str) else None


def is_refusal(error: BaseException) -> bool:
    """Whether ``error`` is the database refusing one row (see :data:`REFUSED_CLASSES`)."""
    state = sqlstate(error)
    return state is not None and (state[:2] in REFUSED_CLASSES or state in REFUSED_STATES)


def is_connection_problem(error: BaseException) -> bool:
    """Whether ``error`` is about the connection (lost, refused, timed out, the server shutting down): worth
    retrying on a new connection."""
    import psycopg

    return isinstance(error, (psycopg.OperationalError, psycopg.InterfaceError)) and not is_refusal(error)


def database_message(error: BaseException, password: str | None) -> str:
    """The database's message of ``error``: its primary text, the constraint it names and its detail, one line."""
    diag = getattr(error, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    lines = str(error).strip().splitlines()
    text = primary or (lines[0] if lines else type(error).__name__)
    constraint = constraint_of(error)
    if constraint is not None:
        text += f" (constraint {constraint!r})"
    detail = getattr(diag, "message_detail", None) if diag is not None else None
    if detail:
        text += f"; {detail}"
    state = sqlstate(error)
    if state is not None:
        text += f" [SQLSTATE {state}]"
    return scrub(text, password)


def constraint_of(error: BaseException) -> str | None:
    diag = getattr(error, "diag", None)
    name = getattr(diag, "constraint_name", None) if diag is not None else None
    return name if isinstance(name, str) else None


def refusal_reason(operator: str, table: str, error: BaseException, password: str | None) -> str:
    """The reason of an ``ErrorRecord`` for a row the table refused."""
    return f"{operator}: PostgreSQL refused the row ({table}): {database_message(error, password)}"


def refused_row(operator: str, table: str, value: Any, error: BaseException, password: str | None) -> RefusedRowError:
    """The error that fails a job whose sink has no error output when the table refuses ``value``."""
    failure = RefusedRowError(
        f"{refusal_reason(operator, table, error, password)}; the row: {scrub(repr(value), password)}\n"
        "Change the value upstream or the table, or give the sink an error output (sink_to(sink, errors=tag)) to "
        "send refused rows there as ErrorRecords and go on.",
        sqlstate(error),
        constraint_of(error),
    )
    failure.operator = operator
    return failure


def statement_failure(operator: str, statement: str, error: BaseException, password: str | None) -> JdbcStatementError:
    """The error that fails a job whose statement cannot work (see :class:`JdbcStatementError`)."""
    hint = ""
    state = sqlstate(error)
    if state == "42P10":
        hint = " The upsert's key columns need a primary key or a unique constraint on exactly those columns."
    elif state == "42P01":
        hint = " Create the table first (panes does not create it), or name the schema (schema.table)."
    elif state == "42501":
        hint = " Grant the sink's user the privileges it needs (INSERT, UPDATE, DELETE on the table)."
    return JdbcStatementError(
        f"{operator}: PostgreSQL cannot run the sink's statement: {database_message(error, password)}\n"
        f"  statement: {scrub(statement, password)}\n"
        f"Fix the statement or the table.{hint}",
        operator,
    )


def connection_failure(
    operator: str, where: str, user: str | None, attempts: int, error: BaseException, password: str | None
) -> JdbcConnectionError:
    """The error that fails a job whose sink could not connect in ``attempts`` attempts (see
    :class:`JdbcConnectionError`); ``where`` is the URL without its password."""
    text = scrub(" ".join(str(error).split()), password)
    state = sqlstate(error)
    tried = f"{attempts} attempt" + ("s" if attempts != 1 else "")
    head = f"{operator}: cannot connect to PostgreSQL at {where} as user {user!r} ({tried}): {text}"
    lowered = text.lower()
    if state in CREDENTIAL_STATES or any(t in lowered for t in CREDENTIAL_TEXTS):
        advice = (
            "PostgreSQL refused the credentials: check the user name and password (with_user_name and "
            "with_password, or the URL's user and password), and that the server lets this user in from here "
            "(pg_hba.conf)."
        )
    elif state == "3D000" or ("database" in lowered and "does not exist" in lowered):
        advice = "The database does not exist: create it (CREATE DATABASE) or name another one in the URL."
    elif "timeout" in lowered or "timed out" in lowered:
        advice = (
            "The server did not answer in time: check the host and port in the URL and that nothing between "
            "blocks them; with_connection_check_timeout_seconds sets how long a connection may take."
        )
    else:
        advice = (
            "Check that the server runs and accepts TCP connections on that host and port (listen_addresses, "
            "port), and that the URL names them; JdbcExecutionOptions' max_retries sets how often the sink tries."
        )
    return JdbcConnectionError(f"{head}\n{advice}", operator)
