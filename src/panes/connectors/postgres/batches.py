"""Sending a batch of rows in the open transaction, finding the rows the table refuses.

A batch goes in one statement execution (``executemany``) inside a savepoint. When the database refuses a row
(``failures.is_refusal``), the savepoint is rolled back — the transaction and what it holds stay — and the batch
is sent again one row at a time, each in its own savepoint, so every row but the refused ones lands and each
refused row is known with the database's reason. Other errors propagate (a lost connection, a statement that
cannot work).

An upsert batch is first reduced to the last change of each key (a retraction followed by the new row of the
same key is the new row), then sent as deletes (keys whose last change is a retraction) and upserts; many upserts
go through a staging table where that stores the same (``staged``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from panes.connectors.postgres.failures import is_refusal
from panes.connectors.postgres.staged import StagedUpserts
from panes.connectors.postgres.statements import UpsertStatements
from panes.elements import StreamRecord

if TYPE_CHECKING:
    import psycopg


@dataclass(frozen=True)
class Change:
    """One row to send: its statement parameters, whether it is a retraction (upsert sinks), and the record it
    came from (for its error output)."""

    params: tuple[Any, ...]
    retract: bool
    record: StreamRecord[Any]


Refused = list[tuple[Change, BaseException]]


class SqlBatches:
    """Runs a user's statement once per row."""

    def __init__(self, sql: str) -> None:
        self.sql = sql

    def statement_text(self) -> str:
        return self.sql

    def pending_key(self, change: Change, number: int) -> Any:
        """What a waiting row is kept under: its number (``number``), as every row is sent."""
        return number

    def send(self, connection: psycopg.Connection[Any], changes: Sequence[Change]) -> tuple[list[Change], Refused]:
        """The changes that landed and the refused ones with their errors (see the module docstring)."""
        try:
            with connection.transaction(), connection.cursor() as cursor:
                cursor.executemany(self.sql, [change.params for change in changes])
            return list(changes), []
        except Exception as error:
            if not is_refusal(error):
                raise
        return _one_by_one(connection, changes, lambda change: (self.sql, change.params))


class UpsertBatches:
    """Upserts and deletes rows by key (see the module docstring)."""

    def __init__(self, statements: UpsertStatements) -> None:
        self.statements = statements
        self.keys = statements.key_positions()
        self.staged = StagedUpserts(statements)

    def statement_text(self) -> str:
        return self.statements.upsert

    def pending_key(self, change: Change, number: int) -> Any:
        """What a waiting row is kept under: its key (a newer change of the key replaces it)."""
        return self.key_of(change)

    def key_of(self, change: Change) -> Any:
        key = tuple(change.params[i] for i in self.keys)
        try:
            hash(key)
        except TypeError:
            return change  # an unhashable key (jsonb): not reduced
        return key

    def reduce(self, changes: Sequence[Change]) -> tuple[list[Change], bool]:
        """Each key's last change, in the order of the last changes; whether their keys are distinct (keys Python
        cannot hash, jsonb, are not reduced and may repeat)."""
        last: dict[Any, Change] = {}
        distinct = True
        for change in changes:
            key = self.key_of(change)
            distinct = distinct and key is not change
            last.pop(key, None)
            last[key] = change
        return list(last.values()), distinct

    def _statement(self, change: Change) -> tuple[str, tuple[Any, ...]]:
        if change.retract:
            return self.statements.delete, tuple(change.params[i] for i in self.keys)
        return self.statements.upsert, change.params

    def send(self, connection: psycopg.Connection[Any], changes: Sequence[Change]) -> tuple[list[Change], Refused]:
        reduced, distinct = self.reduce(changes)
        deletes = [self._statement(c)[1] for c in reduced if c.retract]
        upserts = [c.params for c in reduced if not c.retract]
        try:
            with connection.transaction(), connection.cursor() as cursor:
                if deletes:
                    cursor.executemany(self.statements.delete, deletes)
                if upserts and not (distinct and self.staged.send(connection, upserts)):
                    cursor.executemany(self.statements.upsert, upserts)
            return reduced, []
        except Exception as error:
            if not is_refusal(error):
                raise
        return _one_by_one(connection, reduced, self._statement)


def _one_by_one(
    connection: psycopg.Connection[Any], changes: Sequence[Change], statement: Any
) -> tuple[list[Change], Refused]:
    landed: list[Change] = []
    refused: Refused = []
    for change in changes:
        sql, params = statement(change)
        try:
            with connection.transaction():
                connection.execute(sql, params)
        except Exception as error:
            if not is_refusal(error):
                raise
            refused.append((change, error))
            continue
        landed.append(change)
    return landed, refused
