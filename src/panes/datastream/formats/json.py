"""JSON rows (PyFlink's ``pyflink.datastream.formats.json``): each message one JSON object, read as a row of a
declared type and written from one.

``JsonRowDeserializationSchema.builder().type_info(Types.ROW_NAMED([...], [...])).build()`` reads a message the
way panes reads a line of a JSON file source (``panes.datastream.text_files``): the declared fields in their
type's JSON form (a missing field or ``null`` is null, other fields are ignored, a ``TIMESTAMP`` may be an
ISO-8601 string); a message may span lines. The value is a ``Row`` for ``Types.ROW_NAMED`` (a ``dict`` for a
Spark DDL string). A message that is not such an object raises ``ValueError`` naming the field (the source's bad
record); ``fail_on_missing_field()`` also refuses an object without a declared field, and
``ignore_parse_errors()`` reads such a message as nothing (the source skips it, as Flink's returns ``null``).
:meth:`JsonRowDeserializationSchema.deserialize_many` reads many messages in one parse, with the same results
(a source reading a batch of records uses it: one JSON parse per batch, not per message).

``JsonRowSerializationSchema.builder().with_type_info(...).build()`` writes a value of the type (a ``Row``, a
``dict``, a tuple in field order) as one compact JSON object, fields in declared order: bytes as base64 (as
Jackson writes ``byte[]``), dates and times in ISO-8601, decimals as numbers. A value that does not fit the type
raises ``SchemaMismatchError``. Building either without a row type raises ``TypeError`` (as PyFlink), with a type
that is not a row of named fields ``ValueError``.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pyarrow as pa

from panes.common.serialization import DeserializationSchema, SerializationSchema
from panes.datastream.formats.rows import row_record_type, value_of
from panes.datastream.text_files import TextFormat
from panes.types import RecordType, Row

__all__ = ["JsonRowDeserializationSchema", "JsonRowSerializationSchema"]


class JsonRowDeserializationSchema(DeserializationSchema):
    """Reads a JSON object as a row of ``record_type`` (see the module docstring; build it with
    :meth:`builder`)."""

    def __init__(self, record_type: RecordType, fail_on_missing_field: bool = False, ignore_parse_errors: bool = False):
        self.record_type = record_type
        self.fail_on_missing_field = fail_on_missing_field
        self.ignore_parse_errors = ignore_parse_errors
        self._format = TextFormat("json", pa.schema(list(record_type.columns())))

    @staticmethod
    def builder() -> JsonRowDeserializationSchema.Builder:
        return JsonRowDeserializationSchema.Builder()

    def deserialize(self, message: bytes) -> Any:
        """The row of ``message``; ``ValueError`` (why) when it is not one, or ``None`` with
        ``ignore_parse_errors``."""
        try:
            return self._read(bytes(message))
        except ValueError:
            if self.ignore_parse_errors:
                return None
            raise

    def deserialize_many(self, messages: list[bytes]) -> list[Any]:
        """What :meth:`deserialize` gives for each of ``messages``, in order, read in one parse: the row, ``None``
        (``ignore_parse_errors``), or the ``ValueError`` it would raise (returned, not raised)."""
        found: list[Any] = [None] * len(messages)
        lines: list[bytes] = []
        places: list[int] = []
        for index, message in enumerate(messages):
            try:
                lines.append(self._line(bytes(message)))
                places.append(index)
            except ValueError as error:
                found[index] = None if self.ignore_parse_errors else error
        if not lines:
            return found
        table, bad = self._format.parse(b"\n".join(lines), "message")
        refused = {line.line - 1: line.reason for line in bad}
        if table.num_rows != len(lines) - len(refused):  # a line held several objects: read them one by one
            alone = super().deserialize_many([messages[index] for index in places])
            for index, value in zip(places, alone, strict=True):
                found[index] = value
            return found
        struct = pa.StructArray.from_arrays(
            [column.combine_chunks() for column in table.columns], fields=list(self.record_type.columns())
        )
        rows = iter(self.record_type.decode(struct))
        for position, index in enumerate(places):
            reason = refused.get(position)
            if reason is None:
                found[index] = next(rows)
            elif not self.ignore_parse_errors:
                found[index] = ValueError(reason)
        return found

    def _read(self, data: bytes) -> Any:
        table, bad = self._format.parse(self._line(data), "message")
        if bad:
            raise ValueError(bad[0].reason)
        return value_of(self.record_type, table)

    def _line(self, data: bytes) -> bytes:
        """``data`` as one line of JSON text (a message spanning lines re-written on one), checked for what the
        parser of lines does not check (``ValueError``: not an object, a missing field, nothing at all)."""
        if self.fail_on_missing_field or b"\n" in data or b"\r" in data:
            try:
                parsed = json.loads(data)
            except ValueError as error:
                raise ValueError(f"not JSON ({error})") from None
            if not isinstance(parsed, dict):
                raise ValueError(f"not a JSON object but {type(parsed).__name__ if parsed is not None else 'null'}")
            missing = [name for name in self.record_type.columns().names if name not in parsed]
            if self.fail_on_missing_field and missing:
                raise ValueError(f"field {missing[0]!r} is missing (fail_on_missing_field is set)")
            data = json.dumps(parsed, ensure_ascii=False).encode()
        if not data.strip():
            raise ValueError("an empty message is not a JSON object")
        return data

    def get_produced_type(self) -> RecordType:
        return self.record_type

    def __repr__(self) -> str:
        return f"JsonRowDeserializationSchema({self.record_type.ddl()})"

    class Builder:
        """Builds a :class:`JsonRowDeserializationSchema`: :meth:`type_info` is required."""

        def __init__(self) -> None:
            self._type_info: Any = None
            self._fail_on_missing_field = False
            self._ignore_parse_errors = False

        def type_info(self, type_info: Any) -> JsonRowDeserializationSchema.Builder:
            """The row type (``Types.ROW_NAMED``; its field names are the JSON properties read)."""
            self._type_info = type_info
            return self

        def fail_on_missing_field(self) -> JsonRowDeserializationSchema.Builder:
            """An object without one of the declared fields is a bad record (default: the field is null)."""
            self._fail_on_missing_field = True
            return self

        def ignore_parse_errors(self) -> JsonRowDeserializationSchema.Builder:
            """A message that is not a row is skipped instead of being a bad record."""
            self._ignore_parse_errors = True
            return self

        def build(self) -> JsonRowDeserializationSchema:
            """The schema; ``TypeError`` without a row type."""
            record_type = row_record_type(self._type_info, "JsonRowDeserializationSchema")
            return JsonRowDeserializationSchema(record_type, self._fail_on_missing_field, self._ignore_parse_errors)


def _json_value(value: Any) -> Any:
    """``value`` (a field of a conformed row) in the form ``json.dumps`` writes."""
    if isinstance(value, Row):
        return (
            {name: _json_value(item) for name, item in value.as_dict().items()}
            if value._fields
            else [_json_value(item) for item in value]
        )
    if isinstance(value, dict):
        return {str(name): _json_value(item) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(item) for item in value]
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dt.timedelta):
        return int(value / dt.timedelta(milliseconds=1))
    return value


_PLAIN = (int, str, float, bool, type(None))
"""Field values ``json.dumps`` writes as they are."""

_DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class JsonRowSerializationSchema(SerializationSchema):
    """Writes a row of ``record_type`` as one JSON object (see the module docstring; build it with
    :meth:`builder`)."""

    def __init__(self, record_type: RecordType) -> None:
        self.record_type = record_type
        self._names = tuple(record_type.columns().names)
        self._conform = record_type.conformer()

    @staticmethod
    def builder() -> JsonRowSerializationSchema.Builder:
        return JsonRowSerializationSchema.Builder()

    def serialize(self, element: Any) -> bytes:
        conformed = self._conform(element)
        if isinstance(conformed, dict):
            values: Any = (conformed.get(name) for name in self._names)
        elif isinstance(conformed, Row) and conformed._fields is not None:
            values = (conformed[name] for name in self._names)
        else:
            values = conformed
        encoded = {
            name: value if type(value) in _PLAIN else _json_value(value)
            for name, value in zip(self._names, values, strict=True)
        }
        return _DUMPS(encoded).encode()

    def __getstate__(self) -> dict[str, Any]:
        return {"record_type": self.record_type}  # the compiled conformer is made again where it is unpickled

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.record_type = state["record_type"]
        self._names = tuple(self.record_type.columns().names)
        self._conform = self.record_type.conformer()

    def __repr__(self) -> str:
        return f"JsonRowSerializationSchema({self.record_type.ddl()})"

    class Builder:
        """Builds a :class:`JsonRowSerializationSchema`: :meth:`with_type_info` is required."""

        def __init__(self) -> None:
            self._type_info: Any = None

        def with_type_info(self, type_info: Any) -> JsonRowSerializationSchema.Builder:
            """The row type (``Types.ROW_NAMED``; its field names are the JSON properties written)."""
            self._type_info = type_info
            return self

        def build(self) -> JsonRowSerializationSchema:
            """The schema; ``TypeError`` without a row type."""
            return JsonRowSerializationSchema(row_record_type(self._type_info, "JsonRowSerializationSchema"))
