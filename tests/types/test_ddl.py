"""``parse_ddl`` / ``to_ddl``: Spark DDL column lists to Arrow schemas and back."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from panes.types import parse_ddl, to_ddl
from panes.types.ddl import normalize_type

UTC_TS = pa.timestamp("us", tz="UTC")


def test_the_example_column_list() -> None:
    schema = parse_ddl(
        "user STRING, n BIGINT NOT NULL, tags ARRAY<STRING>, m MAP<STRING, DOUBLE>, "
        "s STRUCT<a: INT, b STRING>, `odd name` DECIMAL(10,2) COMMENT 'x'"
    )
    assert schema.equals(
        pa.schema(
            [
                pa.field("user", pa.string()),
                pa.field("n", pa.int64(), nullable=False),
                pa.field("tags", pa.list_(pa.string())),
                pa.field("m", pa.map_(pa.string(), pa.float64())),
                pa.field("s", pa.struct([("a", pa.int32()), ("b", pa.string())])),
                pa.field("odd name", pa.decimal128(10, 2), metadata={"comment": "x"}),
            ]
        ),
        check_metadata=True,
    )


@pytest.mark.parametrize(
    ("ddl", "arrow"),
    [
        ("BOOLEAN", pa.bool_()),
        ("TINYINT", pa.int8()),
        ("BYTE", pa.int8()),
        ("SMALLINT", pa.int16()),
        ("SHORT", pa.int16()),
        ("INT", pa.int32()),
        ("INTEGER", pa.int32()),
        ("BIGINT", pa.int64()),
        ("LONG", pa.int64()),
        ("FLOAT", pa.float32()),
        ("REAL", pa.float32()),
        ("DOUBLE", pa.float64()),
        ("DECIMAL", pa.decimal128(10, 0)),
        ("DEC(5)", pa.decimal128(5, 0)),
        ("NUMERIC(38, 18)", pa.decimal128(38, 18)),
        ("decimal(7,7)", pa.decimal128(7, 7)),
        ("STRING", pa.string()),
        ("VARCHAR(10)", pa.string()),
        ("CHAR(1)", pa.string()),
        ("BINARY", pa.binary()),
        ("DATE", pa.date32()),
        ("TIMESTAMP", UTC_TS),
        ("TIMESTAMP_LTZ", UTC_TS),
        ("TIMESTAMP_NTZ", pa.timestamp("us")),
        ("TIME", pa.time64("us")),
        ("TIME(6)", pa.time64("us")),
        ("ARRAY<BIGINT>", pa.list_(pa.int64())),
        ("array < array<int> >", pa.list_(pa.list_(pa.int32()))),
        ("MAP<STRING, ARRAY<DATE>>", pa.map_(pa.string(), pa.list_(pa.date32()))),
        ("STRUCT<>", pa.struct([])),
        (
            "STRUCT<a INT NOT NULL, `b c`: STRING COMMENT 'd'>",
            pa.struct(
                [pa.field("a", pa.int32(), nullable=False), pa.field("b c", pa.string(), metadata={"comment": "d"})]
            ),
        ),
    ],
)
def test_every_type_maps_to_its_arrow_type(ddl: str, arrow: pa.DataType) -> None:
    field = parse_ddl(f"x {ddl}").field("x")
    assert field.type.equals(arrow, check_metadata=True)
    assert field.nullable


def test_type_names_are_case_insensitive_and_names_keep_their_case() -> None:
    assert parse_ddl("UserId bigint, Tags Array<String>") == parse_ddl("UserId BIGINT, Tags ARRAY<STRING>")
    assert parse_ddl("UserId bigint").names == ["UserId"]


def test_names_may_be_keywords_and_a_colon_may_separate_name_and_type() -> None:
    schema = parse_ddl("timestamp TIMESTAMP, date: DATE, comment STRING COMMENT 'c', not INT NOT NULL")
    assert schema.names == ["timestamp", "date", "comment", "not"]
    assert schema.field("comment").metadata == {b"comment": b"c"}
    assert not schema.field("not").nullable


def test_backquoted_names_hold_anything_and_a_doubled_backquote_is_one() -> None:
    assert parse_ddl("`a b`INT, `x``y` STRING, `` BINARY").names == ["a b", "x`y", ""]


def test_comment_strings_take_both_quotes_and_backslash_escapes() -> None:
    schema = parse_ddl(r"""a INT COMMENT "it's", b INT COMMENT 'say \'hi\'\n\\'""")
    assert schema.field("a").metadata == {b"comment": b"it's"}
    assert schema.field("b").metadata == {b"comment": b"say 'hi'\n\\"}


def test_an_empty_string_is_the_empty_schema() -> None:
    assert parse_ddl("") == pa.schema([])
    assert parse_ddl("   ") == pa.schema([])
    assert to_ddl(pa.schema([])) == ""


@pytest.mark.parametrize(
    ("text", "position", "expected"),
    [
        ("a", 1, "expected a type name, found the end"),
        ("a INT,", 6, "expected a field name, found the end"),
        ("a INT b STRING", 6, "expected ',' or the end after the type of 'a', found 'b'"),
        ("a FOO", 2, "expected a type name (one of ARRAY, BIGINT,"),
        ("a DECIMAL(40)", 10, "expected a DECIMAL precision in [1, 38], found '40'"),
        ("a DECIMAL(0)", 10, "expected a DECIMAL precision in [1, 38], found '0'"),
        ("a DECIMAL(5, 6)", 13, "expected a DECIMAL scale in [0, 5] (at most the precision), found '6'"),
        ("a DECIMAL(5,", 12, "expected the scale of DECIMAL, found the end"),
        ("a DECIMAL(x)", 10, "expected the precision of DECIMAL, found 'x'"),
        ("a VARCHAR", 9, "expected '(' and a length after VARCHAR, found the end"),
        ("a CHAR(0)", 7, "expected a length of CHAR of at least 1, found '0'"),
        ("a TIME(3)", 7, "expected TIME(6): panes holds times in microseconds, found '3'"),
        ("a ARRAY<INT", 11, "expected '>' closing ARRAY<, found the end"),
        ("a ARRAY INT", 8, "expected '<' after ARRAY, found 'INT'"),
        ("a MAP<INT>", 9, "expected ',' between the key and value types of MAP, found '>'"),
        ("a STRUCT<b INT", 14, "expected ',' or '>' after the type of 'b', found the end"),
        ("a STRUCT<b INT,>", 15, "expected a field name, found '>'"),
        ("a INT NOT", 9, "expected NULL after NOT, found the end"),
        ("a INT COMMENT x", 14, "expected a quoted comment after COMMENT, found 'x'"),
        ("`a INT", 0, "expected a closing ` for this name, found the end"),
        ("a INT COMMENT 'x", 14, "expected a closing ' for this string, found the end"),
        ("a INT, a STRING", 7, "expected a new field name, found 'a' again"),
        ("a STRUCT<b INT, b INT>", 16, "expected a new field name, found 'b' again"),
        (", a INT", 0, "expected a field name, found ','"),
        ("a INT;", 5, "expected ',' or the end after the type of 'a', found ';'"),
        ("a 12", 2, "expected a type name, found '12'"),
        ("a INT(11)", 5, "expected ',' or the end after the type of 'a', found '('"),
    ],
)
def test_malformed_strings_name_the_position_and_what_was_expected(text: str, position: int, expected: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_ddl(text)
    message = str(caught.value)
    first_line, shown, caret = message.split("\n")
    assert first_line.startswith(f"invalid DDL at position {position}: {expected}")
    assert shown == f"  {text}"
    assert caret == "  " + " " * position + "^"


def test_parse_ddl_takes_only_strings() -> None:
    with pytest.raises(TypeError, match="DDL string, not int"):
        parse_ddl(3)  # type: ignore[arg-type]


def test_to_ddl_prints_the_canonical_spelling() -> None:
    text = "user string, n long not null, tags array<string>, m map<string,double>, s struct<a int, b string>"
    assert to_ddl(parse_ddl(text)) == (
        "user STRING, n BIGINT NOT NULL, tags ARRAY<STRING>, m MAP<STRING, DOUBLE>, s STRUCT<a: INT, b: STRING>"
    )
    assert to_ddl(parse_ddl("t TIMESTAMP_LTZ, u TIMESTAMP_NTZ, d DEC, v TIME")) == (
        "t TIMESTAMP, u TIMESTAMP_NTZ, d DECIMAL(10,0), v TIME(6)"
    )


def test_to_ddl_quotes_names_that_need_it_and_escapes_comments() -> None:
    schema = pa.schema(
        [
            pa.field("odd name", pa.int32()),
            pa.field("x`y", pa.int8()),
            pa.field("9lives", pa.bool_()),
            pa.field("c", pa.string(), metadata={"comment": "it's\na \\ test"}),
        ]
    )
    text = to_ddl(schema)
    assert text == "`odd name` INT, `x``y` TINYINT, `9lives` BOOLEAN, c STRING COMMENT 'it\\'s\\na \\\\ test'"
    assert parse_ddl(text).equals(schema, check_metadata=True)


@pytest.mark.parametrize(
    ("arrow", "ddl"),
    [
        (pa.large_string(), "STRING"),
        (pa.large_binary(), "BINARY"),
        (pa.binary(4), "BINARY"),
        (pa.large_list(pa.int16()), "ARRAY<SMALLINT>"),
        (pa.list_(pa.int16(), 3), "ARRAY<SMALLINT>"),
        (pa.timestamp("ns", tz="Europe/Paris"), "TIMESTAMP"),
        (pa.timestamp("ms"), "TIMESTAMP_NTZ"),
        (pa.time64("ns"), "TIME(6)"),
        (pa.decimal256(20, 3), "DECIMAL(20,3)"),
        (pa.dictionary(pa.int32(), pa.string()), "STRING"),
        (pa.struct([("a", pa.large_list(pa.large_string()))]), "STRUCT<a: ARRAY<STRING>>"),
    ],
)
def test_large_and_other_arrow_forms_print_like_their_spark_type(arrow: pa.DataType, ddl: str) -> None:
    assert to_ddl(arrow) == ddl


@pytest.mark.parametrize(
    "arrow",
    [
        pa.uint8(),
        pa.uint64(),
        pa.float16(),
        pa.null(),
        pa.date64(),
        pa.time32("s"),
        pa.duration("us"),
        pa.decimal256(40, 2),
        pa.month_day_nano_interval(),
        pa.list_(pa.uint32()),
        pa.struct([("a", pa.map_(pa.string(), pa.uint16()))]),
    ],
)
def test_arrow_types_with_no_spark_equivalent_are_refused_by_name(arrow: pa.DataType) -> None:
    with pytest.raises(ValueError, match="has no Spark SQL equivalent"):
        to_ddl(arrow)
    with pytest.raises(ValueError, match="has no Spark SQL equivalent"):
        to_ddl(pa.schema([("x", arrow)]))


def test_the_refusal_names_the_innermost_arrow_type() -> None:
    with pytest.raises(ValueError, match="Arrow type uint16 has no"):
        to_ddl(pa.struct([("a", pa.map_(pa.string(), pa.uint16()))]))


def test_to_ddl_takes_a_schema_or_a_type() -> None:
    with pytest.raises(TypeError, match="not str"):
        to_ddl("a INT")  # type: ignore[arg-type]


def test_normalize_type_keeps_names_nullability_and_metadata() -> None:
    field = pa.field("a", pa.large_string(), nullable=False, metadata={"k": "v"})
    normalized = normalize_type(pa.struct([field, ("b", pa.large_list(pa.field("element", pa.int8(), False)))]))
    assert normalized.field(0).equals(
        pa.field("a", pa.string(), nullable=False, metadata={"k": "v"}), check_metadata=True
    )
    assert normalized.field(1).type.value_field.equals(pa.field("item", pa.int8(), nullable=False))


# -- round trips ---------------------------------------------------------------------------------------------

_SCALARS = st.sampled_from(
    [
        pa.bool_(),
        pa.int8(),
        pa.int16(),
        pa.int32(),
        pa.int64(),
        pa.float32(),
        pa.float64(),
        pa.string(),
        pa.binary(),
        pa.date32(),
        UTC_TS,
        pa.timestamp("us"),
        pa.time64("us"),
        pa.decimal128(10, 0),
        pa.decimal128(38, 18),
        pa.decimal128(1, 1),
    ]
)
_NAMES = st.text(min_size=0, max_size=6)
_COMMENTS = st.none() | st.text(max_size=8)


def _fields(children: st.SearchStrategy[pa.DataType]) -> st.SearchStrategy[list[pa.Field]]:
    field = st.builds(
        lambda name, t, nullable, comment: pa.field(
            name, t, nullable=nullable, metadata=None if comment is None else {"comment": comment}
        ),
        _NAMES,
        children,
        st.booleans(),
        _COMMENTS,
    )
    return st.lists(field, max_size=4, unique_by=lambda f: f.name)


_DDL_TYPES = st.recursive(
    _SCALARS,
    lambda children: st.one_of(
        children.map(pa.list_),
        st.tuples(_SCALARS, children).map(lambda kv: pa.map_(*kv)),
        _fields(children).map(pa.struct),
    ),
    max_leaves=10,
)


@given(_fields(_DDL_TYPES))
def test_parse_of_to_ddl_gives_the_schema_back(fields: list[pa.Field]) -> None:
    schema = pa.schema(fields)
    assert parse_ddl(to_ddl(schema)).equals(schema, check_metadata=True)


@given(_fields(_DDL_TYPES))
def test_to_ddl_of_parse_is_a_fixed_point(fields: list[pa.Field]) -> None:
    text = to_ddl(pa.schema(fields))
    assert to_ddl(parse_ddl(text)) == text
