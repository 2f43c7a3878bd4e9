"""Upserting many rows at once through a staging table: ``COPY`` (binary) into a temporary table, then one
``INSERT ... SELECT ... ON CONFLICT``. The database then does one statement's work instead of one per row, which
is about twice as fast as ``executemany`` of the upsert from a few hundred rows on.

It must store exactly what the row-by-row upsert stores, so it is taken only where it does:

- every column is of a type in :data:`NATURAL` and every value of a column is ``None`` or of that type's natural
  Python type (an ``int`` for ``bigint``, a ``str`` for ``text``, an aware ``datetime`` for ``timestamptz``, ...):
  psycopg then writes the value in the column's own binary form, as the database would convert the statement's
  parameter. A value of another type (a ``float`` for a ``numeric``, a naive ``datetime`` for ``timestamptz``),
  a column of another type (arrays, enums, domains, ``json``) or a table the database does not describe sends
  the rows one statement each, as before;
- the rows' keys are distinct (the caller reduced them to each key's latest change);
- anything the database or psycopg refuses in it (a value too long, a constraint, a row whose keys the database
  holds equal though Python does not, a missing ``TEMP`` privilege) rolls the attempt back to its savepoint and
  the rows go one statement each, where a refused row is found with its own reason. Only a lost connection
  propagates.

The staging table (``pg_temp``, one per sink table and connection) copies the table's columns and keeps no rows
past a send (emptied after each) or a transaction (``ON COMMIT DELETE ROWS``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from panes.connectors.postgres.failures import is_connection_problem, sqlstate
from panes.connectors.postgres.statements import UpsertStatements, quote_name

if TYPE_CHECKING:
    import psycopg

MIN_ROWS = 200
"""Fewer rows than this go one statement each (the staging table's own statements cost more than they save)."""


def _aware(value: Any) -> bool:
    return isinstance(value, dt.datetime) and value.tzinfo is not None


def _naive(value: Any) -> bool:
    return isinstance(value, dt.datetime) and value.tzinfo is None


def _jsonb(value: Any) -> bool:
    from psycopg.types.json import Jsonb

    return isinstance(value, Jsonb)


NATURAL: dict[str, Callable[[Any], bool]] = {
    "int2": lambda v: type(v) is int,
    "int4": lambda v: type(v) is int,
    "int8": lambda v: type(v) is int,
    "float8": lambda v: type(v) is float,
    "numeric": lambda v: type(v) is int or isinstance(v, decimal.Decimal),
    "text": lambda v: type(v) is str,
    "varchar": lambda v: type(v) is str,
    "bpchar": lambda v: type(v) is str,
    "bool": lambda v: type(v) is bool,
    "bytea": lambda v: type(v) is bytes,
    "date": lambda v: type(v) is dt.date,
    "timestamp": _naive,
    "timestamptz": _aware,
    "jsonb": _jsonb,
}
"""The column types (``pg_type.typname``) the staged upsert writes, each with the test of its values' natural
Python type (``None`` is always taken)."""

WIRE = {"bpchar": "text"}
"""Column types written in another type's binary form, the same bytes (psycopg has no binary writer of its own for
them): ``char(n)`` as ``text``, which the column's receive function pads and checks as an ``INSERT`` does."""

COLUMN_TYPES = (
    "SELECT a.attname, t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
    "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped"
)


class StagedUpserts:
    """The staged upsert of one sink's :class:`UpsertStatements` (see the module docstring)."""

    def __init__(self, statements: UpsertStatements) -> None:
        self.statements = statements
        digest = hashlib.blake2b(statements.table.encode(), digest_size=6).hexdigest()
        self.stage = f"pg_temp.panes_stage_{digest}"
        self.types: list[str] | None = None
        """The columns' type names, in the statement's order (read once); ``None`` before."""
        self.usable = True
        """False once the database said the staged upsert cannot work here (a column it cannot write, no
        ``TEMP`` privilege): every send then goes one statement per row."""

    def send(self, connection: psycopg.Connection[Any], rows: Sequence[tuple[Any, ...]]) -> bool:
        """Upsert ``rows`` (parameters of the upsert, keys distinct) in the open transaction; whether it did.
        ``False``: nothing was written (not taken, or rolled back), send them one statement each."""
        if not self.usable or len(rows) < MIN_ROWS:
            return False
        types = self._column_types(connection)
        if types is None or not self._natural(types, rows):
            return False
        columns = ", ".join(quote_name(c) for c in self.statements.columns)
        try:
            with connection.transaction(), connection.cursor() as cursor:
                cursor.execute(
                    f"CREATE TEMP TABLE IF NOT EXISTS {self.stage} ON COMMIT DELETE ROWS AS "
                    f"SELECT {columns} FROM {self.statements.table} WITH NO DATA"
                )
                with cursor.copy(f"COPY {self.stage} ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
                    copy.set_types([WIRE.get(t, t) for t in types])
                    for row in rows:
                        copy.write_row(row)
                cursor.execute(self.statements.upsert_from(self.stage))
                cursor.execute(f"TRUNCATE {self.stage}")
        except Exception as error:
            if is_connection_problem(error):
                raise
            if (sqlstate(error) or "")[:2] == "42":
                self.usable = False  # not allowed or not possible here (a privilege, a type): it will not be
            return False
        return True

    def _column_types(self, connection: psycopg.Connection[Any]) -> list[str] | None:
        if self.types is None:
            try:
                with connection.transaction():
                    found = dict(connection.execute(COLUMN_TYPES, (self.statements.table,)).fetchall())
            except Exception as error:
                if is_connection_problem(error):
                    raise
                found = {}
            types = [found.get(column) for column in self.statements.columns]
            if any(t not in NATURAL for t in types):
                self.usable = False
                return None
            self.types = [str(t) for t in types]
        return self.types

    @staticmethod
    def _natural(types: list[str], rows: Sequence[tuple[Any, ...]]) -> bool:
        for position, name in enumerate(types):
            fits = NATURAL[name]
            for row in rows:
                value = row[position]
                if value is not None and not fits(value):
                    return False
        return True
