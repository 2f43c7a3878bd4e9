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
type, or of one type alone, that type (nullable); the logical types ``date`` ``SQL_DATE``,
``time-millis``/``time-micros`` ``SQL_TIME``, ``timestamp-millis``/``timestamp-micros`` ``SQL_TIMESTAMP`` (UTC,
without a zone) and ``decimal`` ``BIG_DEC`` (a ``Decimal`` of the schema's scale).

**Unions of several types.** A union of two or more non-null types, with or without ``null`` (``["int",
"string"]``, ``["null", "int", "string"]``), is in Flink a field of ``Types.GENERIC(Object)`` holding the Avro
library's Java object as it is (``Integer``, ``Utf8``, ``GenericData.Record``, ``ByteBuffer``,
``GenericData.Array``, ...). PyFlink 2.3 cannot hand such a field to Python: ``DataStream.get_type()`` raises
``TypeError`` ("GenericType<java.lang.Object> is not supported in PyFlink currently") and a Python function on the
stream fails the job ("Could not find type serializer for current type [GenericType<java.lang.Object>]"). panes
reads the value of whichever branch the message holds, as that branch's type is read anywhere else: ``None``,
``bool``, ``int``, ``float``, ``str`` (also an enum's symbol), ``bytes``, ``Decimal``, ``datetime`` values, a
named ``Row`` for a record, a ``list`` for an array, a ``dict`` for a map. panes' generic type,
``Types.PICKLED_BYTE_ARRAY()``, is the type of a whole value only (it cannot be a field of a ``ROW``), so a schema
with such a union anywhere in it gives rows of no declared type: ``get_produced_type()`` returns ``None`` and the
rows travel as Python objects (pickled where a runner moves them), as a stream of ``PICKLED_BYTE_ARRAY`` does.

Writing such a union, ``None`` goes to its ``null`` branch (``TypeError`` without one) and any other value to
the first non-null branch, in the schema's order, that the value fits at its top level: ``boolean`` a ``bool``;
``int`` and ``long`` an ``int`` (not a ``bool``) of 32 or 64 bits, and with a logical type its ``date``, ``time``
or ``datetime``; ``float`` and ``double`` an ``int`` or a ``float`` that the width holds; ``string`` a ``str``;
``enum`` one of its symbols; ``bytes`` a bytes-like value, ``fixed`` one of its size (with the logical type
``decimal``, a finite ``Decimal`` or an ``int``); ``array`` a ``list`` or a ``tuple``; ``map`` a ``dict``; a
record a named ``Row`` whose names are its fields in order, a positional ``Row`` or a tuple of as many values as
it has fields (a ``list`` is an array's), or a ``dict`` whose keys are all fields of it and that lacks only fields
that may be null. So an ``int`` in ``["double", "int"]`` is written (and read back) as a ``double``, and a ``str``
in ``["string", {"type": "enum", ...}]`` as a string. A value that no branch fits raises ``TypeError`` naming the
field and the branches; a value that fits a branch at its top level but not inside (a field of a record branch)
raises there, the next branch is not tried. Flink hands the value to Avro's ``GenericData``, which picks the
branch by the value's Java class (an ``Integer`` ``int``, a ``String`` ``string``): it cannot write a ``Row`` into
a record branch nor a ``byte[]`` into ``bytes`` ("Unknown datum type"), which panes can.

**Recursive records**, a record that holds itself (``{"type": "record", "name": "Node", "fields": [{"name": "v",
"type": "int"}, {"name": "next", "type": ["null", "Node"]}]}``, or through an array or a map): Flink 2.3's
``AvroRowDeserializationSchema`` cannot be built for one (its constructor fails with ``StackOverflowError``:
``AvroSchemaConverter.convertToTypeInfo`` descends into the record without end), while its
``AvroRowSerializationSchema`` writes them (its conversion follows the row's own nesting). panes does both, as their
values are well defined: nested ``Row``s (``Row(v=1, next=Row(v=2, next=None))``). An Arrow type cannot hold itself,
so the rows have no declared type, as above (``get_produced_type()`` is ``None``). Reading and writing walk the
value with a stack of their own, not Python's, so nesting has no bound of theirs; Python's own pickling, comparison
and ``repr`` of a ``Row`` nested some hundreds of levels deep raise ``RecursionError`` (a runner that moves such a
row pickled fails on it). A record whose every value would hold another one without end (it leads back to itself
through fields of records only, with no union that may take another branch, no array and no map on the way, as
``{"name": "next", "type": "Node"}``) has no finite value: it raises ``ValueError`` when the schema is built (Flink
builds the serializer, and every row then fails to write with a ``NullPointerException``).

Errors: a schema that is not valid Avro JSON, a union that holds a union directly or two branches of one type
(two ``int``, two arrays, two records of one name) or no branch, a record that repeats a field name, or a record
with no finite value, raises ``ValueError`` when the schema is built (Avro's parser refuses the same);
``record_class=`` (a generated Java class) raises ``ValueError`` (panes has no Java classes: give the schema's
text); neither argument, ``TypeError`` (as PyFlink). Reading a schema with a field of type ``null`` alone
raises ``ValueError`` (panes cannot type it). Writing a value that does not fit the schema raises ``TypeError``
or ``ValueError`` naming the field (``field 'next'.next.v``); a value that holds itself (a list inside itself)
raises ``ValueError``; reading bytes that are not such a record raises ``ValueError`` (the source's bad record).
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
NAMED = ("record", "enum", "fixed")
EPOCH = dt.datetime(1970, 1, 1)
EPOCH_DAY = dt.date(1970, 1, 1)
TIMES = ("time-millis", "time-micros")
TIMESTAMPS = ("timestamp-millis", "timestamp-micros")
STRING = {"type": "string"}
SHOWN = 80
"""Characters of a value an error message shows at most."""


def _parse(text: str) -> Any:
    """The schema of ``text`` with every named type's reference replaced by its definition (a dict; a record
    that holds itself holds its own dict); raises ``ValueError`` for one that is not Avro or has no finite
    value."""
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
            return _union(node, [resolve(branch, namespace) for branch in node])
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
            named[full] = made  # before its fields: a field may name the record itself
            if kind in ("record", "error"):
                fields = node.get("fields")
                if not isinstance(fields, list):
                    raise ValueError(f"the Avro record {full!r} has no list of fields")
                made["fields"] = []
                for field in fields:
                    if not isinstance(field, dict) or not isinstance(field.get("name"), str) or "type" not in field:
                        raise ValueError(f"the Avro record {full!r} has a field without a name or a type: {field!r}")
                    if any(field["name"] == known for known, _ in made["fields"]):
                        raise ValueError(f"the Avro record {full!r} has two fields named {field['name']!r}")
                    made["fields"].append((field["name"], resolve(field["type"], space)))
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
    _check_finite(schema)
    return schema


def _union(node: list[Any], branches: list[dict[str, Any]]) -> dict[str, Any]:
    """The union of ``branches`` (``several``: of more than one non-null type); ``ValueError`` for one that Avro
    refuses."""
    if not branches:
        raise ValueError("the Avro union [] has no branch")
    seen: set[str] = set()
    for branch in branches:
        if branch["type"] == "union":
            raise ValueError(f"the Avro union {json.dumps(node)} holds a union directly, which Avro does not allow")
        kind = _branch_name(branch)
        if kind in seen:
            raise ValueError(f"the Avro union {json.dumps(node)} has two branches of the type {kind!r}")
        seen.add(kind)
    several = sum(branch["type"] != "null" for branch in branches) > 1
    return {"type": "union", "branches": branches, "several": several}


def _branch_name(schema: dict[str, Any]) -> str:
    """A union branch's name as Avro tells branches apart: a named type's full name, else the type."""
    return str(schema["name"]) if schema["type"] in NAMED else str(schema["type"])


def _children(schema: dict[str, Any]) -> list[dict[str, Any]]:
    kind = schema["type"]
    if kind == "record":
        return [field for _, field in schema["fields"]]
    if kind == "union":
        return list(schema["branches"])
    if kind == "array":
        return [schema["items"]]
    return [schema["values"]] if kind == "map" else []


def _check_finite(schema: dict[str, Any]) -> None:
    """``ValueError`` naming a record of ``schema`` that has no finite value: a record has one when each of its
    fields has, a union when one of its branches has, any other type always (an array or a map may be empty)."""
    records: list[dict[str, Any]] = []
    seen: set[int] = set()
    pending = [schema]
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node["type"] == "record":
            records.append(node)
        pending.extend(_children(node))
    finite: set[int] = set()

    def ends(node: dict[str, Any]) -> bool:
        if node["type"] == "record":
            return id(node) in finite
        if node["type"] == "union":
            return any(ends(branch) for branch in node["branches"])
        return True

    grown = True
    while grown:
        grown = False
        for record in records:
            if id(record) not in finite and all(ends(field) for _, field in record["fields"]):
                finite.add(id(record))
                grown = True
    for record in records:
        if id(record) not in finite:
            raise ValueError(
                f"the Avro record {record['name']!r} has no finite value: each of its values holds another one (it "
                "leads back to itself through fields of records only; put a union with null, an array or a map on "
                "the way)"
            )


def _type_info(schema: dict[str, Any], within: tuple[str, ...] = ()) -> TypeInformation | None:
    """The type Flink's ``AvroSchemaConverter`` gives ``schema``, or ``None`` where Flink's is generic or none
    exists (a union of several types, a record inside itself): then the whole row has no declared type (see the
    module docstring)."""
    kind, logical = schema["type"], schema.get("logicalType")
    if kind == "record":
        if schema["name"] in within:
            return None  # an Arrow type cannot hold itself
        inner = (*within, schema["name"])
        fields = schema["fields"]
        types = [_type_info(t, inner) for _, t in fields]
        known = [t for t in types if t is not None]
        if len(known) != len(types):
            return None
        return Types.ROW_NAMED([name for name, _ in fields], known)
    if kind == "union":
        if schema["several"]:
            return None  # Flink: Types.GENERIC(Object.class)
        concrete = [b for b in schema["branches"] if b["type"] != "null"]
        return _type_info(concrete[0] if concrete else {"type": "null"}, within)
    if kind in ("string", "enum"):
        return Types.STRING()
    if kind in ("array", "map"):
        inner_type = _type_info(schema["items" if kind == "array" else "values"], within)
        if inner_type is None:
            return None
        return Types.OBJECT_ARRAY(inner_type) if kind == "array" else Types.MAP(Types.STRING(), inner_type)
    if kind in ("bytes", "fixed"):
        return Types.BIG_DEC() if logical == "decimal" else Types.PRIMITIVE_ARRAY(Types.BYTE())
    if kind == "int":
        return {"date": Types.SQL_DATE(), "time-millis": Types.SQL_TIME()}.get(logical or "", Types.INT())
    if kind == "long":
        if logical in TIMESTAMPS:
            return Types.SQL_TIMESTAMP()
        return Types.SQL_TIME() if logical == "time-micros" else Types.LONG()
    if kind == "null":
        raise ValueError("an Avro field of type null alone has no value panes can type")
    return {"boolean": Types.BOOLEAN(), "float": Types.FLOAT(), "double": Types.DOUBLE()}[kind]


# -- writing ------------------------------------------

Path = tuple[Any, str, Any] | None
"""Where a value is in the row, kept as a chain ``(parent, step, label)`` and spelled only for an error
(:func:`_where`): ``"."`` a field, ``"[]"`` an array's item, ``"[k]"`` a map's value, ``" key"`` a map's key."""


def _where(path: Path) -> str:
    steps: list[tuple[str, Any]] = []
    while path is not None:
        path, step, label = path
        steps.append((step, label))
    text = "the row"
    for step, label in reversed(steps):
        if step == ".":
            text = f"field {label!r}" if text == "the row" else f"{text}.{label}"
        elif step == "[]":
            text = f"{text}[{label}]"
        elif step == "[k]":
            text = f"{text}[{label!r}]"
        else:
            text = f"{text} key"
    return text


def _show(value: Any) -> str:
    """``value``'s repr, cut to :data:`SHOWN` characters, with its type."""
    try:
        text = repr(value)
    except RecursionError:
        text = "(nested too deep to show)"
    if len(text) > SHOWN:
        text = text[: SHOWN - 3] + "..."
    return f"{text} ({type(value).__name__})"


def _long(value: int, out: bytearray) -> None:
    """``value`` as Avro's zig-zag variable-length integer."""
    number = (value << 1) ^ (value >> 63)
    while number & ~0x7F:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _fits_bits(value: int, kind: str) -> bool:
    bits = 32 if kind == "int" else 64
    return -(1 << (bits - 1)) <= value < (1 << (bits - 1))


def _packed(value: Any, kind: str) -> bytes | None:
    """``value`` as an Avro ``float`` or ``double``, or ``None`` when it is not a number that width holds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return struct.pack("<f" if kind == "float" else "<d", float(value))
    except (OverflowError, struct.error):
        return None


def _unscaled(value: Any, scale: int, path: Path) -> int:
    if isinstance(value, bool) or not isinstance(value, (Decimal, int)):
        raise TypeError(f"{_where(path)}: a decimal takes a Decimal or an int, not {_show(value)}")
    if isinstance(value, Decimal) and not value.is_finite():
        raise ValueError(f"{_where(path)}: an Avro decimal holds a finite number, not {value!r}")
    return int(Decimal(value).scaleb(scale).to_integral_value())


def _fits(schema: dict[str, Any], value: Any) -> bool:
    """Whether ``value`` fits ``schema`` at its top level: the rule that picks a union's branch (see the module
    docstring)."""
    kind, logical = schema["type"], schema.get("logicalType")
    if kind == "union":  # a record's field, for a dict that lacks it
        return any(_fits(branch, value) for branch in schema["branches"])
    if value is None or kind == "null":
        return value is None and kind == "null"
    if kind == "boolean":
        return isinstance(value, bool)
    if kind in ("int", "long"):
        if logical == "date" and isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            return True
        if (logical in TIMES and isinstance(value, dt.time)) or (
            logical in TIMESTAMPS and isinstance(value, dt.datetime)
        ):
            return True
        return _is_int(value) and _fits_bits(value, kind)
    if kind in ("float", "double"):
        return _packed(value, kind) is not None
    if kind == "string":
        return isinstance(value, str)
    if kind == "enum":
        return isinstance(value, str) and value in schema["symbols"]
    if kind in ("bytes", "fixed"):
        if logical == "decimal":
            return _is_int(value) or (isinstance(value, Decimal) and value.is_finite())
        if not isinstance(value, (bytes, bytearray, memoryview)):
            return False
        return kind == "bytes" or memoryview(value).nbytes == int(schema["size"])
    if kind == "array":
        return isinstance(value, (list, tuple))
    if kind == "map":
        return isinstance(value, dict)
    if kind == "record":
        fields = schema["fields"]
        names = [name for name, _ in fields]
        if isinstance(value, dict):
            return all(key in names for key in value) and all(
                name in value or _fits(field, None) for name, field in fields
            )
        if isinstance(value, Row) and value._fields is not None:
            return list(value._fields) == names
        return isinstance(value, (Row, tuple)) and len(value) == len(names)
    return False


def _branch(schema: dict[str, Any], value: Any, path: Path) -> int:
    """The index of the branch of the union ``schema`` that ``value`` is written as (see the module docstring)."""
    branches = schema["branches"]
    if value is None:
        for index, branch in enumerate(branches):
            if branch["type"] == "null":
                return index
        raise TypeError(f"{_where(path)} is null, which its Avro union {_branch_names(branches)} does not allow")
    for index, branch in enumerate(branches):
        if branch["type"] != "null" and (not schema["several"] or _fits(branch, value)):
            return index
    if not schema["several"]:
        raise TypeError(f"{_where(path)} is {_show(value)}, but its Avro union holds only null")
    raise TypeError(
        f"{_where(path)}: {_show(value)} fits none of the branches of its Avro union {_branch_names(branches)}"
    )


def _branch_names(branches: list[dict[str, Any]]) -> str:
    names = []
    for branch in branches:
        logical = branch.get("logicalType")
        names.append(f"{_branch_name(branch)} ({logical})" if logical else _branch_name(branch))
    return "[" + ", ".join(names) + "]"


VALUE, CLOSE, END = 0, 1, 2
"""What a writing step does: write a value, leave a container (:func:`_write`), end an array's or a map's
blocks."""


def _write(schema: dict[str, Any], value: Any, out: bytearray) -> None:
    """Appends ``value`` as ``schema`` to ``out``, walking it with a stack of its own (no bound on nesting);
    raises ``TypeError`` or ``ValueError`` naming the field where it does not fit."""
    steps: list[tuple[Any, ...]] = [(VALUE, schema, value, None)]
    inside: set[int] = set()  # the containers being written, by id (each CLOSE step holds its container)
    while steps:
        step = steps.pop()
        if step[0] == END:
            out.append(0)  # the block of no items that ends an array or a map
            continue
        if step[0] == CLOSE:
            inside.discard(id(step[1]))
            continue
        _, node, item, path = step
        kind = node["type"]
        if kind == "union":
            index = _branch(node, item, path)
            _long(index, out)
            steps.append((VALUE, node["branches"][index], item, path))
            continue
        if item is None:
            if kind == "null":
                continue
            raise TypeError(
                f"{_where(path)} is null, which its Avro type {kind!r} does not allow (make it a union with null)"
            )
        if kind not in ("record", "array", "map"):
            _write_scalar(node, item, out, path)
            continue
        if id(item) in inside:
            raise ValueError(f"{_where(path)} holds itself ({type(item).__name__}): it has no end to write")
        if kind == "record":
            parts = _record_values(node, item, path)
            inside.add(id(item))
            steps.append((CLOSE, item))
            for (name, field), part in reversed(list(zip(node["fields"], parts, strict=True))):
                steps.append((VALUE, field, part, (path, ".", name)))
        elif kind == "array":
            try:
                items = list(item)
            except TypeError:
                raise TypeError(f"{_where(path)} is an Avro array, written from a list, not {_show(item)}") from None
            inside.add(id(item))
            steps.extend([(CLOSE, item), (END,)])
            if items:
                _long(len(items), out)
                steps.extend((VALUE, node["items"], items[i], (path, "[]", i)) for i in reversed(range(len(items))))
        else:
            if not isinstance(item, dict):
                raise TypeError(f"{_where(path)} is an Avro map, written from a dict, not {_show(item)}")
            inside.add(id(item))
            steps.extend([(CLOSE, item), (END,)])
            if item:
                _long(len(item), out)
                for key, entry in reversed(list(item.items())):
                    steps.append((VALUE, node["values"], entry, (path, "[k]", key)))
                    steps.append((VALUE, STRING, key, (path, " key", None)))


def _record_values(schema: dict[str, Any], value: Any, path: Path) -> list[Any]:
    fields = schema["fields"]
    if isinstance(value, dict):
        return [value.get(name) for name, _ in fields]
    if isinstance(value, (Row, tuple, list)):
        values = list(value)
        if len(values) != len(fields):
            raise ValueError(
                f"{_where(path)} has {len(values)} field(s), the Avro record {len(fields)}: {_show(value)}"
            )
        return values
    raise TypeError(f"{_where(path)} is written as an Avro record from a Row, a tuple or a dict, not {_show(value)}")


def _write_scalar(schema: dict[str, Any], value: Any, out: bytearray, path: Path) -> None:
    """Appends ``value`` (not ``None``) as ``schema``, a type that is not a union, a record, an array or a map."""
    kind, logical = schema["type"], schema.get("logicalType")
    if kind == "null":
        raise TypeError(f"{_where(path)} is an Avro null, not {_show(value)}")
    if kind == "boolean":
        if not isinstance(value, bool):
            raise TypeError(f"{_where(path)} is an Avro boolean, not {_show(value)}")
        out.append(1 if value else 0)
    elif kind in ("int", "long"):
        if logical == "date" and isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            value = (value - EPOCH_DAY).days
        elif logical in TIMES and isinstance(value, dt.time):
            micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
            value = micros // 1000 if logical == "time-millis" else micros
        elif logical in TIMESTAMPS and isinstance(value, dt.datetime):
            naive = value.astimezone(dt.timezone.utc).replace(tzinfo=None) if value.tzinfo else value
            micros = (naive - EPOCH) // dt.timedelta(microseconds=1)
            value = micros // 1000 if logical == "timestamp-millis" else micros
        if not _is_int(value):
            raise TypeError(f"{_where(path)} is an Avro {logical or kind}, not {_show(value)}")
        if not _fits_bits(value, kind):
            raise ValueError(f"{_where(path)}: {value} does not fit an Avro {kind}")
        _long(value, out)
    elif kind in ("float", "double"):
        packed = _packed(value, kind)
        if packed is None:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{_where(path)} is an Avro {kind}, not {_show(value)}")
            raise ValueError(f"{_where(path)}: {value!r} does not fit an Avro {kind}")
        out += packed
    elif kind == "string":
        if not isinstance(value, str):
            raise TypeError(f"{_where(path)} is an Avro string, not {_show(value)}")
        data = value.encode("utf-8")
        _long(len(data), out)
        out += data
    elif kind == "enum":
        if value not in schema["symbols"]:
            raise ValueError(f"{_where(path)}: {value!r} is not a symbol of the Avro enum {schema['name']!r}")
        _long(schema["symbols"].index(value), out)
    else:  # bytes, fixed
        if logical == "decimal":
            unscaled = _unscaled(value, schema["scale"], path)
            size = schema.get("size") or max(1, (unscaled.bit_length() + 8) // 8)
            try:
                data = unscaled.to_bytes(size, "big", signed=True)
            except OverflowError:
                raise ValueError(f"{_where(path)}: {value!r} does not fit the Avro fixed {schema['name']!r}") from None
        elif isinstance(value, (bytes, bytearray, memoryview)):
            data = bytes(value)
        else:
            raise TypeError(f"{_where(path)} is Avro {kind}, not {_show(value)}")
        if kind == "bytes":
            _long(len(data), out)
        elif len(data) != schema["size"]:
            raise ValueError(
                f"{_where(path)}: {len(data)} bytes for the Avro fixed {schema['name']!r} of {schema['size']}"
            )
        out += data


# -- reading ------------------------------------------


class _Reader:
    """Reads Avro's binary encoding from ``data``; ``ValueError`` when it ends early."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def left(self) -> int:
        return len(self.data) - self.at

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


def _may_be_empty(schema: dict[str, Any]) -> bool:
    """Whether a value of ``schema`` may take no bytes (``null``, a ``fixed`` of size 0, a record of such)."""
    kind = schema["type"]
    if kind == "record":  # a record with a finite value cannot lead back to itself through records only
        return all(_may_be_empty(field) for _, field in schema["fields"])
    return kind == "null" or (kind == "fixed" and int(schema["size"]) == 0)


READ, ROW, BLOCK, ITEMS = 0, 1, 2, 3
"""What a reading step does: read a value, make a record's ``Row`` of its fields, read the next block of an array
or a map (or end it), read the next of a block's items (:func:`_read`)."""


def _read(schema: dict[str, Any], reader: _Reader) -> Any:
    """The value of ``schema`` at the reader, read with a stack of its own (no bound on nesting): the values read
    so far wait on ``values`` until the record, array or map that holds them is complete."""
    values: list[Any] = []
    steps: list[tuple[Any, ...]] = [(READ, schema)]
    while steps:
        step = steps.pop()
        kind, node = step[0], step[1]
        if kind == READ:
            type_ = node["type"]
            if type_ == "union":
                index = reader.long()
                if not 0 <= index < len(node["branches"]):
                    raise ValueError(f"union branch {index} does not exist")
                steps.append((READ, node["branches"][index]))
            elif type_ == "record":
                steps.append((ROW, node))
                steps.extend((READ, field) for _, field in reversed(node["fields"]))
            elif type_ in ("array", "map"):
                steps.append((BLOCK, node, len(values)))  # its items are the values from there on
            else:
                values.append(_read_scalar(node, reader))
        elif kind == ROW:
            fields = node["fields"]
            start = len(values) - len(fields)
            row = Row(**{name: values[start + i] for i, (name, _) in enumerate(fields)})
            del values[start:]
            values.append(row)
        elif kind == BLOCK:
            start = step[2]
            count = reader.blocks()
            if count:
                if count > reader.left() and (node["type"] == "map" or not _may_be_empty(node["items"])):
                    raise ValueError(f"a block of {count} items, with {reader.left()} bytes left")
                steps.append(step)  # the next block, once these items are read
                steps.append((ITEMS, node, count))
            else:
                items = values[start:]
                del values[start:]
                values.append(items if node["type"] == "array" else dict(zip(items[::2], items[1::2], strict=True)))
        else:  # ITEMS
            if step[2] > 1:
                steps.append((ITEMS, node, step[2] - 1))
            if node["type"] == "map":
                values.append(reader.take(reader.long()).decode("utf-8"))
                steps.append((READ, node["values"]))
            else:
                steps.append((READ, node["items"]))
    return values[0]


def _read_scalar(schema: dict[str, Any], reader: _Reader) -> Any:
    """The value of ``schema``, a type that is not a union, a record, an array or a map, at the reader."""
    kind, logical = schema["type"], schema.get("logicalType")
    if kind == "null":
        return None
    if kind == "boolean":
        return reader.take(1) != b"\x00"
    if kind in ("int", "long"):
        number = reader.long()
        if logical == "date":
            return EPOCH_DAY + dt.timedelta(days=number)
        if logical in TIMES:
            micros = number * 1000 if logical == "time-millis" else number
            return (EPOCH + dt.timedelta(microseconds=micros)).time()
        if logical in TIMESTAMPS:
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
    data = reader.take(reader.long() if kind == "bytes" else schema["size"])
    if logical == "decimal":
        return Decimal(int.from_bytes(data, "big", signed=True)).scaleb(-schema["scale"])
    return data


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
        _write(self._schema, element, out)
        return bytes(out)

    def __repr__(self) -> str:
        return f"AvroRowSerializationSchema({self._schema['name']})"


class AvroRowDeserializationSchema(DeserializationSchema):
    """Reads one Avro record of the schema as a ``Row`` (see the module docstring)."""

    def __init__(self, record_class: str | None = None, avro_schema_string: str | None = None) -> None:
        self.avro_schema_string = _schema_text(record_class, avro_schema_string, "AvroRowDeserializationSchema")
        self._schema = _parse(self.avro_schema_string)
        row_type = _type_info(self._schema)
        self._type = None if row_type is None else RecordType.of(row_type)

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
        """The rows' type, or ``None`` (no declared type) for a schema with a union of several types or a
        record inside itself (see the module docstring)."""
        return self._type

    def __repr__(self) -> str:
        return f"AvroRowDeserializationSchema({self._schema['name']})"
