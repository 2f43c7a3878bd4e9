"""PyFlink's JDBC connector (``pyflink.datastream.connectors.jdbc``) for PostgreSQL, on both runners.

- ``JdbcSink.sink(sql, type_info, connection_options, execution_options)`` runs ``sql`` — any DML with JDBC's ``?``
  parameters, ``INSERT ... ON CONFLICT ... DO UPDATE`` included — once per value, the value's columns as the
  parameters in order. ``type_info`` (PyFlink's ``RowTypeInfo``, or any type panes reads) checks the values and
  orders their columns; ``None`` takes the stream's declared type, and without one a value's own columns in order.
- ``JdbcSink.upsert_builder()`` (beyond PyFlink) keeps a table equal to the latest result per key: each row
  replaces the table's row of the same key columns (``INSERT ... ON CONFLICT (keys) DO UPDATE``), and a retraction
  (a ``retract=True`` row of a window in ``retracting_fired_panes()`` mode) not followed by a new row of its key
  deletes it, so after any run the table holds each window's latest pane. Its columns are the rows' (the stream's
  type's, less ``retract``; pane info too when the rows carry it, ``WindowRow(pane="pane")``) or those named.

Use either with ``stream.add_sink(sink)`` or ``stream.sink_to(sink, errors=tag)``. The URL must be PostgreSQL's
(``jdbc:postgresql://host:port/database``): panes writes PostgreSQL through psycopg (``pip install
'panes[postgres]'``), whatever driver a Flink job names (``org.postgresql.Driver``, checked, not loaded).

Guarantee: exactly once per checkpoint on the local runner. A sink's rows are committed in one transaction per
checkpoint (each ``LocalJob.snapshot()``, and the end of the job) together with a marker in a commit table
(``commit_table``, default ``panes_sink_commits``, created when missing); a replay of a committed checkpoint (the
job restored from an older snapshot) finds the marker and writes nothing. This holds for any statement, since a
checkpoint's statements run once; it needs replays to bring the same rows between the same snapshots (bounded
input on the local runner does; otherwise the sink fails with ``JdbcReplayError`` rather than write twice).
``commit_table=None``: no commit table, rows committed as sent (at least once: a replay writes them again,
harmless for an upsert, a duplicate for a plain ``INSERT``).

On the Spark runner: exactly once per micro-batch. Spark tasks write (never the driver), the sink's parallelism
``W`` of them per micro-batch (``add_sink(sink).set_parallelism(W)``, default 1): an upsert sink's rows spread by
their key columns, a plain statement's by row, each task's rows in stream order in one transaction with its marker
``(sink, run, micro-batch, task)`` in the commit table; a micro-batch replayed after a crash finds the markers and
writes nothing twice, and the rows the table refused in it, kept with the markers, reach the error output again.
See ``panes.spark.jdbc_sink``.

Failures: a row the table refuses (a constraint, a value too long, the wrong type) goes to the sink's error output
as an ``ErrorRecord`` with the database's message, or fails the job (``RefusedRowError``) naming the row and the
constraint; an unreachable server or refused credentials fail the job after ``max_retries`` with
``JdbcConnectionError``; a statement that cannot work (no such table or column, no unique constraint for the
upsert's keys) with ``JdbcStatementError``. The password never appears in ``repr``, ``panes explain`` or a message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from panes.connectors.postgres.commits import DEFAULT_COMMIT_TABLE
from panes.connectors.postgres.failures import (
    JdbcConnectionError,
    JdbcReplayError,
    JdbcSinkError,
    JdbcStatementError,
    RefusedRowError,
)
from panes.connectors.postgres.options import JdbcConnectionOptions, JdbcExecutionOptions
from panes.connectors.postgres.statements import check_table_name
from panes.connectors.postgres.targets import SqlTarget, UpsertTarget
from panes.datastream.sinks import SinkWriter, WriterSink
from panes.types import RecordType

__all__ = [
    "JdbcConnectionError",
    "JdbcConnectionOptions",
    "JdbcExecutionOptions",
    "JdbcReplayError",
    "JdbcSink",
    "JdbcSinkError",
    "JdbcStatementError",
    "JdbcUpsertSinkBuilder",
    "RefusedRowError",
]

_DEFAULT = object()


class JdbcSink(WriterSink):
    """A PostgreSQL sink (see the module docstring); build one with :meth:`sink` or :meth:`upsert_builder`.
    Both runners write it: the local runner once per checkpoint, the Spark runner once per micro-batch."""

    def __init__(
        self,
        target: SqlTarget | UpsertTarget,
        type_info: Any,
        connection_options: JdbcConnectionOptions,
        execution_options: JdbcExecutionOptions | None = None,
        commit_table: str | None = DEFAULT_COMMIT_TABLE,
    ) -> None:
        if not isinstance(connection_options, JdbcConnectionOptions):
            raise TypeError(
                "expected JdbcConnectionOptions (JdbcConnectionOptions.JdbcConnectionOptionsBuilder()...build()), "
                f"got {type(connection_options).__name__}"
            )
        if execution_options is None:
            execution_options = JdbcExecutionOptions.defaults()
        if not isinstance(execution_options, JdbcExecutionOptions):
            raise TypeError(
                "expected JdbcExecutionOptions (JdbcExecutionOptions.builder()...build()), "
                f"got {type(execution_options).__name__}"
            )
        if commit_table is not None:
            check_table_name(commit_table)
        self.target = target
        self.type_info: RecordType | None = None if type_info is None else RecordType.of(type_info)
        if isinstance(target, SqlTarget) and self.type_info is not None:
            from panes.connectors.postgres.rows import RowShape

            target.check(RowShape(self.type_info))
        if isinstance(target, UpsertTarget) and self.type_info is not None:
            from panes.connectors.postgres.rows import RowShape

            target.bind(RowShape(self.type_info))
        self.connection_options = connection_options
        self.execution_options = execution_options
        self.commit_table = commit_table

    @staticmethod
    def sink(
        sql: str,
        type_info: Any = None,
        jdbc_connection_options: JdbcConnectionOptions | None = None,
        jdbc_execution_options: JdbcExecutionOptions | None = None,
        *,
        commit_table: str | None = DEFAULT_COMMIT_TABLE,
    ) -> JdbcSink:
        """A sink running ``sql`` once per value (PyFlink's ``JdbcSink.sink``).

        ``sql``: a statement with one JDBC ``?`` per column of the values, in order (``??`` is a literal ``?``).
        ``type_info``: the values' type (``Types.ROW_NAMED(...)``, a Spark DDL string, ...; ``None``: the stream's
        declared type, else each value's own columns). ``jdbc_execution_options`` defaults to Flink's (batches of
        5000, 3 retries). ``commit_table``: the exactly-once commit table, ``None`` for none (see the module
        docstring). Raises ``ValueError`` for a statement without parameters, a parameter count other than the
        type's columns, or a malformed commit table name; ``TypeError`` for options of another kind.
        """
        if jdbc_connection_options is None:
            raise ValueError(
                "JdbcSink.sink needs connection options: "
                "JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url('jdbc:postgresql://...').build()"
            )
        return JdbcSink(SqlTarget.of(sql), type_info, jdbc_connection_options, jdbc_execution_options, commit_table)

    @staticmethod
    def upsert_builder() -> JdbcUpsertSinkBuilder:
        """The builder of an upsert sink (see :class:`JdbcUpsertSinkBuilder`)."""
        return JdbcUpsertSinkBuilder()

    def create_writer(self, subtask: int, parallelism: int) -> SinkWriter:
        from panes.connectors.postgres.writer import PostgresWriter

        return PostgresWriter(
            self.target, self.connection_options, self.execution_options, self.commit_table, self.type_info, subtask
        )

    def __repr__(self) -> str:
        return f"JdbcSink({self.target.describe()}, {self.connection_options.display_url})"


class JdbcUpsertSinkBuilder:
    """Builds an upsert :class:`JdbcSink`: a table kept equal to the latest row per key (see the module docstring).

    ``with_table(name)`` and ``with_key_columns(*names)`` are required: the table must have a primary key or a
    unique constraint on exactly those columns (for a window's result: the key, ``window_start``,
    ``window_end``), not null. ``with_columns(*names)``: the columns written, in any order (default: every column
    of the stream's type but ``retract``; required when the stream has no declared type). ``with_type_info``,
    ``with_connection_options`` (required), ``with_execution_options``, ``with_commit_table`` as for
    :meth:`JdbcSink.sink`. :meth:`build` raises ``ValueError`` for a missing table, keys or connection options, a
    malformed table name, repeated names, keys not among the columns, or columns not in ``type_info``.

    What each accumulation mode of a window leaves in the table: accumulating (the default) and retracting, each
    window's latest pane, its result over all its elements; retracting also deletes the row of a window that a
    later firing replaced under other keys (merged sessions). Discarding: each window's *last* pane, its result
    over the elements since the firing before it, not the window's total (a plain :meth:`JdbcSink.sink` with
    ``ON CONFLICT ... DO UPDATE SET n = t.n + EXCLUDED.n`` adds the panes up, exactly once).
    """

    def __init__(self) -> None:
        self._table: str | None = None
        self._keys: tuple[str, ...] = ()
        self._columns: tuple[str, ...] | None = None
        self._type_info: Any = None
        self._connection: JdbcConnectionOptions | None = None
        self._execution: JdbcExecutionOptions | None = None
        self._commit_table: str | None = DEFAULT_COMMIT_TABLE

    def with_table(self, table: str) -> JdbcUpsertSinkBuilder:
        """The table, as written in SQL: ``name`` or ``schema.name`` (quoted parts keep their case)."""
        self._table = table
        return self

    def with_key_columns(self, *columns: str) -> JdbcUpsertSinkBuilder:
        self._keys = _names(columns)
        return self

    def with_columns(self, *columns: str) -> JdbcUpsertSinkBuilder:
        self._columns = _names(columns)
        return self

    def with_type_info(self, type_info: Any) -> JdbcUpsertSinkBuilder:
        self._type_info = type_info
        return self

    def with_connection_options(self, options: JdbcConnectionOptions) -> JdbcUpsertSinkBuilder:
        self._connection = options
        return self

    def with_execution_options(self, options: JdbcExecutionOptions) -> JdbcUpsertSinkBuilder:
        self._execution = options
        return self

    def with_commit_table(self, table: str | None) -> JdbcUpsertSinkBuilder:
        """The exactly-once commit table (default ``panes_sink_commits``); ``None``: none (at least once)."""
        self._commit_table = table
        return self

    def build(self) -> JdbcSink:
        if self._table is None:
            raise ValueError("an upsert sink needs its table: with_table('clicks_per_minute')")
        if self._connection is None:
            raise ValueError(
                "an upsert sink needs connection options: with_connection_options("
                "JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url('jdbc:postgresql://...').build())"
            )
        target = UpsertTarget.of(self._table, self._keys, self._columns)
        return JdbcSink(target, self._type_info, self._connection, self._execution, self._commit_table)


def _names(columns: Sequence[Any]) -> tuple[str, ...]:
    if len(columns) == 1 and isinstance(columns[0], (list, tuple)):
        columns = columns[0]
    return tuple(columns)
