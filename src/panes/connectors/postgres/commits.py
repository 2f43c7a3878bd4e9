"""The commit table: one row per checkpoint a JDBC sink committed, written in the same transaction as the
checkpoint's rows, so a replay of that checkpoint finds it and writes nothing.

A row is ``(sink_id, run_id, checkpoint_id, subtask)`` — the sink step's uid, the run (an id each sink instance of
a job started afresh draws, kept in the job's snapshots: a job restored from a snapshot continues its run, a job
started afresh writes anew; on Spark a digest of the query's checkpoint location), the checkpoint (1, 2, ... per
run: each snapshot of the job, and its end; on Spark the micro-batch's id) and the sink's parallel instance — with
the number of rows the checkpoint brought and a digest of them (a replay must bring the same rows), the rows the
table refused in it when the runner keeps them (``refused``: the Spark runner's error output, so that a replayed
micro-batch gives them again; ``NULL`` otherwise) and when it was committed. The table is created when missing
(``CREATE TABLE IF NOT EXISTS``) in the sink's connection's schema, and a table an earlier panes made without the
``refused`` column gets it (:data:`LACKS_REFUSED`, :func:`add_refused`); rows of runs no snapshot or checkpoint
will restore can be deleted at any time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_COMMIT_TABLE = "panes_sink_commits"
"""The commit table's name unless a sink names another (``commit_table=``)."""


@dataclass(frozen=True)
class Marker:
    """What identifies one checkpoint of one sink instance in the commit table."""

    sink_id: str
    run_id: str
    checkpoint_id: int
    subtask: int

    def key(self) -> tuple[str, str, int, int]:
        return (self.sink_id, self.run_id, self.checkpoint_id, self.subtask)


def create_table(table: str) -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {table} ("
        "sink_id text NOT NULL, run_id text NOT NULL, checkpoint_id bigint NOT NULL, subtask integer NOT NULL, "
        "row_count bigint NOT NULL, digest text NOT NULL, refused bytea, "
        "committed_at timestamptz NOT NULL DEFAULT now(), "
        "PRIMARY KEY (sink_id, run_id, checkpoint_id, subtask))"
    )


LACKS_REFUSED = (
    "SELECT 1 WHERE to_regclass(%(table)s) IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_attribute "
    "WHERE attrelid = to_regclass(%(table)s) AND attname = 'refused' AND NOT attisdropped)"
)
"""One row when the commit table named by parameter ``table`` (as written in SQL) exists without the ``refused``
column (made by a panes before it), none otherwise. Asked before :func:`add_refused`, whose lock on the table
would wait for every open transaction holding a marker."""


def add_refused(table: str) -> str:
    """Bring a commit table made before the ``refused`` column up to date (its markers keep ``NULL``: no rows
    kept)."""
    return f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS refused bytea"


def find(table: str) -> str:
    """The committed row count, digest and refused rows of a marker (no row: not committed)."""
    return (
        f"SELECT row_count, digest, refused FROM {table} "
        "WHERE sink_id = %s AND run_id = %s AND checkpoint_id = %s AND subtask = %s"
    )


def insert(table: str) -> str:
    """Write a marker; returns no row when it was there already (another attempt committed it meanwhile)."""
    return (
        f"INSERT INTO {table} (sink_id, run_id, checkpoint_id, subtask, row_count, digest, refused) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING 1"
    )


@dataclass(frozen=True)
class Committed:
    """What the marker of a committed checkpoint holds: how many rows it brought, their digest, and the rows the
    table refused in it as its writer kept them (``None``: none kept)."""

    row_count: int
    digest: str
    refused: bytes | None = None


def committed(row: Any) -> Committed | None:
    """A :func:`find` result (``None``: not committed)."""
    if row is None:
        return None
    return Committed(int(row[0]), str(row[1]), None if row[2] is None else bytes(row[2]))
