"""What a JDBC sink writes to: the user's statement (``SqlTarget``, PyFlink's ``JdbcSink.sink``) or a table kept equal
to the latest result per key (``UpsertTarget``), and each made ready for a stream's rows (``bind``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from panes.connectors.postgres.rows import RowShape
from panes.connectors.postgres.statements import UpsertStatements, translate_placeholders, upsert_statements
from panes.windowing.accumulation import RETRACT


@dataclass(frozen=True)
class SqlTarget:
    """A statement with JDBC ``?`` parameters, run once per row with the row's columns in order."""

    sql: str
    psycopg_sql: str
    parameters: int

    @staticmethod
    def of(sql: str) -> SqlTarget:
        """``ValueError`` for a statement without parameters or one that cannot be read (see
        ``statements.translate_placeholders``)."""
        translated, count = translate_placeholders(sql)
        if count == 0:
            raise ValueError(f"the statement has no parameter (?): each row must give it values, got {sql!r}")
        return SqlTarget(sql, translated, count)

    def check(self, shape: RowShape) -> None:
        """``ValueError`` when the stream's type has another number of columns than the statement has parameters."""
        columns = shape.columns
        if columns is not None and len(columns) != self.parameters:
            raise ValueError(
                f"the statement has {self.parameters} parameters (?) and the rows {len(columns)} columns "
                f"({', '.join(columns)}): give one ? per column, in order (the sink's type_info, or the stream's "
                f"type: {shape.record_type.ddl() if shape.record_type else ''})"
            )

    def describe(self) -> str:
        return " ".join(self.sql.split())


@dataclass(frozen=True)
class UpsertTarget:
    """A table whose row per key is replaced by each newer row of that key (``INSERT ... ON CONFLICT (keys) DO
    UPDATE``) and removed by a retraction (``DELETE``) not followed by a new row. ``columns``: the row's columns
    to write (``None``: all of the stream's type but ``retract``)."""

    table: str
    keys: tuple[str, ...]
    columns: tuple[str, ...] | None = None

    @staticmethod
    def of(table: str, keys: Sequence[str], columns: Sequence[str] | None) -> UpsertTarget:
        """``ValueError`` for a malformed table name, no keys, repeated names, keys not among ``columns``."""
        keys = tuple(keys)
        for name in (*keys, *(columns or ())):
            if not isinstance(name, str) or not name:
                raise ValueError(f"column names are non-empty strings, got {name!r}")
        if columns is not None:
            if RETRACT in columns:
                raise ValueError(f"{RETRACT!r} says whether a row is a retraction; it is not written as a column")
            upsert_statements(table, columns, keys)
        else:
            upsert_statements(table, keys, keys)
        return UpsertTarget(table, keys, None if columns is None else tuple(columns))

    def bind(self, shape: RowShape) -> UpsertStatements:
        """The statements for rows of ``shape``: ``ValueError`` when the columns are not known (untyped rows and no
        ``columns``) or a key is not among them."""
        columns = self.columns
        if columns is None:
            typed = shape.columns
            if typed is None:
                raise ValueError(
                    "the upsert sink writes named columns and the stream has no declared type: declare it "
                    "(output_type=..., a typed window result) or name the columns (with_columns(...))"
                )
            columns = tuple(c for c in typed if c != RETRACT)
        elif shape.columns is not None:
            missing = [c for c in columns if c not in shape.columns]
            if missing:
                raise ValueError(f"columns {missing} are not in the stream's type {shape.record_type!r}")
        return upsert_statements(self.table, columns, self.keys)

    def describe(self) -> str:
        return f"upsert into {self.table} by ({', '.join(self.keys)})"
