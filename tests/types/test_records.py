"""``RecordType``: what users declare, its columns and DDL, encode/decode, and its value semantics."""

from __future__ import annotations

import datetime as dt
import pickle
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from panes.types import RecordType, Row, Types, parse_ddl
from panes.types.conform import UTC

from .support import same


def of(declared: Any) -> RecordType:
    record = RecordType.of(declared)
    assert record is not None
    return record


USER = pa.struct([("user", pa.string()), ("n", pa.int64())])


@pytest.mark.parametrize(
    ("declared", "arrow_type", "shape"),
    [
        ("user STRING, n BIGINT", USER, "dict"),
        (pa.schema([("user", pa.string()), ("n", pa.int64())]), USER, "dict"),
        (USER, USER, "dict"),
        (pa.int64(), pa.int64(), "scalar"),
        (pa.list_(pa.large_string()), pa.list_(pa.string()), "scalar"),
        (Types.ROW_NAMED(["user", "n"], [Types.STRING(), Types.LONG()]), USER, "row"),
        (Types.ROW([Types.STRING()]), pa.struct([("f0", pa.string())]), "row"),
        (Types.TUPLE([Types.STRING(), Types.LONG()]), pa.struct([("_1", pa.string()), ("_2", pa.int64())]), "tuple"),
        (Types.LONG(), pa.int64(), "scalar"),
        (Types.MAP(Types.STRING(), Types.LONG()), pa.map_(pa.string(), pa.int64()), "scalar"),
        (Types.PRIMITIVE_ARRAY(Types.BYTE()), pa.binary(), "scalar"),
    ],
)
def test_of_accepts_every_way_to_declare(declared: Any, arrow_type: pa.DataType, shape: str) -> None:
    record = of(declared)
    assert record.arrow_type == arrow_type
    assert record.shape == shape


def test_of_returns_a_record_type_as_it_is_and_none_for_pickled_values() -> None:
    record = of("a INT")
    assert RecordType.of(record) is record
    assert RecordType.of(Types.PICKLED_BYTE_ARRAY()) is None


@pytest.mark.parametrize("declared", [42, None, int, {"a": "INT"}, ["a INT"], pa.field("a", pa.int32())])
def test_of_refuses_anything_else_with_the_ways_to_declare(declared: Any) -> None:
    with pytest.raises(TypeError, match=r"cannot use .* as a record type: declare it with Types"):
        RecordType.of(declared)


def test_a_ddl_string_is_a_column_list_and_a_single_type_says_how_to_declare_it() -> None:
    with pytest.raises(ValueError, match="'BIGINT' is a single type, but a DDL string declares a column list"):
        RecordType.of("BIGINT")
    with pytest.raises(ValueError, match=r"pa\.int64\(\)"):
        RecordType.of("ARRAY<STRING>")
    with pytest.raises(ValueError, match="invalid DDL at position 6"):
        RecordType.of("a INT,")


@pytest.mark.parametrize(
    ("arrow_type", "message"),
    [
        (pa.uint32(), "panes cannot move this type: Arrow type uint32 has no Spark SQL equivalent"),
        (pa.struct([("a", pa.int8()), ("a", pa.int16())]), "the record repeats the field name(s) 'a'"),
        (
            pa.struct([("s", pa.struct([("b", pa.int8()), ("b", pa.int8())]))]),
            "field 's' repeats the field name(s) 'b'",
        ),
        (
            pa.map_(pa.list_(pa.int8()), pa.int8()),
            "the keys of the record are list<item: int8>: map keys must be scalars",
        ),
        (
            pa.list_(pa.map_(pa.struct([("x", pa.int8())]), pa.int8())),
            "the keys of the elements of the record are struct",
        ),
    ],
)
def test_types_panes_cannot_move_are_refused(arrow_type: pa.DataType, message: str) -> None:
    with pytest.raises(TypeError) as caught:
        RecordType.of(arrow_type)
    assert message in str(caught.value)


def test_shapes_must_go_with_the_type() -> None:
    assert RecordType(USER, "row").shape == "row"
    assert RecordType(USER).shape == "dict"
    assert RecordType(pa.int8()).shape == "scalar"
    with pytest.raises(ValueError, match="only a struct has dict, row or tuple shape"):
        RecordType(pa.int8(), "dict")
    with pytest.raises(ValueError, match="only a struct has dict, row or tuple shape"):
        RecordType(USER, "scalar")
    with pytest.raises(ValueError, match="shape must be one of dict, row, tuple, scalar, not 'table'"):
        RecordType(USER, "table")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="takes a pyarrow DataType or Field, not str"):
        RecordType("a INT")  # type: ignore[arg-type]


def test_columns_and_ddl() -> None:
    record = of("user STRING, n BIGINT NOT NULL COMMENT 'count'")
    assert record.columns().equals(parse_ddl("user STRING, n BIGINT NOT NULL COMMENT 'count'"), check_metadata=True)
    assert record.ddl() == "user STRING, n BIGINT NOT NULL COMMENT 'count'"
    scalar = of(Types.LIST(Types.INT()))
    assert scalar.columns() == pa.schema([pa.field("value", pa.list_(pa.int32()))])
    assert scalar.columns().field("value").nullable
    assert scalar.ddl() == "value ARRAY<INT>"
    assert of(Types.ROW([Types.LONG(), Types.STRING()])).ddl() == "f0 BIGINT, f1 STRING"
    assert of(Types.TUPLE([Types.LONG()])).ddl() == "_1 BIGINT"


def test_repr_shows_shape_and_ddl() -> None:
    assert repr(of("user STRING, n BIGINT")) == "RecordType(dict: user STRING, n BIGINT)"
    assert repr(of(Types.ROW_NAMED(["a"], [Types.INSTANT()]))) == "RecordType(row: a TIMESTAMP)"
    assert repr(of(Types.TUPLE([Types.SHORT()]))) == "RecordType(tuple: _1 SMALLINT)"
    assert repr(of(Types.SQL_TIME())) == "RecordType(scalar: TIME(6))"


def test_equality_hashing_and_pickling() -> None:
    a = of("user STRING, n BIGINT")
    assert a == of(pa.schema([("user", pa.string()), ("n", pa.int64())]))
    assert a == of(pa.schema([("user", pa.large_string()), ("n", pa.int64())]))  # normalized
    assert hash(a) == hash(of("user STRING, n BIGINT"))
    assert a != of(Types.ROW_NAMED(["user", "n"], [Types.STRING(), Types.LONG()]))  # another shape
    assert a != of("user STRING, n BIGINT NOT NULL")
    assert a != of("user STRING, n BIGINT COMMENT 'x'")  # metadata counts, as in Spark
    assert of(Types.CHAR()) != of(Types.STRING())
    assert a != "user STRING, n BIGINT"
    for record in (a, of(Types.CHAR()), of(Types.TUPLE([Types.LIST(Types.CHAR())]))):
        restored = pickle.loads(pickle.dumps(record))
        assert restored == record
        assert restored.ddl() == record.ddl()
    assert pickle.loads(pickle.dumps(of(Types.CHAR()))).conform("x") == "x"
    with pytest.raises(Exception, match="one character"):
        pickle.loads(pickle.dumps(of(Types.CHAR()))).conform("xy")


def test_a_record_type_cannot_be_changed() -> None:
    record = of("a INT")
    with pytest.raises(AttributeError, match="cannot be changed"):
        record.shape = "row"  # type: ignore[misc]
    assert record.shape == "dict"


def test_encode_makes_one_array_of_the_arrow_type_for_every_shape() -> None:
    rows = of(Types.ROW_NAMED(["user", "n"], [Types.STRING(), Types.LONG()]))
    values = [rows.conform(v) for v in ({"user": "a", "n": 1}, ("b", None))]
    array = rows.encode(values)
    assert isinstance(array, pa.StructArray)
    assert array.type == rows.arrow_type
    assert array.to_pylist() == [{"user": "a", "n": 1}, {"user": "b", "n": None}]
    assert rows.decode(array) == [Row(user="a", n=1), Row(user="b", n=None)]
    tuples = of(Types.TUPLE([Types.STRING(), Types.LONG()]))
    assert tuples.decode(tuples.encode([("a", 1), ("b", 2)])) == [("a", 1), ("b", 2)]
    assert of(Types.LONG()).encode([]).type == pa.int64()
    assert of("a INT").decode(of("a INT").encode([])) == []


def test_decode_takes_chunked_arrays_and_nulls() -> None:
    rows = of(Types.ROW_NAMED(["a"], [Types.LONG()]))
    chunked = pa.chunked_array([rows.encode([Row(a=1)]), rows.encode([Row(a=2), Row(a=None)])])
    assert rows.decode(chunked) == [Row(a=1), Row(a=2), Row(a=None)]
    with_null = pa.array([{"a": 1}, None], rows.arrow_type)
    assert rows.decode(with_null) == [Row(a=1), None]
    assert of(Types.TUPLE([])).decode(pa.array([{}, {}], pa.struct([]))) == [(), ()]


def test_decode_casts_arrays_of_other_forms_of_the_type() -> None:
    record = of("name STRING, at TIMESTAMP")
    spark_like = pa.array(
        [{"name": "a", "at": dt.datetime(2020, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))}],
        pa.struct([("name", pa.large_string()), ("at", pa.timestamp("us", tz="Europe/Paris"))]),
    )
    (decoded,) = record.decode(spark_like)
    assert same(decoded, {"name": "a", "at": dt.datetime(2020, 1, 1, tzinfo=UTC)})


def test_decode_refuses_arrays_of_another_type() -> None:
    with pytest.raises(
        TypeError, match=r"cannot decode an array of struct<b: int64> as RecordType\(dict: a BIGINT\): another type"
    ):
        of("a BIGINT").decode(pa.array([{"b": 1}]))
    with pytest.raises(TypeError, match="takes a pyarrow Array or ChunkedArray, not list"):
        of("a BIGINT").decode([1])  # type: ignore[arg-type]


def test_maps_decode_as_dicts_and_decimals_keep_their_scale() -> None:
    record = of("m MAP<STRING, DECIMAL(5,2)>, n ARRAY<MAP<INT, STRING>>")
    value = record.conform({"m": {"x": Decimal("1.5"), "y": None}, "n": [{1: "a"}, {}]})
    (decoded,) = record.decode(record.encode([value]))
    assert same(decoded, {"m": {"x": Decimal("1.50"), "y": None}, "n": [{1: "a"}, {}]})


def test_pyspark_rows_conform_by_name() -> None:
    sql = pytest.importorskip("pyspark.sql")  # only the Row class: no Spark session starts
    record = of("a BIGINT, b STRING")
    assert record.conform(sql.Row(b="x", a=1)) == {"a": 1, "b": "x"}
    assert record.conform(sql.Row(a=1)) == {"a": 1, "b": None}
    nested = of("s STRUCT<a: BIGINT>")
    assert nested.conform({"s": sql.Row(a=3)}) == {"s": {"a": 3}}


def test_decode_casts_nullability_away_but_not_other_types() -> None:
    record = of("a BIGINT NOT NULL")
    assert record.decode(pa.array([{"a": 1}], pa.struct([("a", pa.int64())]))) == [{"a": 1}]
    with pytest.raises(TypeError, match="uint8 has no Spark SQL equivalent"):
        record.decode(pa.array([{"a": 1}], pa.struct([("a", pa.uint8())])))
    with pytest.raises(TypeError, match="another type"):
        record.decode(pa.array([{"a": 1}], pa.struct([("a", pa.int32())])))
