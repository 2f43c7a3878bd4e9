"""Avro rows (PyFlink's ``AvroRowSerializationSchema`` and ``AvroRowDeserializationSchema`` of
``pyflink.datastream.formats.avro``): each message one record in Avro's binary encoding, without a header or a
schema id (as Flink's schemas write and read it: what a producer and a consumer that agree on the schema
exchange), for the schema given as its JSON text (``avro_schema_string=``).

``AvroRowSerializationSchema(avro_schema_string=...)`` writes a row (a ``Row``, a tuple or a list: the record's
fields by position, as Flink converts a ``Row``; a ``dict`` by field name) as one record of the schema.
``AvroRowDeserializationSchema(avro_schema_string=...)`` reads one back as a ``Row`` of named fields, whose type
is the schema's as Flink's ``AvroSchemaConverter`` gives it: ``int`` ``INT``, ``long`` ``LONG``, ``string`` and
``enum`` ``STRING``, ``boolean``, ``float``, ``double``, ``bytes`` and ``fixed`` ``PRIMITIVE_ARRAY(BYTE)``,
``record`` ``ROW_NAMED``, ``array`` ``OBJECT_ARRAY``, ``map`` ``MAP(STRING, ...)``, a union of ``null`` and one
type that type (nullable); the logical types ``date`` ``SQL_DATE``, ``time-millis``/``time-micros``
``SQL_TIME``, ``timestamp-millis``/``timestamp-micros`` ``SQL_TIMESTAMP`` (UTC, without a zone) and ``decimal``
``BIG_DEC`` (a ``Decimal`` of the schema's scale).

Errors: a schema that is not valid Avro JSON, or holds a union of several non-null types (which Flink reads as
generic objects), raises ``ValueError`` when the schema is built; ``record_class=`` (a generated Java class)
raises ``ValueError`` (panes has no Java classes: give the schema's text); neither argument, ``TypeError`` (as
PyFlink). Writing a value that does not fit the schema raises ``TypeError`` or ``ValueError`` naming the field;
reading bytes that are not such a record raises ``ValueError`` (the source's bad record).
"""

from __future__ import annotations

import datetime as dt
import json
import struct
from decimal import Decimal
from typing import Any

from panes.common.serialization import DeserializationSchema, SerializationSchema
from panes.types import RecordType, Row, TypeInformation, Types

__all__ = ["AvroRowDeserializationSchema", "AvroRowSerializationSchema"]

PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
EPOCH = dt.datetime(1970, 1, 1)
EPOCH_DAY = dt.date(1970, 1, 1)


def _parse(text: str) -> Any:
    """The schema of ``text`` with every named type's reference replaced by its definition (a dict); raises
    ``ValueError`` for one that is not Avro."""
    if not isinstance(text, str):
        raise TypeError(f"avro_schema_string is the schema's JSON text, not {text!r}")
    try:
        raw = json.loads(text)
    except ValueError as error:
        raise ValueError(f"the Avro schema is not JSON: {error}") from None
    named: dict[str, Any] = {}

    def resolve(node: Any, namespace: str) -> Any:
        if isinstance(node, str):
            if node in PRIMITIVES:
                return {"type": node}
            full = node if "." in node else (f"{namespace}.{node}" if namespace else node)
            found = named.get(full, named.get(node))
            if found is None:
                raise ValueError(f"the Avro schema names the type {node!r}, which it does not define (before)")
            return found
        if isinstance(node, list):
            branches = [resolve(branch, namespace) for branch in node]
            concrete = [b for b in branches if b["type"] != "null"]
            if len(concrete) != 1 or len(branches) > 2:
                raise ValueError(
                    f"the Avro union {json.dumps(node)} is not a nullable type (null and one type): panes reads "
                    "only those, as typed values"
                )
            return {"type": "union", "branches": branches}
        if not isinstance(node, dict) or "type" not in node:
            raise ValueError(f"{json.dumps(node)} is not an Avro schema")
        kind = node["type"]
        if kind in ("record", "error", "enum", "fixed"):
            name = node.get("name")
            if not isinstance(name, str) or not name:
                raise ValueError(f"the Avro {kind} {json.dumps(node)} has no name")
            space = node.get("namespace", namespace) or ""
            full = name if "." in name or not space else f"{space}.{name}"
            made: dict[str, Any] = {"type": "record" if kind == "error" else kind, "name": full}
            named[full] = made
            if kind in ("record", "error"):
                fields = node.get("fields")
                if not isinstance(fields, list):
                    raise ValueError(f"the Avro record {full!r} has no list of fields")
                made["fields"] = [(field["name"], resolve(field["type"], space)) for field in fields]
            elif kind == "enum":
                made["symbols"] = list(node["symbols"])
            else:
                made["size"] = int(node["size"])
                made["logicalType"] = node.get("logicalType")
                made["scale"] = int(node.get("scale", 0))
            return made
        if kind == "array":
            return {"type": "array", "items": resolve(node["items"], namespace)}
        if kind == "map":
            return {"type": "map", "values": resolve(node["values"], namespace)}
        if isinstance(kind, (dict, list)) or kind not in PRIMITIVES:
            return resolve(kind, namespace)
        return {"type": kind, "logicalType": node.get("logicalType"), "scale": int(node.get("scale", 0))}

    schema = resolve(raw, "")
    if schema["type"] != "record":
        raise ValueError(f"an Avro row schema is a record, not {schema['type']!r}")
    return schema


def _type_info(schema: dict[str, Any], within: tuple[str, ...] = ()) -> TypeInformation:
    """The type Flink's ``AvroSchemaConverter`` gives ``schema`` (see the module docstring); ``ValueError`` for a
    record that holds itself (a type of rows cannot)."""
    kind, logical = schema["type"], schema.get("logicalType")
    if kind == "record":
        if schema["name"] in within:
            raise ValueError(f"the Avro record {schema['name']!r} holds itself: a row type cannot be recursive")
        inner = (*within, schema["name"])
        fields = schema["fields"]
        return Types.ROW_NAMED([name for name, _ in fields], [_type_info(t, inner) for _, t in fields])
    if kind == "union":
        return _type_info(next(b for b in schema["branches"] if b["type"] != "null"), within)
    if kind in ("string", "enum"):
        return Types.STRING()
    if kind == "array":
        return Types.OBJECT_ARRAY(_type_info(schema["items"], within))
    if kind == "map":
        return Types.MAP(Types.STRING(), _type_info(schema["values"], within))
    if kind in ("bytes", "fixed"):
        return Types.BIG_DEC() if logical == "decimal" else Types.PRIMITIVE_ARRAY(Types.BYTE())
    if kind == "int":
        return {"date": Types.SQL_DATE(), "time-millis": Types.SQL_TIME()}.get(logical or "", Types.INT())
    if kind == "long":
        if logical in ("timestamp-millis", "timestamp-micros"):
            return Types.SQL_TIMESTAMP()
        return Types.SQL_TIME() if logical == "time-micros" else Types.LONG()
    if kind == "null":
        raise ValueError("an Avro field of type null alone has no value panes can type")
    return {"boolean": Types.BOOLEAN(), "float": Types.FLOAT(), "double": Types.DOUBLE()}[kind]


# -- writing ------------------------------------------


def _long(value: int, out: bytearray) -> None:
    """``value`` as Avro's zig-zag variable-length integer."""
    number = (value << 1) ^ (value >> 63)
    while number & ~0x7F:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)


def _unscaled(value: Any, scale: int, where: str) -> int:
    if not isinstance(value, (Decimal, int)) or isinstance(value, bool):
        raise TypeError(f"{where}: a decimal takes a Decimal or an int, not {type(value).__name__}: {value!r}")
    return int(Decimal(value).scaleb(scale).to_integral_value())


def _write(schema: dict[str, Any], value: Any, out: bytearray, where: str) -> None:
    kind, logical = schema["type"], schema.get("logicalType")
    if kind == "union":
        branches = schema["branches"]
        index = next(i for i, b in enumerate(branches) if (b["type"] == "null") == (value is None))
        _long(index, out)
        _write(branches[index], value, out, where)
        return
    if value is None:
        if kind == "null":
            return
        raise TypeError(f"{where} is null, which its Avro type {kind!r} does not allow (make it a union with null)")
    if kind == "record":
        fields = schema["fields"]
        if isinstance(value, dict):
            values = [value.get(name) for name, _ in fields]
        elif isinstance(value, (Row, tuple, list)):
            values = list(value)
            if len(values) != len(fields):
                raise ValueError(f"{where} has {len(values)} field(s), the Avro record {len(fields)}: {value!r}")
        else:
            raise TypeError(f"{where} is written as an Avro record from a Row, a tuple or a dict, not {value!r}")
        for (name, field_schema), item in zip(fields, values, strict=True):
            _write(field_schema, item, out, f"{where}.{name}" if where != "the row" else f"field {name!r}")
    elif kind == "boolean":
        if not isinstance(value, bool):
            raise TypeError(f"{where} is an Avro boolean, not {type(value).__name__}: {value!r}")
        out.append(1 if value else 0)
    elif kind in ("int", "long"):
        if logical == "date" and isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            value = (value - EPOCH_DAY).days
        elif logical in ("time-millis", "time-micros") and isinstance(value, dt.time):
            micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
            value = micros // 1000 if logical == "time-millis" else micros
        elif logical in ("timestamp-millis", "timestamp-micros") and isinstance(value, dt.datetime):
            naive = value.astimezone(dt.timezone.utc).replace(tzinfo=None) if value.tzinfo else value
            micros = (naive - EPOCH) // dt.timedelta(microseconds=1)
            value = micros // 1000 if logical == "timestamp-millis" else micros
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{where} is an Avro {logical or kind}, not {type(value).__name__}: {value!r}")
        bits = 32 if kind == "int" else 64
        if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
            raise ValueError(f"{where}: {value} does not fit an Avro {kind}")
        _long(value, out)
    elif kind in ("float", "double"):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise TypeError(f"{where} is an Avro {kind}, not {type(value).__name__}: {value!r}")
        out += struct.pack("<f" if kind == "float" else "<d", float(value))
    elif kind == "string":
        if not isinstance(value, str):
            raise TypeError(f"{where} is an Avro string, not {type(value).__name__}: {value!r}")
        data = value.encode("utf-8")
        _long(len(data), out)
        out += data
    elif kind == "enum":
        if value not in schema["symbols"]:
            raise ValueError(f"{where}: {value!r} is not a symbol of the Avro enum {schema['name']!r}")
        _long(schema["symbols"].index(value), out)
    elif kind in ("bytes", "fixed"):
        if logical == "decimal":
            unscaled = _unscaled(value, schema["scale"], where)
            size = schema.get("size") or max(1, (unscaled.bit_length() + 8) // 8)
            data = unscaled.to_bytes(size, "big", signed=True)
        elif isinstance(value, (bytes, bytearray, memoryview)):
            data = bytes(value)
        else:
            raise TypeError(f"{where} is Avro {kind}, not {type(value).__name__}: {value!r}")
        if kind == "bytes":
            _long(len(data), out)
        elif len(data) != schema["size"]:
            raise ValueError(f"{where}: {len(data)} bytes for the Avro fixed {schema['name']!r} of {schema['size']}")
        out += data
    elif kind == "array":
        items = list(value)
        if items:
            _long(len(items), out)
            for i, item in enumerate(items):
                _write(schema["items"], item, out, f"{where}[{i}]")
        _long(0, out)
    elif kind == "map":
        if not isinstance(value, dict):
            raise TypeError(f"{where} is an Avro map, written from a dict, not {value!r}")
        if value:
            _long(len(value), out)
            for key, item in value.items():
                _write({"type": "string"}, key, out, f"{where} key")
                _write(schema["values"], item, out, f"{where}[{key!r}]")
        _long(0, out)


# -- reading ------------------------------------------


class _Reader:
    """Reads Avro's binary encoding from ``data``; ``ValueError`` when it ends early."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def take(self, count: int) -> bytes:
        if count < 0 or self.at + count > len(self.data):
            raise ValueError(f"the message ends at byte {len(self.data)}, inside an Avro value")
        piece = self.data[self.at : self.at + count]
        self.at += count
        return piece

    def long(self) -> int:
        shift = number = 0
        while True:
            byte = self.take(1)[0]
            number |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return (number >> 1) ^ -(number & 1)
            shift += 7
            if shift > 63:
                raise ValueError("an Avro integer longer than 10 bytes")

    def blocks(self) -> int:
        """The count of the next block of an array or a map (a negative count is followed by its byte size)."""
        count = self.long()
        if count < 0:
            self.long()
            count = -count
        return count


def _read(schema: dict[str, Any], reader: _Reader) -> Any:
    kind, logical = schema["type"], schema.get("logicalType")
    if kind == "union":
        index = reader.long()
        if not 0 <= index < len(schema["branches"]):
            raise ValueError(f"union branch {index} does not exist")
        return _read(schema["branches"][index], reader)
    if kind == "record":
        return Row(**{name: _read(field, reader) for name, field in schema["fields"]})
    if kind == "null":
        return None
    if kind == "boolean":
        return reader.take(1) != b"\x00"
    if kind in ("int", "long"):
        number = reader.long()
        if logical == "date":
            return EPOCH_DAY + dt.timedelta(days=number)
        if logical in ("time-millis", "time-micros"):
            micros = number * 1000 if logical == "time-millis" else number
            return (EPOCH + dt.timedelta(microseconds=micros)).time()
        if logical in ("timestamp-millis", "timestamp-micros"):
            return EPOCH + dt.timedelta(microseconds=number * 1000 if logical == "timestamp-millis" else number)
        return number
    if kind == "float":
        return struct.unpack("<f", reader.take(4))[0]
    if kind == "double":
        return struct.unpack("<d", reader.take(8))[0]
    if kind == "string":
        return reader.take(reader.long()).decode("utf-8")
    if kind == "enum":
        index = reader.long()
        if not 0 <= index < len(schema["symbols"]):
            raise ValueError(f"enum symbol {index} does not exist in {schema['name']!r}")
        return schema["symbols"][index]
    if kind in ("bytes", "fixed"):
        data = reader.take(reader.long() if kind == "bytes" else schema["size"])
        if logical == "decimal":
            return Decimal(int.from_bytes(data, "big", signed=True)).scaleb(-schema["scale"])
        return data
    items: list[Any] = []
    entries: dict[str, Any] = {}
    count = reader.blocks()
    while count:
        for _ in range(count):
            if kind == "array":
                items.append(_read(schema["items"], reader))
            else:
                key = reader.take(reader.long()).decode("utf-8")
                entries[key] = _read(schema["values"], reader)
        count = reader.blocks()
    return items if kind == "array" else entries


def _schema_text(record_class: Any, avro_schema_string: Any, name: str) -> str:
    """The schema text PyFlink's constructor arguments give (see the module docstring for the errors)."""
    if avro_schema_string is None and record_class is None:
        raise TypeError("record_class or avro_schema_string should be specified.")
    if record_class is not None:
        raise ValueError(
            f"{name}(record_class={record_class!r}) names a generated Java class, which panes cannot load: give "
            'the record\'s schema as avro_schema_string=\'{"type": "record", ...}\''
        )
    return str(avro_schema_string)


class AvroRowSerializationSchema(SerializationSchema):
    """Writes a row as one Avro record of the schema (see the module docstring)."""

    def __init__(self, record_class: str | None = None, avro_schema_string: str | None = None) -> None:
        self.avro_schema_string = _schema_text(record_class, avro_schema_string, "AvroRowSerializationSchema")
        self._schema = _parse(self.avro_schema_string)

    def serialize(self, element: Any) -> bytes:
        out = bytearray()
        _write(self._schema, element, out, "the row")
        return bytes(out)

    def __repr__(self) -> str:
        return f"AvroRowSerializationSchema({self._schema['name']})"


class AvroRowDeserializationSchema(DeserializationSchema):
    """Reads one Avro record of the schema as a ``Row`` (see the module docstring)."""

    def __init__(self, record_class: str | None = None, avro_schema_string: str | None = None) -> None:
        self.avro_schema_string = _schema_text(record_class, avro_schema_string, "AvroRowDeserializationSchema")
        self._schema = _parse(self.avro_schema_string)
        self._type = RecordType.of(_type_info(self._schema))

    def deserialize(self, message: bytes) -> Any:
        reader = _Reader(bytes(message))
        try:
            value = _read(self._schema, reader)
        except (ValueError, UnicodeDecodeError) as error:
            raise ValueError(f"not an Avro record of {self._schema['name']!r}: {error}") from None
        if reader.at != len(reader.data):
            raise ValueError(
                f"not an Avro record of {self._schema['name']!r}: {len(reader.data) - reader.at} byte(s) after it"
            )
        return value

    def get_produced_type(self) -> RecordType | None:
        return self._type

    def __repr__(self) -> str:
        return f"AvroRowDeserializationSchema({self._schema['name']})"
