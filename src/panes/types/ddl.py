"""Spark DDL column lists to Arrow schemas and back: :func:`parse_ddl`, :func:`to_ddl`, :func:`normalize_type`.

A DDL column list is ``name type [NOT NULL] [COMMENT 'text']`` separated by commas, as Spark's
``StructType.fromDDL`` reads it, for example ``"user STRING, n BIGINT NOT NULL, tags ARRAY<STRING>,
m MAP<STRING, DOUBLE>, s STRUCT<a: INT, b STRING>, `odd name` DECIMAL(10,2) COMMENT 'x'"``. Type names
are case-insensitive; names are kept as written, and a name that is not letters, digits and ``_`` is
written between backquotes (a backquote inside one is doubled). A colon between name and type is
optional. Comments are kept in the field's metadata under ``comment``, as Spark keeps them.

=========================================  =====================================================
Spark type                                  Arrow type
=========================================  =====================================================
``BOOLEAN``                                 ``bool_()``
``TINYINT`` / ``BYTE``                      ``int8()``
``SMALLINT`` / ``SHORT``                    ``int16()``
``INT`` / ``INTEGER``                       ``int32()``
``BIGINT`` / ``LONG``                       ``int64()``
``FLOAT`` / ``REAL``                        ``float32()``
``DOUBLE``                                  ``float64()``
``DECIMAL`` / ``DEC`` / ``NUMERIC``         ``decimal128(p, s)``; ``(p)`` is ``(p, 0)``, none is ``(10, 0)``
``STRING``, ``VARCHAR(n)``, ``CHAR(n)``     ``string()`` (the length is not kept nor enforced)
``BINARY``                                  ``binary()``
``DATE``                                    ``date32()``
``TIMESTAMP`` / ``TIMESTAMP_LTZ``           ``timestamp("us", tz="UTC")``
``TIMESTAMP_NTZ``                           ``timestamp("us")``
``TIME`` / ``TIME(6)``                      ``time64("us")`` (Spark 4.1's time of day)
``ARRAY<t>``, ``MAP<k, v>``                 ``list_(t)``, ``map_(k, v)`` (elements and values nullable)
``STRUCT<name[:] type, ...>``               ``struct([...])``
=========================================  =====================================================

Fields are nullable unless ``NOT NULL`` follows the type. A malformed string raises ``ValueError`` naming
the position (0-based, with a caret under the text) and what was expected there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pyarrow as pa

__all__ = ["normalize_type", "parse_ddl", "to_ddl"]

_SIMPLE: dict[str, pa.DataType] = {
    "BOOLEAN": pa.bool_(),
    "TINYINT": pa.int8(),
    "BYTE": pa.int8(),
    "SMALLINT": pa.int16(),
    "SHORT": pa.int16(),
    "INT": pa.int32(),
    "INTEGER": pa.int32(),
    "BIGINT": pa.int64(),
    "LONG": pa.int64(),
    "FLOAT": pa.float32(),
    "REAL": pa.float32(),
    "DOUBLE": pa.float64(),
    "STRING": pa.string(),
    "BINARY": pa.binary(),
    "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us", tz="UTC"),
    "TIMESTAMP_LTZ": pa.timestamp("us", tz="UTC"),
    "TIMESTAMP_NTZ": pa.timestamp("us"),
}
_DECIMAL = ("DECIMAL", "DEC", "NUMERIC")
_SIZED_STRING = ("VARCHAR", "CHAR")
_KNOWN = sorted([*_SIMPLE, *_DECIMAL, *_SIZED_STRING, "TIME", "ARRAY", "MAP", "STRUCT"])
_MAX_PRECISION = 38
_TOKEN = re.compile(r"\s*(?:(?P<word>\w+)|(?P<quoted>`)|(?P<string>['\"])|(?P<punct>[<>(),:])|(?P<other>\S))")
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_UNESCAPE = {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}
_ESCAPE = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0"}


@dataclass(frozen=True)
class _Token:
    kind: str  # "word", "name" (backquoted), "string", "punct", "other" or "end"
    text: str
    pos: int


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while True:
        match = _TOKEN.match(text, pos)
        if match is None:  # only whitespace is left
            tokens.append(_Token("end", "", len(text)))
            return tokens
        kind = match.lastgroup or "other"
        start = match.start(kind)
        if kind in ("word", "punct", "other"):
            tokens.append(_Token(kind, match.group(kind), start))
            pos = match.end()
        elif kind == "quoted":
            value, pos = _backquoted(text, start)
            tokens.append(_Token("name", value, start))
        else:
            value, pos = _string_literal(text, start)
            tokens.append(_Token("string", value, start))


def _backquoted(text: str, start: int) -> tuple[str, int]:
    out: list[str] = []
    pos = start + 1
    while pos < len(text):
        if text[pos] == "`":
            if text.startswith("``", pos):
                out.append("`")
                pos += 2
                continue
            return "".join(out), pos + 1
        out.append(text[pos])
        pos += 1
    raise _error(text, start, "a closing ` for this name", "the end")


def _string_literal(text: str, start: int) -> tuple[str, int]:
    quote = text[start]
    out: list[str] = []
    pos = start + 1
    while pos < len(text):
        char = text[pos]
        if char == "\\" and pos + 1 < len(text):
            out.append(_UNESCAPE.get(text[pos + 1], text[pos + 1]))
            pos += 2
        elif char == quote:
            return "".join(out), pos + 1
        else:
            out.append(char)
            pos += 1
    raise _error(text, start, f"a closing {quote} for this string", "the end")


def _error(text: str, pos: int, expected: str, found: str) -> ValueError:
    return ValueError(f"invalid DDL at position {pos}: expected {expected}, found {found}\n  {text}\n  {' ' * pos}^")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.index = 0

    @property
    def token(self) -> _Token:
        return self.tokens[self.index]

    def fail(self, expected: str, token: _Token | None = None) -> ValueError:
        token = token or self.token
        found = "the end" if token.kind == "end" else repr(token.text)
        if token.kind == "name":
            found = f"`{token.text}`"
        elif token.kind == "string":
            found = f"the string {token.text!r}"
        return _error(self.text, token.pos, expected, found)

    def take(self) -> _Token:
        token = self.token
        self.index += 1
        return token

    def accept(self, punct: str) -> bool:
        if self.token.kind == "punct" and self.token.text == punct:
            self.index += 1
            return True
        return False

    def expect(self, punct: str, expected: str | None = None) -> None:
        if not self.accept(punct):
            raise self.fail(expected or f"'{punct}'")

    def keyword(self, word: str) -> bool:
        if self.token.kind == "word" and self.token.text.upper() == word:
            self.index += 1
            return True
        return False

    def integer(self, what: str) -> int:
        token = self.token
        if token.kind != "word" or not token.text.isdigit():
            raise self.fail(what)
        self.index += 1
        return int(token.text)

    def fields(self, closing: str | None) -> list[pa.Field]:
        """``name [:] type [NOT NULL] [COMMENT 'x']`` separated by commas, up to ``closing`` or the end."""
        fields: list[pa.Field] = []
        seen: set[str] = set()
        if self.at_close(closing):
            return fields
        while True:
            token = self.token
            if token.kind not in ("word", "name"):
                raise self.fail("a field name")
            if token.text in seen:
                raise _error(self.text, token.pos, "a new field name", f"{token.text!r} again")
            seen.add(token.text)
            self.index += 1
            self.accept(":")
            data_type = self.data_type()
            nullable = True
            if self.keyword("NOT"):
                if not self.keyword("NULL"):
                    raise self.fail("NULL after NOT")
                nullable = False
            metadata = None
            if self.keyword("COMMENT"):
                if self.token.kind != "string":
                    raise self.fail("a quoted comment after COMMENT")
                metadata = {"comment": self.take().text}
            fields.append(pa.field(token.text, data_type, nullable=nullable, metadata=metadata))
            if self.at_close(closing):
                return fields
            if not self.accept(","):
                end = "'>'" if closing else "the end"
                raise self.fail(f"',' or {end} after the type of {token.text!r}")

    def at_close(self, closing: str | None) -> bool:
        if closing is None:
            return self.token.kind == "end"
        return self.accept(closing)

    def data_type(self) -> pa.DataType:
        token = self.token
        if token.kind != "word" or token.text.isdigit():
            raise self.fail("a type name")
        self.index += 1
        name = token.text.upper()
        if name in _SIMPLE:
            return _SIMPLE[name]
        if name in _DECIMAL:
            return self.decimal()
        if name in _SIZED_STRING:
            self.expect("(", f"'(' and a length after {name}")
            if self.integer(f"the length of {name}") < 1:
                raise self.fail(f"a length of {name} of at least 1", self.tokens[self.index - 1])
            self.expect(")")
            return pa.string()
        if name == "TIME":
            if self.accept("("):
                if self.integer("the precision of TIME") != 6:
                    raise self.fail("TIME(6): panes holds times in microseconds", self.tokens[self.index - 1])
                self.expect(")")
            return pa.time64("us")
        if name == "ARRAY":
            self.expect("<", "'<' after ARRAY")
            element = self.data_type()
            self.expect(">", "'>' closing ARRAY<")
            return pa.list_(element)
        if name == "MAP":
            self.expect("<", "'<' after MAP")
            key = self.data_type()
            self.expect(",", "',' between the key and value types of MAP")
            value = self.data_type()
            self.expect(">", "'>' closing MAP<")
            return pa.map_(key, value)
        if name == "STRUCT":
            self.expect("<", "'<' after STRUCT")
            return pa.struct(self.fields(">"))
        raise self.fail(f"a type name (one of {', '.join(_KNOWN)})", token)

    def decimal(self) -> pa.DataType:
        precision, scale = 10, 0
        if self.accept("("):
            at = self.token
            precision = self.integer("the precision of DECIMAL")
            if not 1 <= precision <= _MAX_PRECISION:
                raise self.fail(f"a DECIMAL precision in [1, {_MAX_PRECISION}]", at)
            if self.accept(","):
                at = self.token
                scale = self.integer("the scale of DECIMAL")
                if scale > precision:
                    raise self.fail(f"a DECIMAL scale in [0, {precision}] (at most the precision)", at)
            self.expect(")", "')' closing DECIMAL(")
        return pa.decimal128(precision, scale)


def parse_ddl(text: str) -> pa.Schema:
    """The Arrow schema of a Spark DDL column list (see the module docstring for the grammar and types).

    An empty (or blank) string is the empty schema. Field names must be unique within a column list or a
    ``STRUCT<...>``. Raises ``TypeError`` when ``text`` is not a ``str`` and ``ValueError`` when it is
    malformed, naming the position and what was expected there.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_ddl takes a DDL string, not {type(text).__name__}")
    return pa.schema(_Parser(text).fields(None))


def normalize_type(data_type: pa.DataType) -> pa.DataType:
    """The Arrow type of the Spark type ``data_type`` maps to, so equal Spark types have equal Arrow types.

    ``large_string`` becomes ``string``; ``large_binary`` and ``fixed_size_binary`` become ``binary``;
    ``large_list`` and ``fixed_size_list`` become ``list_``; ``decimal256`` with a precision up to 38
    becomes ``decimal128``; timestamps become microseconds, in UTC when they have a time zone (Spark's
    ``TIMESTAMP`` is an instant) and naive otherwise; ``time64`` becomes microseconds; a dictionary becomes
    its value type. Field names, nullability and metadata are kept (list items are named ``item``).

    Raises ``ValueError`` naming the type when it has no Spark equivalent (unsigned integers, ``float16``,
    ``date64``, ``time32``, durations, intervals, unions, ``null``, decimals over 38 digits ...).
    """
    t = data_type
    types = pa.types
    if types.is_struct(t):
        return pa.struct([_normalize_field(t.field(i)) for i in range(t.num_fields)])
    if types.is_map(t):
        key = _normalize_field(t.key_field)
        return pa.map_(key.with_name("key"), _normalize_field(t.item_field).with_name("value"))
    if types.is_list(t) or types.is_large_list(t) or types.is_fixed_size_list(t):
        return pa.list_(_normalize_field(t.value_field).with_name("item"))
    if types.is_dictionary(t):
        return normalize_type(t.value_type)
    if types.is_decimal(t):
        if t.precision > _MAX_PRECISION or t.scale < 0:
            raise ValueError(f"Arrow type {t} has no Spark SQL equivalent (DECIMAL allows 38 digits, scale >= 0)")
        return pa.decimal128(t.precision, t.scale)
    if types.is_timestamp(t):
        return pa.timestamp("us", tz=None if t.tz is None else "UTC")
    if types.is_time64(t):
        return pa.time64("us")
    if types.is_large_string(t):
        return pa.string()
    if types.is_large_binary(t) or types.is_fixed_size_binary(t):
        return pa.binary()
    for simple in _SIMPLE.values():
        if t == simple:
            return simple
    raise ValueError(f"Arrow type {t} has no Spark SQL equivalent")


def _normalize_field(field: pa.Field) -> pa.Field:
    return pa.field(field.name, normalize_type(field.type), nullable=field.nullable, metadata=field.metadata)


def to_ddl(schema_or_type: pa.Schema | pa.DataType) -> str:
    """The Spark DDL of an Arrow schema (a column list) or of one Arrow type (a type such as ``BIGINT``).

    The reverse of :func:`parse_ddl`: ``parse_ddl(to_ddl(schema)) == schema`` for every schema
    :func:`parse_ddl` returns, and comments (field metadata ``comment``) are written back. Other Arrow types
    are first mapped by :func:`normalize_type` (``large_string`` is ``STRING``, ...); what the DDL cannot
    say (a non-nullable list element or map value, other metadata) is left out. Raises ``ValueError``
    naming an Arrow type with no Spark equivalent and ``TypeError`` for anything but a schema or a type.
    """
    if isinstance(schema_or_type, pa.Schema):
        return ", ".join(_field_ddl(field, " ") for field in schema_or_type)
    if isinstance(schema_or_type, pa.DataType):
        return _type_ddl(normalize_type(schema_or_type))
    raise TypeError(f"to_ddl takes a pyarrow Schema or DataType, not {type(schema_or_type).__name__}")


def _field_ddl(field: pa.Field, separator: str) -> str:
    name = field.name if _PLAIN_NAME.fullmatch(field.name) else "`" + field.name.replace("`", "``") + "`"
    text = f"{name}{separator}{_type_ddl(normalize_type(field.type))}"
    if not field.nullable:
        text += " NOT NULL"
    comment = (field.metadata or {}).get(b"comment")
    if comment is not None:
        escaped = "".join(_ESCAPE.get(char, char) for char in comment.decode())
        text += f" COMMENT '{escaped}'"
    return text


def _type_ddl(t: pa.DataType) -> str:
    """The DDL of a type :func:`normalize_type` returned."""
    if pa.types.is_struct(t):
        return f"STRUCT<{', '.join(_field_ddl(t.field(i), ': ') for i in range(t.num_fields))}>"
    if pa.types.is_map(t):
        return f"MAP<{_type_ddl(t.key_type)}, {_type_ddl(t.item_type)}>"
    if pa.types.is_list(t):
        return f"ARRAY<{_type_ddl(t.value_type)}>"
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP" if t.tz else "TIMESTAMP_NTZ"
    if pa.types.is_time(t):
        return "TIME(6)"
    return _SIMPLE_NAMES[t]


_SIMPLE_NAMES: dict[pa.DataType, str] = {
    pa.bool_(): "BOOLEAN",
    pa.int8(): "TINYINT",
    pa.int16(): "SMALLINT",
    pa.int32(): "INT",
    pa.int64(): "BIGINT",
    pa.float32(): "FLOAT",
    pa.float64(): "DOUBLE",
    pa.string(): "STRING",
    pa.binary(): "BINARY",
    pa.date32(): "DATE",
}
