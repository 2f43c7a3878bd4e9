"""The writer of one parallel instance of a JDBC sink: rows into PostgreSQL in transactions, one per checkpoint.

Exactly once (a sink with a commit table, the default). Rows are sent into an open transaction (in batches of
``batch_size``, or after ``batch_interval_ms``; an upsert sink's waiting rows reduced to each key's latest
change), and the transaction is committed when the job is snapshotted and
when it ends — each a *checkpoint*, numbered 1, 2, ... in the run — together with the checkpoint's marker in the
commit table (``commits``). The first send of a checkpoint looks for its marker: a replay of a checkpoint that was
committed (a job restored from a snapshot older than its last commit) writes nothing, and at its end checks that
it brought the same rows (count and digest) as the committed one, else fails with ``JdbcReplayError``. The rows
sent in the open transaction are kept until it commits, to send them again on a new connection when the connection
is lost; a commit whose answer was lost is settled by looking for the marker. Without a commit table
(``commit_table=None``) every send is committed at once (at least once: a replay writes its rows again).

A runner that replays checkpoints whose refused rows it must give again (the Spark runner's error output) sets
:attr:`PostgresWriter.keep_refused`: what it returns is kept with the checkpoint's marker, in the same transaction,
and a replay finds it in :attr:`PostgresWriter.replayed` after :meth:`PostgresWriter.flush`.

Failures: a row the table refuses goes to the sink's error output as an ``ErrorRecord`` with the database's
reason, or fails the job (``RefusedRowError``) naming the row and the constraint; a lost or refused connection is
tried again ``max_retries`` times on a new connection (waiting 0 s, 1 s, 2 s, ...), then fails the job with
``JdbcConnectionError`` saying what to check; a statement that cannot work fails it at once with
``JdbcStatementError``. The open transaction is rolled back when the job fails (``abort``).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from panes.connectors.postgres import commits
from panes.connectors.postgres.batches import Change, SqlBatches, UpsertBatches
from panes.connectors.postgres.failures import (
    JdbcReplayError,
    connection_failure,
    is_connection_problem,
    refusal_reason,
    refused_row,
    statement_failure,
)
from panes.connectors.postgres.options import JdbcConnectionOptions, JdbcExecutionOptions
from panes.connectors.postgres.rows import RowRefused, RowShape, named, positional
from panes.connectors.postgres.targets import SqlTarget, UpsertTarget
from panes.datastream.sinks import SinkWriter, WriterContext
from panes.elements import StreamRecord
from panes.errors import ErrorRecord
from panes.types import RecordType

if TYPE_CHECKING:
    import psycopg

T = TypeVar("T")


def _now() -> float:
    """Seconds of a monotonic clock: when rows waited ``batch_interval_ms``."""
    return time.monotonic()


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise ImportError(
            "the JDBC sink writes PostgreSQL through psycopg 3, which is not installed: pip install 'panes[postgres]' "
            "(or 'psycopg[binary]')"
        ) from None
    logger = logging.getLogger("psycopg")
    if not any(isinstance(f, _RefusedBatchNoise) for f in logger.filters):
        logger.addFilter(_RefusedBatchNoise())
    return psycopg


class _RefusedBatchNoise(logging.Filter):
    """Drops psycopg's warning that a batch's pipeline ended in error ("error ignored terminating ..."): a batch
    with a refused row ends so, and the writer handles the error itself (``batches``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("error ignored terminating")


class PostgresWriter(SinkWriter):
    """See the module docstring. Made by ``JdbcSink.create_writer``; the runner calls :meth:`open` before the first
    record."""

    def __init__(
        self,
        target: SqlTarget | UpsertTarget,
        connection: JdbcConnectionOptions,
        execution: JdbcExecutionOptions,
        commit_table: str | None,
        type_info: RecordType | None,
        subtask: int,
    ) -> None:
        self.target = target
        self.connection_options = connection
        self.execution = execution
        self.commit_table = commit_table
        self.type_info = type_info
        self.subtask = subtask
        self.run_id = uuid.uuid4().hex
        self.checkpoint = 1
        self.operator = f"JdbcSink ({subtask + 1})"
        self.sink_id = "sink"
        self.refuse: Callable[[StreamRecord[Any], ErrorRecord], None] | None = None
        self.connection: psycopg.Connection[Any] | None = None
        self.in_transaction = False
        self.replaying: commits.Committed | None = None
        self.keep_refused: Callable[[], bytes | None] | None = None
        """Called when a checkpoint commits: what its marker keeps of the rows refused in it (``None``: nothing);
        unset, nothing is kept."""
        self.canonical_values = False
        """Set by a runner whose values are decoded from Arrow columns of the rows' own type (a ``"dict"``-shaped
        type equal to the sink's row type): they are taken as rows without being conformed again."""
        self.before_commit: Callable[[], None] | None = None
        """Called with the checkpoint's rows and marker sent in its open transaction, just before it commits (the
        Spark runner's crash point ``jdbc_open``); unset, nothing is called."""
        self.replayed: commits.Committed | None = None
        """After :meth:`flush`: the marker the last checkpoint found committed before (a replay, which wrote
        nothing), ``None`` when it committed now or had nothing to commit."""
        self.pending: dict[Any, Change] = {}
        """The rows waiting to be sent, by what makes a row replace another (``batches``: an upsert's key, a plain
        statement's row number), in the order of their last change."""
        self.sent: list[Change] = []
        self.received = 0
        self.digest = hashlib.sha256()
        self.last_send = _now()
        self.batches: SqlBatches | UpsertBatches | None = None
        self._to_change: Callable[[StreamRecord[Any]], Change] | None = None

    # -- the runner's calls ------------------------------------------

    def open(self, context: WriterContext) -> None:
        """Bind the statement to the stream's rows (``ValueError`` when they cannot fit it), and connect (so an
        unreachable server or wrong credentials fail the job before it reads anything)."""
        _psycopg()
        self.operator = context.operator
        self.sink_id = context.sink_id
        self.refuse = context.refuse
        shape = RowShape(self.type_info if self.type_info is not None else context.record_type)
        make_row = shape.row_maker(self.canonical_values)
        target = self.target
        unfit: str | None = None
        try:
            if isinstance(target, SqlTarget):
                target.check(shape)
            statements = None if isinstance(target, SqlTarget) else target.bind(shape)
        except ValueError as error:
            unfit = f"{self.operator}: {error}"
        if unfit is not None:
            raise ValueError(unfit)
        if statements is None:
            assert isinstance(target, SqlTarget)
            self.batches = SqlBatches(target.psycopg_sql)
            count = target.parameters

            def plain(record: StreamRecord[Any]) -> Change:
                return Change(positional(make_row(record.value), count), False, record)

            self._to_change = plain
        else:
            self.batches = UpsertBatches(statements)
            columns = statements.columns

            def upsert(record: StreamRecord[Any]) -> Change:
                params, retract = named(make_row(record.value), columns)
                return Change(params, retract, record)

            self._to_change = upsert
        self._retrying(self._connect)

    def write(self, record: StreamRecord[Any]) -> None:
        assert self._to_change is not None, "open the writer first"
        refusal: str | None = None
        try:
            change = self._to_change(record)
        except RowRefused as error:
            refusal = f"{self.operator}: {error}"
        if refusal is not None:
            self._refused(record, refusal, "RowRefused", None)
            return
        self.received += 1
        self.digest.update(repr((change.params, change.retract)).encode())
        assert self.batches is not None
        key = self.batches.pending_key(change, self.received)
        self.pending.pop(key, None)  # a key's newer change replaces the waiting one, and moves to the end
        self.pending[key] = change
        size = self.execution.get_batch_size()
        interval = self.execution.get_batch_interval_ms()
        if (size > 0 and len(self.pending) >= size) or (interval > 0 and (_now() - self.last_send) * 1000 >= interval):
            self._retrying(self._send)

    def flush(self, end_of_input: bool) -> None:
        """Commit the checkpoint (send what waits; with a commit table, write its marker in the same transaction).
        A checkpoint that received nothing commits nothing (and is numbered all the same)."""
        self.replayed = None
        if self.commit_table is None:
            self._retrying(self._send)
        elif self.received or self.pending or self.sent:
            self._retrying(self._commit)
            self.replayed = self.replaying
        self._next_checkpoint()

    def abort(self) -> None:
        """Roll back the open transaction and forget what it held."""
        self.pending, self.sent = {}, []
        self._drop_connection()

    def close(self) -> None:
        self._drop_connection()

    def snapshot_state(self) -> dict[str, Any]:
        """The run and the next checkpoint (taken after :meth:`flush`)."""
        return {"run_id": self.run_id, "checkpoint": self.checkpoint}

    def restore_state(self, state: Any) -> None:
        self.run_id = str(state["run_id"])
        self.checkpoint = int(state["checkpoint"])
        self.pending, self.sent = {}, []
        self._reset_checkpoint()

    # -- connections and retries ------------------------------------------

    def _connect(self) -> None:
        if self.connection is not None:
            return
        psycopg = _psycopg()
        keywords = self.connection_options.connect_keywords()
        failure: Exception | None = None
        try:
            self.connection = psycopg.connect(autocommit=False, **keywords)
        except psycopg.ProgrammingError as error:
            failure = self._connection_failure(1, error)  # a keyword libpq does not know: no retry helps
        if failure is not None:
            raise failure  # (outside the except clause: the failure stands alone, without psycopg's error)
        self.in_transaction = False
        if self.commit_table is not None:
            self._create_commit_table()

    def _create_commit_table(self) -> None:
        assert self.connection is not None and self.commit_table is not None
        failure: Exception | None = None
        try:
            self.connection.execute(commits.create_table(self.commit_table))
            if self.connection.execute(commits.LACKS_REFUSED, {"table": self.commit_table}).fetchone() is not None:
                self.connection.execute(commits.add_refused(self.commit_table))
            self.connection.commit()
        except Exception as error:
            with contextlib.suppress(Exception):
                self.connection.rollback()
            if is_connection_problem(error):
                raise
            # another instance created it at the same moment: CREATE TABLE IF NOT EXISTS is not atomic in
            # PostgreSQL, the loser sees a unique violation (23505), the table (42P07) or its row type (42710:
            # 'type "panes_sink_commits" already exists', seen with two Spark writers of one sink)
            if getattr(error, "sqlstate", None) not in ("23505", "42P07", "42710"):
                failure = self._statement_failure(commits.create_table(self.commit_table), error)
        if failure is not None:
            raise failure

    def _drop_connection(self) -> None:
        connection, self.connection = self.connection, None
        self.in_transaction = False
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.close()  # an open transaction is rolled back

    def _retrying(self, action: Callable[[], T]) -> T:
        """``action()``, tried again on a new connection after a connection problem (see the module docstring)."""
        retries = self.execution.get_max_retries()
        attempt = 0
        while True:
            try:
                self._connect()
                return action()
            except Exception as error:
                # the job fails, or the connection is gone: the open transaction goes now
                self._drop_connection()
                failure = self._failure(error, attempt, retries)
            if failure is not None:
                # raised outside the except clause: a failure of the sink's own stands alone, without psycopg's
                # error as its context (its message has the database's)
                raise failure
            time.sleep(attempt)  # Flink's back-off: 0 s, 1 s, 2 s, ...
            attempt += 1

    def _failure(self, error: Exception, attempt: int, retries: int) -> Exception | None:
        """What ``error`` in attempt ``attempt`` (0, 1, ...) fails the job with, or ``None`` to try again."""
        if is_connection_problem(error):
            return self._connection_failure(attempt + 1, error) if attempt >= retries else None
        if isinstance(error, _psycopg().Error):
            return self._statement_failure(self._bookkeeping(), error)
        return error

    # -- sending and committing ------------------------------------------

    def _begin(self) -> bool:
        """Open the checkpoint's transaction when none is (looking for its marker); whether it is new."""
        if self.in_transaction:
            return False
        assert self.connection is not None
        self.in_transaction = True
        self.replaying = None
        if self.commit_table is not None:
            found = self.connection.execute(commits.find(self.commit_table), self._marker().key()).fetchone()
            self.replaying = commits.committed(found)
        return True

    def _send(self) -> None:
        """Send the waiting rows into the open transaction (the whole checkpoint's when it is new: after a lost
        connection); without a commit table, commit them."""
        assert self.connection is not None and self.batches is not None
        fresh = self._begin()
        if self.replaying is not None:
            self.pending, self.sent = {}, []
            return
        waiting = list(self.pending.values())
        changes = (self.sent + waiting) if fresh else waiting
        if not changes:
            return
        failure: Exception | None = None
        try:
            landed, refused = self.batches.send(self.connection, changes)
        except Exception as error:
            if is_connection_problem(error):
                raise
            failure = self._statement_failure(self.batches.statement_text(), error)
        if failure is not None:
            raise failure
        if self.commit_table is None:
            self.connection.commit()
            self.in_transaction = False
            self.sent = []
        else:
            self.sent = landed if fresh else self.sent + landed
        self.pending = {}
        self.last_send = _now()
        for change, refusal in refused:
            self._refused_by_table(change, refusal)

    def _commit(self) -> None:
        self._send()
        assert self.connection is not None and self.commit_table is not None
        digest = self.digest.hexdigest()
        if self.replaying is None:
            refused = None if self.keep_refused is None else self.keep_refused()
            inserted = self.connection.execute(
                commits.insert(self.commit_table), (*self._marker().key(), self.received, digest, refused)
            ).fetchone()
            if inserted is not None:
                if self.before_commit is not None:
                    self.before_commit()
                self.connection.commit()
                self.in_transaction = False
                return
            # another attempt committed this checkpoint meanwhile: what it holds counts
            self.connection.rollback()
            self.in_transaction = False
            self._begin()
        self.connection.rollback()
        self.in_transaction = False
        if self.replaying is None or (self.replaying.row_count, self.replaying.digest) != (self.received, digest):
            rows = "?" if self.replaying is None else self.replaying.row_count
            raise JdbcReplayError(
                f"{self.operator}: checkpoint {self.checkpoint} of run {self.run_id} was committed before with "
                f"{rows} rows, and its replay brought {self.received} other rows: the table holds the committed "
                "ones, and the replay's cannot be written exactly once. A replay must bring the same rows between "
                "the same snapshots (bounded input on the local runner does); restore the job's latest snapshot, "
                "or start it afresh (a new run) into a table cleared of this run's rows.",
                self.operator,
            )

    def _bookkeeping(self) -> str:
        """What the writer ran besides the rows' statement: the commit table's statements."""
        table = self.commit_table or commits.DEFAULT_COMMIT_TABLE
        return f"{commits.find(table)}; {commits.insert(table)}"

    def _marker(self) -> commits.Marker:
        return commits.Marker(self.sink_id, self.run_id, self.checkpoint, self.subtask)

    def _next_checkpoint(self) -> None:
        self.checkpoint += 1
        self._reset_checkpoint()

    def _reset_checkpoint(self) -> None:
        self.received = 0
        self.digest = hashlib.sha256()
        self.replaying = None
        self.sent = []

    # -- failures ------------------------------------------

    def _refused_by_table(self, change: Change, error: BaseException) -> None:
        password = self.connection_options.get_password()
        table = self.target.describe() if isinstance(self.target, UpsertTarget) else "the sink's statement"
        if self.refuse is None:
            raise refused_row(self.operator, table, change.record.value, error, password)
        reason = refusal_reason(self.operator, table, error, password)
        self._refused(change.record, reason, type(error).__name__, error)

    def _refused(self, record: StreamRecord[Any], reason: str, kind: str, error: BaseException | None) -> None:
        if self.refuse is None:
            from panes.errors import BadRecordError

            failure = BadRecordError(f"{reason}; the value: {record.value!r}")
            failure.operator = self.operator
            raise failure
        self.refuse(record, ErrorRecord(record.value, record.timestamp, reason, kind, self.operator))

    def _statement_failure(self, statement: str, error: BaseException) -> Exception:
        return statement_failure(self.operator, statement, error, self.connection_options.get_password())

    def _connection_failure(self, attempts: int, error: BaseException) -> Exception:
        options = self.connection_options
        return connection_failure(
            self.operator, options.display_url, options.get_user_name(), attempts, error, options.get_password()
        )

    def __repr__(self) -> str:
        return f"PostgresWriter({self.target.describe()}, {self.connection_options.display_url})"
