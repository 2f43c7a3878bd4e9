"""How values become bytes and back (PyFlink's ``pyflink.common.serialization``): what a connector that moves bytes
(Kafka) is given to read and write its records.

- :class:`DeserializationSchema`: ``deserialize(message: bytes)`` gives the value of one message; raising (any
  exception) means the message cannot be read, which the connector reports as a bad record of its source.
- :class:`SerializationSchema`: ``serialize(value)`` gives the bytes of one message.
- :class:`SimpleStringSchema` (text in a charset, UTF-8 by default) and :class:`ByteArraySchema` (the bytes as they
  are) are both.
- :class:`RowFieldExtractorSchema` (a ``SerializationSchema``) writes one field of a row, which holds its bytes
  already: a Kafka record's key from one field and its value from another.

JSON, CSV and Avro rows are in ``panes.datastream.formats.json``, ``.csv`` and ``.avro``, as in PyFlink.

``Encoder`` (the row format of a file sink) is re-exported from ``panes.connectors.file_system``, where panes
keeps it. Schemas are plain Python objects: no Java class behind them, nothing to configure but their
arguments.
"""

from __future__ import annotations

import codecs
from abc import ABC, abstractmethod
from typing import Any

from panes.connectors.file_system import Encoder
from panes.types import RecordType, Row, Types

__all__ = [
    "ByteArraySchema",
    "DeserializationSchema",
    "Encoder",
    "RowFieldExtractorSchema",
    "SerializationSchema",
    "SimpleStringSchema",
]


class DeserializationSchema(ABC):
    """Turns the bytes of a message into a value (Flink's ``DeserializationSchema``)."""

    @abstractmethod
    def deserialize(self, message: bytes) -> Any:
        """The value of ``message``; raise (any exception, its message saying why) when it is not one."""

    def deserialize_many(self, messages: list[bytes]) -> list[Any]:
        """What :meth:`deserialize` gives for each of ``messages``, in order: the value, or the exception it raises
        (returned, not raised). This one reads them one by one; a schema that reads many at once faster overrides it
        (JSON and CSV rows), and a source hands it each batch of records it fetched."""
        found: list[Any] = []
        for message in messages:
            try:
                found.append(self.deserialize(message))
            except Exception as error:
                found.append(error)
        return found

    def is_end_of_stream(self, next_element: Any) -> bool:
        """Whether ``next_element`` ends the stream (Flink's; panes' sources do not ask it): ``False``."""
        return False

    def get_produced_type(self) -> RecordType | None:
        """The type of the values (``None``: Python objects of no declared type)."""
        return None


class SerializationSchema(ABC):
    """Turns a value into the bytes of a message (Flink's ``SerializationSchema``)."""

    @abstractmethod
    def serialize(self, element: Any) -> bytes:
        """The bytes of ``element``; raise when it cannot be written."""


def _charset(charset: str) -> str:
    """``charset`` as Python's codec name; ``LookupError`` (naming it) for one Python does not know."""
    try:
        return codecs.lookup(charset).name
    except LookupError:
        raise LookupError(f"unknown charset {charset!r}: give a name such as 'UTF-8' or 'ISO-8859-1'") from None


class SimpleStringSchema(SerializationSchema, DeserializationSchema):
    """Each message is a string in ``charset`` (default ``"UTF-8"``; Flink's ``SimpleStringSchema``).

    Reading bytes that are not valid in the charset raises ``UnicodeDecodeError`` (a bad record of the source);
    writing anything but a ``str`` raises ``TypeError`` (convert with ``map(str)`` first, as Java's would not
    compile). Raises ``LookupError`` for a charset Python does not know."""

    def __init__(self, charset: str = "UTF-8") -> None:
        self.charset = _charset(charset)

    def deserialize(self, message: bytes) -> str:
        return bytes(message).decode(self.charset)

    def serialize(self, element: Any) -> bytes:
        if not isinstance(element, str):
            raise TypeError(f"SimpleStringSchema writes strings, not {type(element).__name__}: {element!r}")
        return element.encode(self.charset)

    def get_produced_type(self) -> RecordType | None:
        return RecordType.of(Types.STRING())

    def __repr__(self) -> str:
        return f"SimpleStringSchema({self.charset!r})"


class ByteArraySchema(SerializationSchema, DeserializationSchema):
    """Each message is its bytes, as they are (Flink's ``ByteArraySchema``, ``byte[]``): ``bytes`` values;
    writing takes ``bytes``, ``bytearray`` or ``memoryview`` (else ``TypeError``)."""

    def deserialize(self, message: bytes) -> bytes:
        return bytes(message)

    def serialize(self, element: Any) -> bytes:
        if not isinstance(element, (bytes, bytearray, memoryview)):
            raise TypeError(f"ByteArraySchema writes bytes, not {type(element).__name__}: {element!r}")
        return bytes(element)

    def get_produced_type(self) -> RecordType | None:
        return RecordType.of(Types.PRIMITIVE_ARRAY(Types.BYTE()))

    def __repr__(self) -> str:
        return "ByteArraySchema()"


class RowFieldExtractorSchema(SerializationSchema):
    """Writes field ``field_index`` (from 0) of a row, which must be bytes already (Flink's
    ``RowFieldExtractorSchema``): as Flink's, a ``None`` row or a ``None`` field gives empty bytes, a row without
    that field raises ``IndexError``, a field that is not bytes ``TypeError`` (convert it in a ``map`` first). A
    row is a ``Row``, a tuple or a list (a row of a ``Types.ROW`` stream); ``ValueError`` for a negative index,
    as PyFlink's constructor."""

    def __init__(self, field_index: int) -> None:
        if isinstance(field_index, bool) or not isinstance(field_index, int):
            raise TypeError(f"field_index is the position of a field (an int), not {field_index!r}")
        if field_index < 0:
            raise ValueError(f"Field index must be non-negative, got: {field_index}")
        self.field_index = field_index

    def serialize(self, element: Any) -> bytes:
        if element is None:
            return b""
        if not isinstance(element, (Row, tuple, list)):
            raise TypeError(
                f"RowFieldExtractorSchema writes a field of a Row, not {type(element).__name__}: {element!r}"
            )
        if self.field_index >= len(element):
            raise IndexError(
                f"RowFieldExtractorSchema: field index {self.field_index} is out of range for a row of "
                f"{len(element)} field(s): {element!r}"
            )
        field = element[self.field_index]
        if field is None:
            return b""
        if not isinstance(field, (bytes, bytearray, memoryview)):
            raise TypeError(
                f"RowFieldExtractorSchema: the field at index {self.field_index} must be bytes, not "
                f"{type(field).__name__}: {field!r} (encode it in a map first)"
            )
        return bytes(field)

    def __repr__(self) -> str:
        return f"RowFieldExtractorSchema({self.field_index})"
