"""Avro row schemas (``panes.datastream.formats.avro``) with unions of several types and recursive records.

Expected bytes are worked out from the Avro specification by the small encoder here (zig-zag integers, lengths
before strings and bytes, a union's branch index before its value, an array's items in one block ended by a
block of none), independently of the code under test, or written out byte by byte. The hand-written messages
were checked once against the ``fastavro`` library (1.13.1, which the project does not depend on): it reads each
as the value expected here, and writes the same bytes for each but two made to differ from what a writer
produces (a long in the 32-bit range in the ``long`` branch, an array in two blocks, the first with its size).
Flink's behaviour (a generic field for a union of several types, no deserializer for a recursive record) is in
the module's docstring.
"""

from __future__ import annotations

import json
import struct
import sys
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from panes.datastream.formats.avro import AvroRowDeserializationSchema, AvroRowSerializationSchema
from panes.types import Row
from tests.types.support import same

INT32 = st.integers(-(2**31), 2**31 - 1)
POINT = {"type": "record", "name": "Point", "fields": [{"name": "x", "type": "long"}, {"name": "y", "type": "long"}]}
BRANCHES: list[Any] = [
    "null",
    "boolean",
    "int",
    "long",
    "double",
    "string",
    "bytes",
    POINT,
    {"type": "array", "items": "long"},
    {"type": "map", "values": "string"},
]
"""A union whose branches a value's Python type tells apart (but ``int`` and ``long``: by the value's range)."""
UNION = json.dumps(
    {"type": "record", "name": "U", "fields": [{"name": "id", "type": "int"}, {"name": "v", "type": BRANCHES}]}
)
NODE = json.dumps(
    {
        "type": "record",
        "name": "Node",
        "fields": [{"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"]}],
    }
)
TREE = json.dumps(
    {
        "type": "record",
        "name": "Tree",
        "fields": [{"name": "label", "type": "string"}, {"name": "kids", "type": {"type": "array", "items": "Tree"}}],
    }
)


# -- Avro's binary encoding, from the specification --------------------------------------------------


def zigzag(number: int) -> bytes:
    """A long as Avro writes it: zig-zag, then 7 bits a byte, low bits first, the high bit saying more follow."""
    folded = number * 2 if number >= 0 else -number * 2 - 1
    out = bytearray()
    while folded >= 0x80:
        out.append(folded % 0x80 + 0x80)
        folded //= 0x80
    out.append(folded)
    return bytes(out)


def text(value: str) -> bytes:
    data = value.encode("utf-8")
    return zigzag(len(data)) + data


def expected_branch(value: Any) -> int:
    """The index in :data:`BRANCHES` of the branch the module docstring's rule picks for ``value``."""
    if value is None:
        return 0
    if isinstance(value, bool):
        return 1
    if isinstance(value, int):
        return 2 if -(2**31) <= value < 2**31 else 3
    kinds: list[tuple[type, int]] = [(float, 4), (str, 5), (bytes, 6), (Row, 7), (list, 8), (dict, 9)]
    return next(index for kind, index in kinds if isinstance(value, kind))


def encoded_branch(value: Any) -> bytes:
    """The Avro encoding of ``value`` in its branch of :data:`BRANCHES` (after the branch's index)."""
    index = expected_branch(value)
    if index == 0:
        return b""
    if index == 1:
        return b"\x01" if value else b"\x00"
    if index in (2, 3):
        return zigzag(value)
    if index == 4:
        return struct.pack("<d", value)
    if index == 5:
        return text(value)
    if index == 6:
        return zigzag(len(value)) + value
    if index == 7:
        return zigzag(value.x) + zigzag(value.y)
    if index == 8:
        return (zigzag(len(value)) + b"".join(map(zigzag, value)) if value else b"") + zigzag(0)
    entries = b"".join(text(key) + text(item) for key, item in value.items())
    return (zigzag(len(value)) + entries if value else b"") + zigzag(0)


def chain(values: list[int]) -> Row | None:
    """The linked list of ``values`` as ``Node`` rows (``None`` for no value)."""
    node = None
    for value in reversed(values):
        node = Row(v=value, next=node)
    return node


def encoded_chain(values: list[int]) -> bytes:
    """A ``Node`` list as Avro writes it: each node's ``v``, then its ``next`` branch: 1 (a node follows) or 0."""
    return b"".join(zigzag(value) + zigzag(1 if i + 1 < len(values) else 0) for i, value in enumerate(values))


def chain_values(node: Row | None) -> list[int]:
    """The values of a ``Node`` list, walked without recursion (a list may be deeper than Python's stack)."""
    values = []
    while node is not None:
        assert node._fields == ("v", "next")
        values.append(node.v)
        node = node.next
    return values


# -- unions of several types ------------------------------------------------------------------------

BRANCH_VALUES = [
    None,
    True,
    False,
    0,
    -(2**31),
    2**31 - 1,
    2**31,
    -(2**63),
    2.5,
    -0.0,
    "",
    "héllo",
    b"",
    b"\x00\xff",
    Row(x=3, y=-4),
    [],
    [1, -2, 2**40],
    {},
    {"a": "b", "é": ""},
]


@pytest.mark.parametrize("value", BRANCH_VALUES, ids=repr)
def test_each_branch_of_a_union_of_several_types_round_trips(value: Any) -> None:
    writer = AvroRowSerializationSchema(avro_schema_string=UNION)
    reader = AvroRowDeserializationSchema(avro_schema_string=UNION)
    encoded = writer.serialize((7, value))
    assert encoded == zigzag(7) + zigzag(expected_branch(value)) + encoded_branch(value)
    assert same(reader.deserialize(encoded), Row(id=7, v=value))


def test_a_union_of_several_types_makes_the_rows_untyped_and_a_nullable_one_keeps_its_type() -> None:
    for union in (["int", "string"], ["null", "int", "string"], ["string", "null", "int"]):
        schema = json.dumps({"type": "record", "name": "R", "fields": [{"name": "v", "type": union}]})
        assert AvroRowDeserializationSchema(avro_schema_string=schema).get_produced_type() is None
    for union in (["null", "string"], ["string", "null"], ["string"]):
        schema = json.dumps({"type": "record", "name": "R", "fields": [{"name": "v", "type": union}]})
        produced = AvroRowDeserializationSchema(avro_schema_string=schema).get_produced_type()
        assert produced is not None and produced.ddl() == "v STRING"
    # deep inside: an array of such unions also leaves the whole row untyped
    deep = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "vs", "type": {"type": "array", "items": ["int", "string"]}}],
    }
    assert AvroRowDeserializationSchema(avro_schema_string=json.dumps(deep)).get_produced_type() is None


def test_the_first_branch_a_value_fits_takes_it() -> None:
    fields = [
        {"name": "number", "type": ["double", "int"]},
        {"name": "symbol", "type": ["string", {"type": "enum", "name": "E", "symbols": ["A", "B"]}]},
        {"name": "symbol_first", "type": [{"type": "enum", "name": "F", "symbols": ["A", "B"]}, "string"]},
        {"name": "wide", "type": ["int", "long"]},
        {"name": "id", "type": ["null", {"type": "fixed", "name": "Id", "size": 2}, "bytes"]},
        {"name": "money", "type": ["string", {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}]},
    ]
    schema = json.dumps({"type": "record", "name": "R", "fields": fields})
    writer = AvroRowSerializationSchema(avro_schema_string=schema)
    reader = AvroRowDeserializationSchema(avro_schema_string=schema)
    value = (3, "A", "B", 2**31, b"\x01\x02", Decimal("-1.50"))
    encoded = writer.serialize(value)
    unscaled = (-150).to_bytes(2, "big", signed=True)
    assert encoded == (
        zigzag(0) + struct.pack("<d", 3.0)  # an int fits the double branch, listed first
        + zigzag(0) + text("A")  # a str fits the string branch before the enum
        + zigzag(0) + zigzag(1)  # ... and the enum where it comes first (its symbol B, index 1)
        + zigzag(1) + zigzag(2**31)  # beyond 32 bits: long
        + zigzag(1) + b"\x01\x02"  # two bytes fit the fixed of size 2
        + zigzag(1) + zigzag(len(unscaled)) + unscaled  # a Decimal is not a str: the decimal branch
    )  # fmt: skip
    back = reader.deserialize(encoded)
    assert same(back, Row(number=3.0, symbol="A", symbol_first="B", wide=2**31, id=b"\x01\x02", money=Decimal("-1.50")))
    encoded = writer.serialize((0, "C", "C", 1, b"\x01\x02\x03", 1))
    assert encoded == (
        zigzag(0) + struct.pack("<d", 0.0)
        + zigzag(0) + text("C")
        + zigzag(1) + text("C")  # "C" is no symbol of F: the string branch after it
        + zigzag(0) + zigzag(1)
        + zigzag(2) + zigzag(3) + b"\x01\x02\x03"  # three bytes do not fit the fixed: bytes
        + zigzag(1) + zigzag(1) + (100).to_bytes(1, "big")  # an int is no str, it fits the decimal: 1.00
    )  # fmt: skip
    assert same(
        reader.deserialize(encoded),
        Row(number=0.0, symbol="C", symbol_first="C", wide=1, id=b"\x01\x02\x03", money=Decimal("1.00")),
    )


def test_a_record_branch_is_told_apart_by_its_field_names_or_number() -> None:
    other = {
        "type": "record",
        "name": "Other",
        "fields": [{"name": "x", "type": "long"}, {"name": "z", "type": "long"}],
    }
    labelled = {
        "type": "record",
        "name": "Labelled",
        "fields": [{"name": "x", "type": "long"}, {"name": "note", "type": ["null", "string"]}],
    }
    schema = json.dumps(
        {"type": "record", "name": "R", "fields": [{"name": "v", "type": ["null", POINT, other, labelled]}]}
    )
    writer = AvroRowSerializationSchema(avro_schema_string=schema)
    reader = AvroRowDeserializationSchema(avro_schema_string=schema)
    cases = [
        (Row(x=1, y=2), 1, Row(x=1, y=2)),  # a named Row by its names
        (Row(x=1, z=2), 2, Row(x=1, z=2)),
        ({"z": 2, "x": 1}, 2, Row(x=1, z=2)),  # a dict by its keys, all fields of Other (z is not Point's)
        ((1, 2), 1, Row(x=1, y=2)),  # by position: the first record of two fields
        (Row(1, 2), 1, Row(x=1, y=2)),
    ]
    for value, index, back in cases:
        encoded = writer.serialize((value,))
        assert encoded == zigzag(index) + zigzag(1) + zigzag(2)
        assert same(reader.deserialize(encoded), Row(v=back))
    # a dict lacking a field that may be null: not Point nor Other (y and z may not be null), Labelled
    encoded = writer.serialize(({"x": 1},))
    assert encoded == zigzag(3) + zigzag(1) + zigzag(0)
    assert same(reader.deserialize(encoded), Row(v=Row(x=1, note=None)))
    with pytest.raises(TypeError, match="fits none"):
        writer.serialize(({"y": 2},))  # Point's field, but Point's x may not be null
    with pytest.raises(TypeError, match="fits none"):
        writer.serialize(([1, 2],))  # a list is an array's value, and no branch is an array
    with pytest.raises(TypeError, match="fits none"):
        writer.serialize((Row(y=2, x=1),))  # Point's names, in another order


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ((1, Decimal("2.5")), "field 'v'"),  # a Decimal, and no decimal branch
        ((1, [1, "x"]), "field 'v'[1]"),  # in the array branch, an item that is not a long
        ((1, {"a": 1}), "field 'v'['a']"),  # in the map branch, a value that is not a string
        ((1, Row(x=1, y="2")), "field 'v'.y"),  # in the record branch, a field that is not a long
        ((1, object()), "field 'v'"),
    ],
)
def test_a_value_that_fits_no_branch_is_refused_naming_the_field(value: Any, where: str) -> None:
    writer = AvroRowSerializationSchema(avro_schema_string=UNION)
    with pytest.raises(TypeError) as raised:
        writer.serialize(value)
    assert str(raised.value).startswith(where)
    if where == "field 'v'":
        assert "fits none of the branches of its Avro union [null, boolean, int, long, double" in str(raised.value)


def test_null_needs_a_null_branch_and_a_union_needs_what_avro_allows() -> None:
    schema = json.dumps({"type": "record", "name": "R", "fields": [{"name": "v", "type": ["int", "string"]}]})
    with pytest.raises(TypeError, match="field 'v' is null, which its Avro union \\[int, string\\] does not allow"):
        AvroRowSerializationSchema(avro_schema_string=schema).serialize((None,))
    refused = {
        "two branches of the type 'int'": ["int", {"type": "int", "logicalType": "date"}],
        "two branches of the type 'array'": [{"type": "array", "items": "int"}, {"type": "array", "items": "long"}],
        "holds a union directly": ["int", ["null", "string"]],
        "has no branch": [],
    }
    for message, union in refused.items():
        schema = json.dumps({"type": "record", "name": "R", "fields": [{"name": "v", "type": union}]})
        for kind in (AvroRowSerializationSchema, AvroRowDeserializationSchema):
            with pytest.raises(ValueError, match=message):
                kind(avro_schema_string=schema)
    two_records = ["null", POINT, {"type": "record", "name": "Point2", "fields": []}]
    schema = json.dumps({"type": "record", "name": "R", "fields": [{"name": "v", "type": two_records}]})
    AvroRowDeserializationSchema(avro_schema_string=schema)  # records of two names are two types


def test_bytes_written_by_hand_read_as_each_branch() -> None:
    reader = AvroRowDeserializationSchema(avro_schema_string=UNION)
    messages = {
        b"\x02\x00": None,  # id 1, branch 0 (null)
        b"\x02\x02\x01": True,  # branch 1 (boolean), true
        b"\x02\x04\x0e": 7,  # branch 2 (int), 7 zig-zag is 14
        b"\x02\x06\xff\xff\xff\xff\x0f": -(2**31),  # branch 3 (long), zig-zag 2**32 - 1 in five bytes
        b"\x02\x0a\x06h\xc3\xa9": "hé",  # branch 5 (string), three bytes of UTF-8
        b"\x02\x0e\x0a\x07": Row(x=5, y=-4),  # branch 7 (record Point)
        b"\x02\x10\x03\x04\x02\x04\x02\x06\x00": [1, 2, 3],  # branch 8 (array): a block of -2 items (-3 zig-zag) and
        # its size in bytes (2), then 1, 2, then a block of 1 item (3), the end
        b"\x02\x12\x02\x02k\x00\x00": {"k": ""},  # branch 9 (map): one entry, key "k", value ""
    }
    for message, value in messages.items():
        assert same(reader.deserialize(message), Row(id=1, v=value))
    with pytest.raises(ValueError, match="union branch 10 does not exist"):
        reader.deserialize(b"\x02\x14")


# -- recursive records ------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [0, 1, 5])
def test_a_recursive_record_round_trips_at_each_depth(depth: int) -> None:
    writer = AvroRowSerializationSchema(avro_schema_string=NODE)
    reader = AvroRowDeserializationSchema(avro_schema_string=NODE)
    values = [10 * i - 7 for i in range(depth + 1)]  # depth: the nodes after the first
    row = chain(values)
    encoded = writer.serialize(row)
    assert encoded == encoded_chain(values)
    back = reader.deserialize(encoded)
    assert same(back, row) and chain_values(back) == values
    assert reader.get_produced_type() is None  # an Arrow type cannot hold itself


def test_a_recursive_record_nested_deeper_than_pythons_stack() -> None:
    values = list(range(20 * sys.getrecursionlimit()))
    writer = AvroRowSerializationSchema(avro_schema_string=NODE)
    encoded = writer.serialize(chain(values))
    assert encoded == encoded_chain(values)
    assert chain_values(AvroRowDeserializationSchema(avro_schema_string=NODE).deserialize(encoded)) == values


def test_a_tree_recursive_through_an_array_read_from_bytes_written_by_hand() -> None:
    message = (
        b"\x02a"  # label "a": its length 1 (zig-zag 2), "a"
        b"\x04"  # kids: a block of 2 items
        b"\x02b\x00"  # "b", its kids: the end (a block of none)
        b"\x02c\x02\x02d\x00\x00"  # "c", its kids: a block of 1 item ("d", no kids), the end
        b"\x00"  # the end of a's kids
    )
    tree = Row(label="a", kids=[Row(label="b", kids=[]), Row(label="c", kids=[Row(label="d", kids=[])])])
    reader = AvroRowDeserializationSchema(avro_schema_string=TREE)
    assert same(reader.deserialize(message), tree)
    assert AvroRowSerializationSchema(avro_schema_string=TREE).serialize(tree) == message
    assert reader.get_produced_type() is None
    with pytest.raises(ValueError, match="ends at byte"):
        reader.deserialize(message[:-1])


def test_a_record_used_twice_but_not_inside_itself_stays_typed() -> None:
    schema = json.dumps(
        {"type": "record", "name": "Line", "fields": [{"name": "a", "type": POINT}, {"name": "b", "type": "Point"}]}
    )
    produced = AvroRowDeserializationSchema(avro_schema_string=schema).get_produced_type()
    assert produced is not None and produced.ddl() == "a STRUCT<x: BIGINT, y: BIGINT>, b STRUCT<x: BIGINT, y: BIGINT>"


def test_a_record_with_no_finite_value_and_a_value_that_holds_itself_are_refused() -> None:
    for no_end in (
        {"type": "record", "name": "L", "fields": [{"name": "next", "type": "L"}]},
        {"type": "record", "name": "L", "fields": [{"name": "next", "type": ["L"]}]},
        {
            "type": "record",
            "name": "A",
            "fields": [
                {"name": "ok", "type": ["null", "A"]},
                {"name": "b", "type": {"type": "record", "name": "B", "fields": [{"name": "a", "type": "A"}]}},
            ],
        },
    ):
        for kind in (AvroRowSerializationSchema, AvroRowDeserializationSchema):
            with pytest.raises(ValueError, match=f"the Avro record '{no_end['name']}' has no finite value"):
                kind(avro_schema_string=json.dumps(no_end))
    tree: list[Any] = []
    looped = Row(label="a", kids=tree)
    tree.append(looped)
    with pytest.raises(ValueError, match=r"field 'kids'\[0\] holds itself \(Row\)"):
        AvroRowSerializationSchema(avro_schema_string=TREE).serialize(looped)
    with pytest.raises(TypeError, match=r"field 'next'\.next\.v is an Avro int, not 'x' \(str\)"):
        AvroRowSerializationSchema(avro_schema_string=NODE).serialize(
            Row(v=1, next=Row(v=2, next=Row(v="x", next=None)))
        )


# -- properties ---------------------------------------------------------------------------------------

LONGS = st.integers(-(2**63), 2**63 - 1)
BRANCH_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    LONGS,
    st.floats(allow_nan=False),
    st.text(),
    st.binary(),
    st.builds(Row, x=LONGS, y=LONGS),
    st.lists(LONGS, max_size=5),
    st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=3),
)


@given(ident=INT32, value=BRANCH_VALUE)
def test_any_value_of_a_branch_is_written_as_the_specification_says_and_read_back(ident: int, value: Any) -> None:
    encoded = AvroRowSerializationSchema(avro_schema_string=UNION).serialize(Row(id=ident, v=value))
    assert encoded == zigzag(ident) + zigzag(expected_branch(value)) + encoded_branch(value)
    assert same(AvroRowDeserializationSchema(avro_schema_string=UNION).deserialize(encoded), Row(id=ident, v=value))


@given(values=st.lists(INT32, min_size=1, max_size=40))
def test_any_linked_list_is_written_as_the_specification_says_and_read_back(values: list[int]) -> None:
    encoded = AvroRowSerializationSchema(avro_schema_string=NODE).serialize(chain(values))
    assert encoded == encoded_chain(values)
    assert chain_values(AvroRowDeserializationSchema(avro_schema_string=NODE).deserialize(encoded)) == values


NESTED = {"type": "record", "name": "Nested", "fields": [{"name": "n", "type": ["null", "M"]}]}
MIXED = json.dumps(
    {
        "type": "record",
        "name": "M",
        "fields": [
            {"name": "items", "type": {"type": "array", "items": ["null", "int", "string"]}},
            {"name": "by_key", "type": {"type": "map", "values": ["long", "string", NESTED]}},
        ],
    }
)
"""Unions of several types as an array's items and a map's values, one of whose branches holds the record
itself."""


@given(
    items=st.lists(st.one_of(st.none(), INT32, st.text(max_size=4)), max_size=6),
    by_key=st.dictionaries(st.text(max_size=3), st.one_of(LONGS, st.text(max_size=3)), max_size=4),
)
def test_unions_inside_arrays_maps_and_a_record_that_holds_its_parent_round_trip(
    items: list[Any], by_key: dict[str, Any]
) -> None:
    writer = AvroRowSerializationSchema(avro_schema_string=MIXED)
    reader = AvroRowDeserializationSchema(avro_schema_string=MIXED)
    inner = Row(items=list(reversed(items)), by_key={})
    row = Row(items=items, by_key={**by_key, "\x00nested": Row(n=inner)})
    back = reader.deserialize(writer.serialize(row))
    assert same(back, row)
    assert reader.get_produced_type() is None
