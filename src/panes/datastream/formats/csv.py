"""CSV rows (PyFlink's ``CsvRowDeserializationSchema`` and ``CsvRowSerializationSchema`` of
``pyflink.datastream.formats.csv``): each message one CSV line, read as a row of a declared type and written from
one.

``CsvRowDeserializationSchema.Builder(type_info)`` (then ``set_field_delimiter`` (default ``,``),
``set_quote_character`` (``"``), ``set_escape_character`` (none), ``set_array_element_delimiter`` (``;``),
``set_null_literal`` (none), ``set_allow_comments``, ``set_ignore_parse_errors``, ``build()``) reads one value
per declared field, in order: an empty value or the null literal is null; the text is converted to the field's
type as pyarrow casts text (``true``/``false``, integers, decimals, ISO-8601 times); an array field's elements
are separated by the array element delimiter. A trailing line break is ignored. A message with another count of
values, or a value that does not convert, raises ``ValueError`` naming the field (the source's bad record);
with ``set_ignore_parse_errors(True)`` it is skipped instead; with ``set_allow_comments(True)`` a message
starting with ``#`` is skipped. ``deserialize_many`` reads many messages with the same results, each field converted
for all of them at once (a source reading a batch of records uses it).

``CsvRowSerializationSchema.Builder(type_info)`` (``set_field_delimiter``, ``set_line_delimiter`` (default
``\\n``, ended every message with), ``set_array_element_delimiter``, ``set_quote_character`` or
``disable_quote_character``, ``set_escape_character``, ``set_null_literal`` (default: empty), ``build()``) writes a
value of the type as one line: booleans ``true``/``false``, times in ISO-8601 with a space, values quoted when
they hold the delimiter, the quote or a line break. A value that does not fit the type raises
``SchemaMismatchError``; a delimiter or quote that is not one character raises ``ValueError``.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from typing import Any

import pyarrow as pa

from panes.common.serialization import DeserializationSchema, SerializationSchema
from panes.datastream.formats.rows import as_mapping, row_record_type, value_of
from panes.types import RecordType, to_ddl

__all__ = ["CsvRowDeserializationSchema", "CsvRowSerializationSchema"]


def _one_char(name: str, value: str) -> str:
    if not isinstance(value, str) or len(value) != 1:
        raise ValueError(f"the {name} must be a single character, got {value!r}")
    return value


class CsvRowDeserializationSchema(DeserializationSchema):
    """Reads a CSV line as a row of ``record_type`` (see the module docstring; build it with :class:`Builder`)."""

    def __init__(
        self,
        record_type: RecordType,
        *,
        field_delimiter: str = ",",
        quote_character: str | None = '"',
        escape_character: str | None = None,
        array_element_delimiter: str = ";",
        null_literal: str | None = None,
        allow_comments: bool = False,
        ignore_parse_errors: bool = False,
    ) -> None:
        self.record_type = record_type
        self.field_delimiter = field_delimiter
        self.quote_character = quote_character
        self.escape_character = escape_character
        self.array_element_delimiter = array_element_delimiter
        self.null_literal = null_literal
        self.allow_comments = allow_comments
        self.ignore_parse_errors = ignore_parse_errors
        self._fields = list(record_type.columns())

    def deserialize(self, message: bytes) -> Any:
        """The row of ``message``; ``ValueError`` (why) when it is not one; ``None`` (skipped) for a comment or,
        with ``ignore_parse_errors``, a message that is not a row."""
        text = bytes(message).decode("utf-8")
        if self.allow_comments and text.startswith("#"):
            return None
        try:
            return self._read(text)
        except ValueError:
            if self.ignore_parse_errors:
                return None
            raise

    def deserialize_many(self, messages: list[bytes]) -> list[Any]:
        """What :meth:`deserialize` gives for each of ``messages``, in order: the row, ``None``, or the
        ``ValueError`` it would raise (returned, not raised). Each field is converted for all the messages at once;
        a batch where a conversion fails (or with a list field) is read message by message, for the same reasons."""
        found: list[Any] = [None] * len(messages)
        rows: list[list[str]] = []
        places: list[int] = []
        for index, message in enumerate(messages):
            text = bytes(message).decode("utf-8")
            if self.allow_comments and text.startswith("#"):
                continue
            try:
                rows.append(self._values(text))
                places.append(index)
            except ValueError as error:
                found[index] = None if self.ignore_parse_errors else error
        if not rows:
            return found
        try:
            columns = [self._columns_of(field, [row[i] for row in rows]) for i, field in enumerate(self._fields)]
        except ValueError:  # a value that does not convert: read them one by one, for its reason
            alone = super().deserialize_many([messages[index] for index in places])
            for index, value in zip(places, alone, strict=True):
                found[index] = value
            return found
        struct = pa.StructArray.from_arrays(columns, fields=self._fields)
        for index, value in zip(places, self.record_type.decode(struct), strict=True):
            found[index] = value
        return found

    def _columns_of(self, field: pa.Field, texts: list[str]) -> pa.Array:
        """One field of many rows as a column; ``ValueError`` when a value does not convert (or for a list field,
        which is converted row by row)."""
        if pa.types.is_list(field.type) or pa.types.is_large_list(field.type):
            raise ValueError("list fields are converted one by one")
        nulls = [
            None if text == "" or (self.null_literal is not None and text == self.null_literal) else text
            for text in texts
        ]
        try:
            if pa.types.is_boolean(field.type):
                lowered = [None if text is None else text.lower() for text in nulls]
                if any(text not in (None, "true", "false") for text in lowered):
                    raise ValueError(f"field {field.name!r} holds a value that is not a BOOLEAN")
                return pa.array([None if text is None else text == "true" for text in lowered], field.type)
            return pa.array(nulls, pa.string()).cast(field.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            raise ValueError(f"field {field.name!r} holds a value that is not a {to_ddl(field.type)}") from None

    def _values(self, text: str) -> list[str]:
        """The fields of the CSV line ``text`` as text; ``ValueError`` when it is not a line of as many fields."""
        line = text[:-2] if text.endswith("\r\n") else text.rstrip("\n\r") if text.endswith(("\n", "\r")) else text
        reader = csv.reader(
            [line],
            delimiter=self.field_delimiter,
            quotechar=self.quote_character,
            quoting=csv.QUOTE_MINIMAL if self.quote_character else csv.QUOTE_NONE,
            escapechar=self.escape_character,
            strict=True,
        )
        try:
            values = next(reader, [])
        except csv.Error as error:
            raise ValueError(f"not a CSV line ({error})") from None
        if len(values) != len(self._fields):
            raise ValueError(f"not a CSV row of {self._columns()}: {len(values)} values for {len(self._fields)} fields")
        return values

    def _read(self, text: str) -> Any:
        values = self._values(text)
        columns = [self._column(field, value) for field, value in zip(self._fields, values, strict=True)]
        return value_of(self.record_type, pa.table(columns, schema=pa.schema(self._fields)))

    def _column(self, field: pa.Field, text: str) -> pa.Array:
        if text == "" or (self.null_literal is not None and text == self.null_literal):
            return pa.nulls(1, field.type)
        try:
            if pa.types.is_list(field.type) or pa.types.is_large_list(field.type):
                items = [None if item == "" else item for item in text.split(self.array_element_delimiter)]
                elements = pa.array(items, pa.string()).cast(field.type.value_type)
                return pa.array([elements.to_pylist()], field.type)
            if pa.types.is_boolean(field.type):
                if text.lower() not in ("true", "false"):
                    raise pa.ArrowInvalid(text)
                return pa.array([text.lower() == "true"], field.type)
            return pa.array([text], pa.string()).cast(field.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            raise ValueError(f"field {field.name!r}: {text!r} is not a {to_ddl(field.type)}") from None

    def _columns(self) -> str:
        return ", ".join(f"{field.name} {to_ddl(field.type)}" for field in self._fields)

    def get_produced_type(self) -> RecordType:
        return self.record_type

    def __repr__(self) -> str:
        return f"CsvRowDeserializationSchema({self.record_type.ddl()})"

    class Builder:
        """Builds a :class:`CsvRowDeserializationSchema` of rows of ``type_info`` (``TypeError`` without one)."""

        def __init__(self, type_info: Any) -> None:
            self._record_type = row_record_type(type_info, "CsvRowDeserializationSchema")
            self._options: dict[str, Any] = {}

        def set_field_delimiter(self, delimiter: str) -> CsvRowDeserializationSchema.Builder:
            self._options["field_delimiter"] = _one_char("field delimiter", delimiter)
            return self

        def set_allow_comments(self, allow_comments: bool) -> CsvRowDeserializationSchema.Builder:
            self._options["allow_comments"] = bool(allow_comments)
            return self

        def set_array_element_delimiter(self, delimiter: str) -> CsvRowDeserializationSchema.Builder:
            if not delimiter:
                raise ValueError("the array element delimiter must not be empty")
            self._options["array_element_delimiter"] = delimiter
            return self

        def set_quote_character(self, c: str) -> CsvRowDeserializationSchema.Builder:
            self._options["quote_character"] = _one_char("quote character", c)
            return self

        def set_escape_character(self, c: str) -> CsvRowDeserializationSchema.Builder:
            self._options["escape_character"] = _one_char("escape character", c)
            return self

        def set_null_literal(self, null_literal: str) -> CsvRowDeserializationSchema.Builder:
            self._options["null_literal"] = null_literal
            return self

        def set_ignore_parse_errors(self, ignore_parse_errors: bool) -> CsvRowDeserializationSchema.Builder:
            self._options["ignore_parse_errors"] = bool(ignore_parse_errors)
            return self

        def build(self) -> CsvRowDeserializationSchema:
            return CsvRowDeserializationSchema(self._record_type, **self._options)


def _csv_text(value: Any, array_delimiter: str, null_literal: str) -> str:
    if value is None:
        return null_literal
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (list, tuple)):
        return array_delimiter.join(_csv_text(item, array_delimiter, null_literal) for item in value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


class CsvRowSerializationSchema(SerializationSchema):
    """Writes a row of ``record_type`` as one CSV line (see the module docstring; build it with
    :class:`Builder`)."""

    def __init__(
        self,
        record_type: RecordType,
        *,
        field_delimiter: str = ",",
        line_delimiter: str = "\n",
        array_element_delimiter: str = ";",
        quote_character: str | None = '"',
        escape_character: str | None = None,
        null_literal: str = "",
    ) -> None:
        self.record_type = record_type
        self.field_delimiter = field_delimiter
        self.line_delimiter = line_delimiter
        self.array_element_delimiter = array_element_delimiter
        self.quote_character = quote_character
        self.escape_character = escape_character
        self.null_literal = null_literal

    def serialize(self, element: Any) -> bytes:
        fields = as_mapping(self.record_type, element)
        out = io.StringIO()
        writer = csv.writer(
            out,
            delimiter=self.field_delimiter,
            quotechar=self.quote_character,
            quoting=csv.QUOTE_MINIMAL if self.quote_character else csv.QUOTE_NONE,
            escapechar=self.escape_character,
            lineterminator=self.line_delimiter,
        )
        writer.writerow(
            [_csv_text(value, self.array_element_delimiter, self.null_literal) for value in fields.values()]
        )
        return out.getvalue().encode("utf-8")

    def __repr__(self) -> str:
        return f"CsvRowSerializationSchema({self.record_type.ddl()})"

    class Builder:
        """Builds a :class:`CsvRowSerializationSchema` of rows of ``type_info`` (``TypeError`` without one)."""

        def __init__(self, type_info: Any) -> None:
            self._record_type = row_record_type(type_info, "CsvRowSerializationSchema")
            self._options: dict[str, Any] = {}

        def set_field_delimiter(self, c: str) -> CsvRowSerializationSchema.Builder:
            self._options["field_delimiter"] = _one_char("field delimiter", c)
            return self

        def set_line_delimiter(self, delimiter: str) -> CsvRowSerializationSchema.Builder:
            if delimiter not in ("\n", "\r", "\r\n", ""):
                raise ValueError(f"the line delimiter must be '\\n', '\\r', '\\r\\n' or '', got {delimiter!r}")
            self._options["line_delimiter"] = delimiter
            return self

        def set_array_element_delimiter(self, delimiter: str) -> CsvRowSerializationSchema.Builder:
            if not delimiter:
                raise ValueError("the array element delimiter must not be empty")
            self._options["array_element_delimiter"] = delimiter
            return self

        def disable_quote_character(self) -> CsvRowSerializationSchema.Builder:
            self._options["quote_character"] = None
            return self

        def set_quote_character(self, c: str) -> CsvRowSerializationSchema.Builder:
            self._options["quote_character"] = _one_char("quote character", c)
            return self

        def set_escape_character(self, c: str) -> CsvRowSerializationSchema.Builder:
            self._options["escape_character"] = _one_char("escape character", c)
            return self

        def set_null_literal(self, s: str) -> CsvRowSerializationSchema.Builder:
            self._options["null_literal"] = s
            return self

        def build(self) -> CsvRowSerializationSchema:
            return CsvRowSerializationSchema(self._record_type, **self._options)
