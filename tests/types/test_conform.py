"""The conform rules, one table of accepted values and one of refusals with their exact messages.

Every accepted value is also checked to be canonical: conforming it again gives the same value, and an
encode/decode round trip gives it back with the same Python types.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import types
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from panes.errors import BadRecordError
from panes.types import RecordType, Row, SchemaMismatchError, Types
from panes.types.conform import UTC

from .support import round_trip, same, scalar

PLUS_2 = dt.timezone(dt.timedelta(hours=2))
POINT = collections.namedtuple("POINT", ["a", "b"])


@dataclasses.dataclass
class Point:
    a: int
    b: str | None = None


class SparkLikeRow(tuple):  # type: ignore[type-arg]
    """Stands for a PySpark ``Row``: a tuple whose names ``asDict()`` gives (positional ones refuse)."""

    names: tuple[str, ...] | None = None

    @classmethod
    def make(cls, names: tuple[str, ...] | None, *values: Any) -> SparkLikeRow:
        row = cls(values)
        row.names = names
        return row

    def asDict(self) -> dict[str, Any]:
        if self.names is None:
            raise TypeError("Cannot convert a Row class into dict")
        return dict(zip(self.names, self, strict=True))


class Opaque:
    def __repr__(self) -> str:
        return "<opaque>"


AB = "a BIGINT, b STRING"


def record(declared: Any) -> RecordType:
    result = RecordType.of(declared)
    assert result is not None
    return result


ACCEPTED: list[tuple[str, RecordType, Any, Any]] = [
    # integers: int or numpy integer, range-checked
    ("tinyint max", scalar("TINYINT"), 127, 127),
    ("tinyint min", scalar("TINYINT"), -128, -128),
    ("smallint", scalar("SMALLINT"), -32768, -32768),
    ("int", scalar("INT"), 2**31 - 1, 2**31 - 1),
    ("bigint max", scalar("BIGINT"), 2**63 - 1, 2**63 - 1),
    ("bigint min", scalar("BIGINT"), -(2**63), -(2**63)),
    ("numpy int64", scalar("BIGINT"), np.int64(7), 7),
    ("numpy uint8 into tinyint", scalar("TINYINT"), np.uint8(5), 5),
    ("int subclass", scalar("INT"), type("MyInt", (int,), {})(3), 3),
    # floats: float, numpy float, or an int of at most 2**53
    ("double", scalar("DOUBLE"), 0.1, 0.1),
    ("double from int", scalar("DOUBLE"), 3, 3.0),
    ("double from 2**53", scalar("DOUBLE"), 2**53, 9007199254740992.0),
    ("double from -2**53", scalar("DOUBLE"), -(2**53), -9007199254740992.0),
    ("double from numpy float32", scalar("DOUBLE"), np.float32(1.5), 1.5),
    ("double from numpy int", scalar("DOUBLE"), np.int32(4), 4.0),
    ("double infinity", scalar("DOUBLE"), float("inf"), float("inf")),
    ("double nan", scalar("DOUBLE"), float("nan"), float("nan")),
    ("double negative zero", scalar("DOUBLE"), -0.0, -0.0),
    ("float rounds to single precision", scalar("FLOAT"), 0.1, 0.10000000149011612),
    ("float from int rounds too", scalar("FLOAT"), 16777217, 16777216.0),
    ("float largest", scalar("FLOAT"), 3.4028234663852886e38, 3.4028234663852886e38),
    ("float infinity", scalar("FLOAT"), float("-inf"), float("-inf")),
    ("float from numpy float64", scalar("FLOAT"), np.float64(0.5), 0.5),
    # booleans, strings, binaries
    ("bool", scalar("BOOLEAN"), True, True),
    ("numpy bool", scalar("BOOLEAN"), np.bool_(False), False),
    ("string", scalar("STRING"), "héllo ✓ 𝄞", "héllo ✓ 𝄞"),
    ("numpy str", scalar("STRING"), np.str_("x"), "x"),
    ("empty string", scalar("STRING"), "", ""),
    ("char", record(Types.CHAR()), "x", "x"),
    ("char outside the BMP", record(Types.CHAR()), "𝄞", "𝄞"),
    ("bytes", scalar("BINARY"), b"\x00\xff", b"\x00\xff"),
    ("bytearray", scalar("BINARY"), bytearray(b"ab"), b"ab"),
    ("memoryview", scalar("BINARY"), memoryview(b"cd"), b"cd"),
    ("primitive byte array", record(Types.PRIMITIVE_ARRAY(Types.BYTE())), bytearray(b"z"), b"z"),
    # dates and times
    ("date", scalar("DATE"), dt.date(2020, 1, 2), dt.date(2020, 1, 2)),
    ("first date", scalar("DATE"), dt.date.min, dt.date.min),
    (
        "naive datetime means UTC",
        scalar("TIMESTAMP"),
        dt.datetime(2020, 1, 1, 12),
        dt.datetime(2020, 1, 1, 12, tzinfo=UTC),
    ),
    (
        "aware datetime goes to UTC",
        scalar("TIMESTAMP"),
        dt.datetime(2020, 1, 1, 12, tzinfo=PLUS_2),
        dt.datetime(2020, 1, 1, 10, tzinfo=UTC),
    ),
    ("utc stays", scalar("TIMESTAMP"), dt.datetime(1, 1, 1, tzinfo=dt.timezone.utc), dt.datetime(1, 1, 1, tzinfo=UTC)),
    (
        "microseconds",
        scalar("TIMESTAMP_LTZ"),
        dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
        dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    ),
    ("instant", record(Types.INSTANT()), dt.datetime(2000, 2, 29, tzinfo=UTC), dt.datetime(2000, 2, 29, tzinfo=UTC)),
    (
        "local datetime",
        scalar("TIMESTAMP_NTZ"),
        dt.datetime(2020, 1, 1, 1, 2, 3, 4),
        dt.datetime(2020, 1, 1, 1, 2, 3, 4),
    ),
    ("sql timestamp", record(Types.SQL_TIMESTAMP()), dt.datetime(9999, 12, 31), dt.datetime(9999, 12, 31)),
    ("time", scalar("TIME"), dt.time(23, 59, 59, 999999), dt.time(23, 59, 59, 999999)),
    ("local time", record(Types.LOCAL_TIME()), dt.time(0), dt.time(0)),
    # decimals: exact fit, canonical with the scale's digits
    ("decimal gains digits", scalar("DECIMAL(10,2)"), Decimal("1.5"), Decimal("1.50")),
    ("decimal loses trailing zeros", scalar("DECIMAL(10,2)"), Decimal("1.500"), Decimal("1.50")),
    ("decimal from int", scalar("DECIMAL(10,2)"), 7, Decimal("7.00")),
    ("decimal from numpy int", scalar("DECIMAL(10,2)"), np.int16(-7), Decimal("-7.00")),
    ("decimal exponent form", scalar("DECIMAL(10,2)"), Decimal("1E+2"), Decimal("100.00")),
    ("decimal largest", scalar("DECIMAL(10,2)"), Decimal("99999999.99"), Decimal("99999999.99")),
    ("decimal negative zero", scalar("DECIMAL(10,2)"), Decimal("-0.000"), Decimal("0.00")),
    ("decimal zero with a huge exponent", scalar("DECIMAL(3,1)"), Decimal("0E+999"), Decimal("0.0")),
    (
        "decimal 38 digits",
        scalar("DECIMAL(38,18)"),
        Decimal("-" + "9" * 20 + "." + "9" * 18),
        Decimal("-" + "9" * 20 + "." + "9" * 18),
    ),
    ("big int", record(Types.BIG_INT()), 10**37, Decimal(10**37)),
    ("decimal scale only", scalar("DECIMAL(2,2)"), Decimal("-0.99"), Decimal("-0.99")),
    # arrays and maps
    ("array from tuple", scalar("ARRAY<BIGINT>"), (1, np.int8(2)), [1, 2]),
    ("array with nulls", scalar("ARRAY<BIGINT>"), [None, 1], [None, 1]),
    ("empty array", scalar("ARRAY<STRING>"), [], []),
    ("array from numpy", scalar("ARRAY<DOUBLE>"), np.array([1.5, 2.0]), [1.5, 2.0]),
    ("array of arrays", scalar("ARRAY<ARRAY<FLOAT>>"), [[0.1], (), None], [[0.10000000149011612], [], None]),
    ("map", scalar("MAP<STRING, BIGINT>"), {"a": 1, "b": None}, {"a": 1, "b": None}),
    ("map keys conformed", scalar("MAP<BIGINT, DOUBLE>"), {np.int64(1): 2}, {1: 2.0}),
    ("mapping proxy", scalar("MAP<STRING, STRING>"), types.MappingProxyType({"k": "v"}), {"k": "v"}),
    (
        "map of structs",
        scalar("MAP<DATE, STRUCT<x: INT>>"),
        {dt.date(2020, 1, 1): Row(x=1)},
        {dt.date(2020, 1, 1): {"x": 1}},
    ),
    ("null scalar", scalar("BIGINT"), None, None),
    # structs: the many record forms
    ("dict", record(AB), {"a": 1, "b": "x"}, {"a": 1, "b": "x"}),
    ("dict in field order", record(AB), {"b": "x", "a": 1}, {"a": 1, "b": "x"}),
    ("dict extra keys ignored", record(AB), {"a": 1, "b": "x", "c": 3}, {"a": 1, "b": "x"}),
    ("dict missing nullable key", record(AB), {"a": 1}, {"a": 1, "b": None}),
    ("named row", record(AB), Row(b="x", a=1), {"a": 1, "b": "x"}),
    ("named row extra names", record(AB), Row(a=1, b="x", c=2), {"a": 1, "b": "x"}),
    ("positional row", record(AB), Row(1, "x"), {"a": 1, "b": "x"}),
    ("tuple", record(AB), (1, "x"), {"a": 1, "b": "x"}),
    ("list", record(AB), [1, None], {"a": 1, "b": None}),
    ("namedtuple", record("b STRING, a BIGINT"), POINT(1, "x"), {"b": "x", "a": 1}),
    ("dataclass", record(AB), Point(1, "x"), {"a": 1, "b": "x"}),
    ("spark row", record(AB), SparkLikeRow.make(("b", "a"), "x", 1), {"a": 1, "b": "x"}),
    ("positional spark row", record(AB), SparkLikeRow.make(None, 1, "x"), {"a": 1, "b": "x"}),
    ("spark row missing nullable", record(AB), SparkLikeRow.make(("a",), 1), {"a": 1, "b": None}),
    ("empty struct", record(""), {"anything": 1}, {}),
    ("nested structs are dicts", record("s STRUCT<t: STRUCT<u: INT>>"), {"s": Row(t=(5,))}, {"s": {"t": {"u": 5}}}),
    ("nested null struct", record("s STRUCT<u: INT>"), {"s": None}, {"s": None}),
    (
        "row shape",
        record(Types.ROW_NAMED(["a", "b"], [Types.LONG(), Types.STRING()])),
        {"a": 1, "b": "x"},
        Row(a=1, b="x"),
    ),
    (
        "row shape from tuple",
        record(Types.ROW_NAMED(["a", "b"], [Types.LONG(), Types.STRING()])),
        (1, "x"),
        Row(a=1, b="x"),
    ),
    ("unnamed row type names f0", record(Types.ROW([Types.LONG(), Types.STRING()])), Row(1, "x"), Row(f0=1, f1="x")),
    (
        "nested row in a row is a dict",
        record(Types.ROW_NAMED(["r"], [Types.ROW_NAMED(["x"], [Types.INT()])])),
        Row(r=Row(x=1)),
        Row(r={"x": 1}),
    ),
    ("tuple shape", record(Types.TUPLE([Types.LONG(), Types.STRING()])), (1, "x"), (1, "x")),
    (
        "tuple shape reads named rows by position",
        record(Types.TUPLE([Types.LONG(), Types.STRING()])),
        Row(b=1, a="x"),
        (1, "x"),
    ),
    (
        "tuple shape reads namedtuples by position",
        record(Types.TUPLE([Types.STRING(), Types.LONG()])),
        POINT(a="x", b=1),
        ("x", 1),
    ),
    ("tuple shape from dict by _n", record(Types.TUPLE([Types.LONG(), Types.STRING()])), {"_1": 1}, (1, None)),
    (
        "pyarrow schema",
        record(pa.schema([("ts", pa.timestamp("ms", tz="Asia/Tokyo"))])),
        {"ts": dt.datetime(2020, 1, 1)},
        {"ts": dt.datetime(2020, 1, 1, tzinfo=UTC)},
    ),
]


@pytest.mark.parametrize(
    ("record_type", "value", "canonical"), [case[1:] for case in ACCEPTED], ids=[c[0] for c in ACCEPTED]
)
def test_accepted_values_become_their_canonical_form(record_type: RecordType, value: Any, canonical: Any) -> None:
    conformed = record_type.conform(value)
    assert same(conformed, canonical), (conformed, canonical)
    assert same(record_type.conform(conformed), canonical)
    assert same(round_trip(record_type, conformed), canonical)


REFUSED: list[tuple[str, RecordType, Any, str]] = [
    ("tinyint over", scalar("TINYINT"), 128, "value: 128 (int) does not fit TINYINT: outside [-128, 127]"),
    (
        "smallint under",
        scalar("SMALLINT"),
        -32769,
        "value: -32769 (int) does not fit SMALLINT: outside [-32768, 32767]",
    ),
    ("int over", scalar("INT"), 2**31, "value: 2147483648 (int) does not fit INT: outside [-2147483648, 2147483647]"),
    (
        "bigint over",
        scalar("BIGINT"),
        2**63,
        "value: 9223372036854775808 (int) does not fit BIGINT: outside [-9223372036854775808, 9223372036854775807]",
    ),
    (
        "numpy int over",
        scalar("TINYINT"),
        np.int64(300),
        "value: np.int64(300) (numpy.int64) does not fit TINYINT: outside [-128, 127]",
    ),
    ("bool for int", scalar("BIGINT"), True, "value: True (bool) does not fit BIGINT"),
    ("numpy bool for int", scalar("INT"), np.bool_(True), "value: np.True_ (numpy.bool) does not fit INT"),
    ("float for int", scalar("BIGINT"), 1.0, "value: 1.0 (float) does not fit BIGINT"),
    ("str for int", scalar("BIGINT"), "1", "value: '1' (str) does not fit BIGINT"),
    ("decimal for int", scalar("INT"), Decimal(1), "value: Decimal('1') (Decimal) does not fit INT"),
    (
        "int beyond 2**53",
        scalar("DOUBLE"),
        2**53 + 1,
        "value: 9007199254740993 (int) does not fit DOUBLE: an integer beyond 2**53 is not exact as a float",
    ),
    (
        "int below -2**53",
        scalar("FLOAT"),
        -(2**53) - 1,
        "value: -9007199254740993 (int) does not fit FLOAT: an integer beyond 2**53 is not exact as a float",
    ),
    ("bool for double", scalar("DOUBLE"), False, "value: False (bool) does not fit DOUBLE"),
    ("decimal for double", scalar("DOUBLE"), Decimal("1.5"), "value: Decimal('1.5') (Decimal) does not fit DOUBLE"),
    ("str for double", scalar("DOUBLE"), "1.5", "value: '1.5' (str) does not fit DOUBLE"),
    (
        "float overflow",
        scalar("FLOAT"),
        1e39,
        "value: 1e+39 (float) does not fit FLOAT: outside FLOAT's range (about 3.4e38)",
    ),
    ("int for bool", scalar("BOOLEAN"), 1, "value: 1 (int) does not fit BOOLEAN"),
    ("str for bool", scalar("BOOLEAN"), "true", "value: 'true' (str) does not fit BOOLEAN"),
    ("bytes for string", scalar("STRING"), b"x", "value: b'x' (bytes) does not fit STRING"),
    ("int for string", scalar("STRING"), 1, "value: 1 (int) does not fit STRING"),
    (
        "lone surrogate",
        scalar("STRING"),
        "a\ud800",
        "value: 'a\\ud800' (str) does not fit STRING: not valid Unicode (a lone surrogate)",
    ),
    (
        "lone surrogate in an array",
        record("tags ARRAY<STRING>"),
        {"tags": ["ok", "a\ud800"]},
        "field 'tags[1]': 'a\\ud800' (str) does not fit STRING: not valid Unicode (a lone surrogate)",
    ),
    (
        "lone surrogate as a map key",
        record("c MAP<STRING, INT>"),
        {"c": {"\ud800": 1}},
        "field 'c' key: '\\ud800' (str) does not fit STRING: not valid Unicode (a lone surrogate)",
    ),
    (
        "two chars",
        record(Types.CHAR()),
        "ab",
        "value: 'ab' (str) does not fit STRING: Types.CHAR() holds exactly one character",
    ),
    (
        "no char",
        record(Types.CHAR()),
        "",
        "value: '' (str) does not fit STRING: Types.CHAR() holds exactly one character",
    ),
    ("str for binary", scalar("BINARY"), "x", "value: 'x' (str) does not fit BINARY"),
    ("list for binary", scalar("BINARY"), [1], "value: [1] (list) does not fit BINARY"),
    (
        "datetime for date",
        scalar("DATE"),
        dt.datetime(2020, 1, 1),
        "value: datetime.datetime(2020, 1, 1, 0, 0) (datetime) does not fit DATE: "
        "a datetime is not a date (pass its .date())",
    ),
    ("str for date", scalar("DATE"), "2020-01-01", "value: '2020-01-01' (str) does not fit DATE"),
    (
        "date for timestamp",
        scalar("TIMESTAMP"),
        dt.date(2020, 1, 1),
        "value: datetime.date(2020, 1, 1) (date) does not fit TIMESTAMP",
    ),
    ("int for timestamp", scalar("TIMESTAMP"), 0, "value: 0 (int) does not fit TIMESTAMP"),
    (
        "overflowing instant",
        scalar("TIMESTAMP"),
        dt.datetime(1, 1, 1, tzinfo=PLUS_2),
        "value: datetime.datetime(1, 1, 1, 0, 0, tzinfo=datetime.timezone(datetime.timedelta(seconds=7200))) "
        "(datetime) does not fit TIMESTAMP: outside the years 1 to 9999 in UTC",
    ),
    (
        "aware for local",
        scalar("TIMESTAMP_NTZ"),
        dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc),
        "value: datetime.datetime(2020, 1, 1, 0, 0, tzinfo=datetime.timezone.utc) (datetime) does not fit "
        "TIMESTAMP_NTZ: it has a time zone; TIMESTAMP_NTZ holds local date-times",
    ),
    (
        "date for local",
        record(Types.LOCAL_DATE_TIME()),
        dt.date(2020, 1, 1),
        "value: datetime.date(2020, 1, 1) (date) does not fit TIMESTAMP_NTZ",
    ),
    (
        "aware time",
        scalar("TIME"),
        dt.time(1, tzinfo=dt.timezone.utc),
        "value: datetime.time(1, 0, tzinfo=datetime.timezone.utc) (time) does not fit TIME(6): it has a time zone; "
        "TIME holds local times of day",
    ),
    (
        "datetime for time",
        scalar("TIME"),
        dt.datetime(2020, 1, 1),
        "value: datetime.datetime(2020, 1, 1, 0, 0) (datetime) does not fit TIME(6)",
    ),
    (
        "too many decimals",
        scalar("DECIMAL(10,2)"),
        Decimal("1.234"),
        "value: Decimal('1.234') (Decimal) does not fit DECIMAL(10,2): more than 2 digits after the point",
    ),
    (
        "tiny decimal",
        scalar("DECIMAL(10,2)"),
        Decimal("1E-999"),
        "value: Decimal('1E-999') (Decimal) does not fit DECIMAL(10,2): more than 2 digits after the point",
    ),
    (
        "too many digits",
        scalar("DECIMAL(10,2)"),
        Decimal("123456789"),
        "value: Decimal('123456789') (Decimal) does not fit DECIMAL(10,2): more than 8 digits before the point",
    ),
    (
        "huge decimal",
        scalar("DECIMAL(10,2)"),
        Decimal("1E+999"),
        "value: Decimal('1E+999') (Decimal) does not fit DECIMAL(10,2): more than 8 digits before the point",
    ),
    (
        "int too big for decimal",
        scalar("DECIMAL(3,1)"),
        100,
        "value: 100 (int) does not fit DECIMAL(3,1): more than 2 digits before the point",
    ),
    (
        "big int over 38 digits",
        record(Types.BIG_INT()),
        10**38,
        f"value: {10**38} (int) does not fit DECIMAL(38,0): more than 38 digits before the point",
    ),
    ("float for decimal", scalar("DECIMAL(10,2)"), 1.5, "value: 1.5 (float) does not fit DECIMAL(10,2)"),
    ("bool for decimal", scalar("DECIMAL(10,2)"), True, "value: True (bool) does not fit DECIMAL(10,2)"),
    (
        "nan decimal",
        scalar("DECIMAL(10,2)"),
        Decimal("NaN"),
        "value: Decimal('NaN') (Decimal) does not fit DECIMAL(10,2): not a finite number",
    ),
    (
        "infinite decimal",
        scalar("DECIMAL(10,2)"),
        Decimal("-Infinity"),
        "value: Decimal('-Infinity') (Decimal) does not fit DECIMAL(10,2): not a finite number",
    ),
    (
        "str for array",
        scalar("ARRAY<STRING>"),
        "abc",
        "value: 'abc' (str) does not fit ARRAY<STRING>: an ARRAY is a list or a tuple",
    ),
    (
        "set for array",
        scalar("ARRAY<BIGINT>"),
        {1},
        "value: {1} (set) does not fit ARRAY<BIGINT>: an ARRAY is a list or a tuple",
    ),
    (
        "2-d numpy for array",
        scalar("ARRAY<BIGINT>"),
        np.zeros((1, 1)),
        "value: array([[0.]]) (numpy.ndarray) does not fit ARRAY<BIGINT>: an ARRAY is a list or a tuple",
    ),
    ("bad element", scalar("ARRAY<BIGINT>"), [1, 2, "3"], "value[2]: '3' (str) does not fit BIGINT"),
    (
        "bad nested element",
        scalar("ARRAY<ARRAY<INT>>"),
        [[1], [2, 2**40]],
        "value[1][1]: 1099511627776 (int) does not fit INT: outside [-2147483648, 2147483647]",
    ),
    (
        "list for map",
        scalar("MAP<STRING, BIGINT>"),
        [("a", 1)],
        "value: [('a', 1)] (list) does not fit MAP<STRING, BIGINT>: a MAP is a dict",
    ),
    ("bad map key", scalar("MAP<STRING, BIGINT>"), {1: 1}, "value key: 1 (int) does not fit STRING"),
    ("null map key", scalar("MAP<STRING, BIGINT>"), {None: 1}, "value key: None does not fit STRING NOT NULL"),
    ("bad map value", scalar("MAP<STRING, BIGINT>"), {"k": 1.5}, "value['k']: 1.5 (float) does not fit BIGINT"),
    (
        "map keys merging",
        scalar("MAP<FLOAT, INT>"),
        {1.0: 1, 1.0000000001: 2},
        "value: {1.0: 1, 1.0000000001: 2} (dict) does not fit MAP<FLOAT, INT>: two keys become the same key 1.0",
    ),
    ("bad field", record(AB), {"a": 1.5}, "field 'a': 1.5 (float) does not fit BIGINT"),
    ("null record", record(AB), None, "value: None does not fit STRUCT<a: BIGINT, b: STRING> NOT NULL"),
    (
        "scalar for record",
        record(AB),
        5,
        "value: 5 (int) does not fit STRUCT<a: BIGINT, b: STRING>: "
        "a record is a dict, a Row, a tuple, a namedtuple or a dataclass",
    ),
    (
        "object for record",
        record(AB),
        Opaque(),
        "value: <opaque> (Opaque) does not fit STRUCT<a: BIGINT, b: STRING>: "
        "a record is a dict, a Row, a tuple, a namedtuple or a dataclass",
    ),
    (
        "short tuple",
        record(AB),
        (1,),
        "value: (1,) (tuple) does not fit STRUCT<a: BIGINT, b: STRING>: it has 1 value for 2 fields",
    ),
    (
        "long list",
        record("a INT"),
        [1, 2],
        "value: [1, 2] (list) does not fit STRUCT<a: INT>: it has 2 values for 1 field",
    ),
    (
        "positional row length",
        record(AB),
        Row(1, "x", 3),
        "value: Row(1, 'x', 3) (Row) does not fit STRUCT<a: BIGINT, b: STRING>: it has 3 values for 2 fields",
    ),
    ("bad positional field", record(AB), (1, 2), "field 'b': 2 (int) does not fit STRING"),
    ("missing required key", record("a BIGINT NOT NULL"), {}, "field 'a': missing, and BIGINT NOT NULL needs a value"),
    ("null required field", record("a BIGINT NOT NULL"), {"a": None}, "field 'a': None does not fit BIGINT NOT NULL"),
    ("named row missing a field", record(AB), Row(a=1), "field 'b': missing from Row(a=1) (Row)"),
    (
        "namedtuple missing a field",
        record("a BIGINT, c STRING"),
        POINT(1, "x"),
        "field 'c': missing from POINT(a=1, b='x') (POINT)",
    ),
    (
        "dataclass missing a field",
        record("a BIGINT, c STRING"),
        Point(1),
        "field 'c': missing from Point(a=1, b=None) (Point)",
    ),
    (
        "dataclass bad field",
        record(AB),
        Point(1, 2),  # type: ignore[arg-type]
        "field 'b': 2 (int) does not fit STRING",
    ),
    (
        "spark row bad field",
        record(AB),
        SparkLikeRow.make(("a", "b"), "x", "y"),
        "field 'a': 'x' (str) does not fit BIGINT",
    ),
    (
        "unnamed row type wants f0",
        record(Types.ROW([Types.LONG()])),
        Row(a=1),
        "field 'f0': missing from Row(a=1) (Row)",
    ),
    (
        "tuple shape length",
        record(Types.TUPLE([Types.LONG(), Types.STRING()])),
        Row(a=1),
        "value: Row(a=1) (Row) does not fit STRUCT<_1: BIGINT, _2: STRING>: it has 1 value for 2 fields",
    ),
    (
        "deep path",
        record("s STRUCT<xs: ARRAY<STRUCT<m: MAP<STRING, INT>>>>"),
        {"s": {"xs": [{"m": {}}, Row(m={"k": "v"})]}},
        "field \"s.xs[1].m['k']\": 'v' (str) does not fit INT",
    ),
    (
        "deep map key",
        record("s STRUCT<m: MAP<INT, INT>>"),
        {"s": {"m": {"k": 1}}},
        "field 's.m' key: 'k' (str) does not fit INT",
    ),
    ("odd names quoted", record("`odd name` INT"), {"odd name": "x"}, "field 'odd name': 'x' (str) does not fit INT"),
    ("long values are cut", scalar("BIGINT"), "x" * 200, "value: '" + "x" * 96 + "... (str) does not fit BIGINT"),
]


@pytest.mark.parametrize(
    ("record_type", "value", "message"), [case[1:] for case in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_refused_values_raise_a_message_naming_field_type_and_value(
    record_type: RecordType, value: Any, message: str
) -> None:
    with pytest.raises(SchemaMismatchError) as caught:
        record_type.conform(value)
    assert str(caught.value) == message


def test_a_schema_mismatch_is_a_bad_record() -> None:
    assert issubclass(SchemaMismatchError, BadRecordError)
    assert issubclass(SchemaMismatchError, ValueError)
    with pytest.raises(BadRecordError):
        scalar("INT").conform("x")


def test_the_mismatch_hides_the_internal_traceback() -> None:
    with pytest.raises(SchemaMismatchError) as caught:
        record(AB).conform({"a": "x"})
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__


def test_canonical_values_are_new_objects_only_where_needed() -> None:
    value = {"a": 1, "b": "x"}
    conformed = record(AB).conform(value)
    assert conformed == value
    assert conformed is not value  # a fresh dict: the caller's may change later
    text = "kept"
    assert scalar("STRING").conform(text) is text
