"""A stream's values as the parameters of a statement.

A value becomes a row of columns as every sink makes one (``panes.datastream.sinks.as_sink_row``: a dict's keys, a
``Row``'s or dataclass's fields, a tuple's positions ``_1, _2, ...``, any other value the column ``value``). With
a type (the sink's ``type_info``, else the stream's declared type) the row is first checked against it
(``RecordType.conform``, so a value that does not fit is refused with the reason) and its columns are the type's,
in the type's order; without one they are the row's own, in its order. Nested values (a struct, a map, a
``Row``) go as ``jsonb``; lists go as PostgreSQL arrays, the rest as psycopg adapts them (``int``, ``float``,
``str``, ``bytes``, ``bool``, ``Decimal``, ``datetime``, ``date``, ``None`` as NULL).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from panes.datastream.sinks import as_sink_row, sink_row_type
from panes.types import RecordType, Row
from panes.types.row import as_row
from panes.windowing.accumulation import RETRACT


class RowRefused(ValueError):
    """A value that cannot be made a row of the statement's parameters (the reason is the message)."""


@dataclass(frozen=True)
class RowShape:
    """How values become rows: ``record_type`` (``None``: untyped) and the column names when known before any
    value (the type's)."""

    record_type: RecordType | None

    @property
    def columns(self) -> tuple[str, ...] | None:
        if self.record_type is None:
            return None
        return tuple(f.name for f in sink_row_type(self.record_type).columns())

    def row_maker(self, canonical: bool = False) -> Callable[[Any], dict[str, Any]]:
        """A function of a value to its row (a dict of columns in order); it raises :class:`RowRefused`.
        ``canonical``: the values are known to be rows of :attr:`record_type` already (decoded from its Arrow
        columns, a ``"dict"``-shaped type), and are taken as they are."""
        if canonical and self.record_type is not None and self.record_type.shape == "dict":

            def as_decoded(value: Any) -> dict[str, Any]:
                return value  # type: ignore[no-any-return]

            return as_decoded
        if self.record_type is None:

            def untyped(value: Any) -> dict[str, Any]:
                return as_row(value)

            return untyped
        conform = sink_row_type(self.record_type).conformer()
        type_text = self.record_type.ddl()

        def typed(value: Any) -> dict[str, Any]:
            try:
                row = conform(as_sink_row(value))
            except Exception as error:
                raise RowRefused(f"the value does not fit the sink's type {type_text}: {error}") from None
            assert isinstance(row, dict)
            return row

        return typed


def parameter(value: Any) -> Any:
    """A column's value as psycopg takes it (nested values as ``jsonb``)."""
    if isinstance(value, (dict, Row)):
        from psycopg.types.json import Jsonb

        return Jsonb(_plain(value))
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, Row):
        return {k: _plain(v) for k, v in value.as_dict().items()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def positional(row: dict[str, Any], count: int) -> tuple[Any, ...]:
    """The parameters of a plain statement with ``count`` parameters: the row's columns in order.
    :class:`RowRefused` when the row has another number of columns."""
    if len(row) != count:
        raise RowRefused(
            f"the row has {len(row)} columns ({', '.join(row)}) and the statement {count} parameters (?): a row "
            "gives one value per parameter, in order"
        )
    return tuple(parameter(v) for v in row.values())


def named(row: dict[str, Any], columns: tuple[str, ...]) -> tuple[tuple[Any, ...], bool]:
    """The values of ``columns`` of an upsert sink's row, and whether the row is a retraction (its ``retract``
    column, from a retracting window). :class:`RowRefused` when a column is missing or ``retract`` is not a
    boolean."""
    missing = [c for c in columns if c not in row]
    if missing:
        raise RowRefused(f"the row has no column {', '.join(missing)} (it has {', '.join(row)})")
    retract = row.get(RETRACT, False)
    if not isinstance(retract, bool):
        raise RowRefused(f"the row's {RETRACT!r} column must be True or False, not {retract!r}")
    return tuple(parameter(row[c]) for c in columns), retract
