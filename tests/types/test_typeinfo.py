"""``Types`` and ``TypeInformation``: PyFlink's type declarations with Java's widths, as Arrow types."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

from panes.types import RecordType, TypeInformation, Types
from panes.types.typeinfo import CHAR_METADATA


@pytest.mark.parametrize(
    ("info", "arrow"),
    [
        (Types.BOOLEAN(), pa.bool_()),
        (Types.BYTE(), pa.int8()),
        (Types.SHORT(), pa.int16()),
        (Types.INT(), pa.int32()),
        (Types.LONG(), pa.int64()),
        (Types.FLOAT(), pa.float32()),
        (Types.DOUBLE(), pa.float64()),
        (Types.CHAR(), pa.string()),
        (Types.STRING(), pa.string()),
        (Types.BIG_INT(), pa.decimal128(38, 0)),
        (Types.BIG_DEC(), pa.decimal128(38, 18)),
        (Types.SQL_DATE(), pa.date32()),
        (Types.SQL_TIME(), pa.time64("us")),
        (Types.SQL_TIMESTAMP(), pa.timestamp("us")),
        (Types.INSTANT(), pa.timestamp("us", tz="UTC")),
        (Types.LOCAL_DATE(), pa.date32()),
        (Types.LOCAL_TIME(), pa.time64("us")),
        (Types.LOCAL_DATE_TIME(), pa.timestamp("us")),
        (Types.PICKLED_BYTE_ARRAY(), pa.binary()),
        (Types.PRIMITIVE_ARRAY(Types.INT()), pa.list_(pa.int32())),
        (Types.PRIMITIVE_ARRAY(Types.BYTE()), pa.binary()),
        (Types.BASIC_ARRAY(Types.STRING()), pa.list_(pa.string())),
        (Types.OBJECT_ARRAY(Types.ROW([Types.LONG()])), pa.list_(pa.struct([("f0", pa.int64())]))),
        (Types.LIST(Types.DOUBLE()), pa.list_(pa.float64())),
        (Types.MAP(Types.STRING(), Types.LIST(Types.INT())), pa.map_(pa.string(), pa.list_(pa.int32()))),
        (Types.ROW([Types.STRING(), Types.LONG()]), pa.struct([("f0", pa.string()), ("f1", pa.int64())])),
        (
            Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.SQL_DATE()]),
            pa.struct([("a", pa.int32()), ("b", pa.date32())]),
        ),
        (Types.TUPLE([Types.BOOLEAN(), Types.SHORT()]), pa.struct([("_1", pa.bool_()), ("_2", pa.int16())])),
    ],
)
def test_each_type_has_its_arrow_type(info: TypeInformation, arrow: pa.DataType) -> None:
    assert info.arrow_type() == arrow
    assert isinstance(info, TypeInformation)


def test_char_fields_carry_their_marker_everywhere() -> None:
    assert Types.CHAR().arrow_field("c").metadata == CHAR_METADATA
    assert Types.STRING().arrow_field("c").metadata is None
    assert Types.BASIC_ARRAY(Types.CHAR()).arrow_type().value_field.metadata == CHAR_METADATA
    assert Types.ROW_NAMED(["c"], [Types.CHAR()]).arrow_type().field("c").metadata == CHAR_METADATA
    assert Types.MAP(Types.CHAR(), Types.CHAR()).arrow_type().key_field.metadata == CHAR_METADATA


def test_map_keys_are_not_nullable_and_everything_else_is() -> None:
    arrow = Types.MAP(Types.STRING(), Types.ROW_NAMED(["a"], [Types.LIST(Types.INT())])).arrow_type()
    assert not arrow.key_field.nullable
    assert arrow.item_field.nullable
    assert arrow.item_type.field("a").nullable
    assert arrow.item_type.field("a").type.value_field.nullable


@pytest.mark.parametrize(
    ("info", "text"),
    [
        (Types.LONG(), "Types.LONG()"),
        (Types.PICKLED_BYTE_ARRAY(), "Types.PICKLED_BYTE_ARRAY()"),
        (Types.ROW([Types.STRING()]), "Types.ROW([Types.STRING()])"),
        (
            Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.LIST(Types.CHAR())]),
            "Types.ROW_NAMED(['a', 'b'], [Types.INT(), Types.LIST(Types.CHAR())])",
        ),
        (Types.TUPLE([Types.INT(), Types.BIG_DEC()]), "Types.TUPLE([Types.INT(), Types.BIG_DEC()])"),
        (Types.MAP(Types.STRING(), Types.INSTANT()), "Types.MAP(Types.STRING(), Types.INSTANT())"),
        (Types.PRIMITIVE_ARRAY(Types.BYTE()), "Types.PRIMITIVE_ARRAY(Types.BYTE())"),
        (Types.OBJECT_ARRAY(Types.SQL_TIME()), "Types.OBJECT_ARRAY(Types.SQL_TIME())"),
    ],
)
def test_repr_is_the_call_that_makes_it(info: TypeInformation, text: str) -> None:
    assert repr(info) == text
    assert eval(text, {"Types": Types}) == info


def test_type_informations_are_values() -> None:
    assert Types.LONG() == Types.LONG()
    assert Types.LONG() != Types.INT()
    assert Types.ROW_NAMED(["a"], [Types.INT()]) != Types.ROW_NAMED(["b"], [Types.INT()])
    assert Types.ROW([Types.INT()]) != Types.ROW_NAMED(["f0"], [Types.INT()])  # same fields, other repr
    assert Types.LIST(Types.INT()) != Types.OBJECT_ARRAY(Types.INT())
    assert len({Types.STRING(), Types.STRING(), Types.CHAR()}) == 2
    info = Types.MAP(Types.STRING(), Types.TUPLE([Types.INT()]))
    assert pickle.loads(pickle.dumps(info)) == info


def test_primitive_and_basic_arrays_take_only_flinks_element_types() -> None:
    for element in ("BOOLEAN", "BYTE", "SHORT", "INT", "LONG", "FLOAT", "DOUBLE", "CHAR"):
        assert Types.PRIMITIVE_ARRAY(getattr(Types, element)()) is not None
        assert Types.BASIC_ARRAY(getattr(Types, element)()) is not None
    assert Types.BASIC_ARRAY(Types.STRING()).arrow_type() == pa.list_(pa.string())
    with pytest.raises(TypeError, match=r"PRIMITIVE_ARRAY takes one of Types.BOOLEAN\(\), .* not Types.STRING\(\)"):
        Types.PRIMITIVE_ARRAY(Types.STRING())
    with pytest.raises(TypeError, match="BASIC_ARRAY takes one of"):
        Types.BASIC_ARRAY(Types.LIST(Types.INT()))


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: Types.ROW([Types.INT(), "x"]), TypeError, r"ROW field_types\[1\] must be a TypeInformation"),
        (lambda: Types.ROW(Types.INT()), TypeError, "ROW field_types must be a list of TypeInformation"),
        (lambda: Types.TUPLE([Types.PICKLED_BYTE_ARRAY()]), TypeError, "PICKLED_BYTE_ARRAY describes a whole value"),
        (lambda: Types.LIST(int), TypeError, "the element type of LIST must be a TypeInformation"),
        (lambda: Types.MAP(Types.STRING(), Types.PICKLED_BYTE_ARRAY()), TypeError, "the value type of MAP"),
        (lambda: Types.ROW_NAMED(["a"], [Types.INT(), Types.INT()]), ValueError, "1 names, 2 types"),
        (lambda: Types.ROW_NAMED(["a", "a"], [Types.INT(), Types.INT()]), ValueError, "must be unique"),
        (lambda: Types.ROW_NAMED("ab", [Types.INT(), Types.INT()]), TypeError, "field_names must be a list of str"),
        (lambda: Types.ROW_NAMED([1], [Types.INT()]), TypeError, "field names are str, not int"),
    ],
)
def test_malformed_composites_are_refused(make: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        make()  # type: ignore[operator]


def test_record_shapes_of_type_informations() -> None:
    assert RecordType.of(Types.ROW([Types.INT()])).shape == "row"  # type: ignore[union-attr]
    assert RecordType.of(Types.ROW_NAMED(["a"], [Types.INT()])).shape == "row"  # type: ignore[union-attr]
    assert RecordType.of(Types.TUPLE([Types.INT()])).shape == "tuple"  # type: ignore[union-attr]
    assert RecordType.of(Types.MAP(Types.INT(), Types.INT())).shape == "scalar"  # type: ignore[union-attr]
    assert RecordType.of(Types.PICKLED_BYTE_ARRAY()) is None
