"""``infer_record_type``: the first value decides; parts that are None there come from later values."""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from panes.types import RecordType, Row, SchemaInferenceError, infer_record_type

Pair = collections.namedtuple("Pair", ["x", "y"])


@dataclasses.dataclass
class Click:
    page: str
    n: int


class SparkLikeRow(tuple):  # type: ignore[type-arg]
    def asDict(self) -> dict[str, Any]:
        return {"k": self[0]}


UTC_TS = pa.timestamp("us", tz="UTC")


@pytest.mark.parametrize(
    ("value", "arrow_type"),
    [
        (True, pa.bool_()),
        (1, pa.int64()),
        (np.int8(1), pa.int64()),
        (1.5, pa.float64()),
        (np.float32(1.5), pa.float64()),
        (np.bool_(True), pa.bool_()),
        ("x", pa.string()),
        (b"x", pa.binary()),
        (bytearray(b"x"), pa.binary()),
        (Decimal("1.5"), pa.decimal128(38, 18)),
        (dt.datetime(2020, 1, 1), UTC_TS),
        (dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc), UTC_TS),
        (dt.date(2020, 1, 1), pa.date32()),
        (dt.time(1, 2), pa.time64("us")),
        ([1, 2], pa.list_(pa.int64())),
        ([None, "a"], pa.list_(pa.string())),
    ],
)
def test_scalars_take_the_arrow_type_spark_infers(value: Any, arrow_type: pa.DataType) -> None:
    record = infer_record_type([value])
    assert record == RecordType(arrow_type)
    assert record.shape == "scalar"
    assert record.conform(value) is not None


def test_the_shape_of_the_first_value() -> None:
    assert infer_record_type([{"a": 1}]).shape == "dict"
    assert infer_record_type([Row(a=1)]) == RecordType(pa.struct([("a", pa.int64())]), "row")
    assert infer_record_type([Row(1, "x")]) == RecordType(pa.struct([("f0", pa.int64()), ("f1", pa.string())]), "row")
    assert infer_record_type([(1, "x")]) == RecordType(pa.struct([("_1", pa.int64()), ("_2", pa.string())]), "tuple")
    assert infer_record_type([Pair(1, "x")]) == RecordType(pa.struct([("x", pa.int64()), ("y", pa.string())]), "dict")
    assert infer_record_type([Click("/a", 1)]) == RecordType(
        pa.struct([("page", pa.string()), ("n", pa.int64())]), "dict"
    )
    assert infer_record_type([SparkLikeRow([1.5])]) == RecordType(pa.struct([("k", pa.float64())]), "dict")
    assert infer_record_type([[1]]).shape == "scalar"


def test_inside_a_record_dicts_are_maps_tuples_are_lists_and_records_are_structs() -> None:
    record = infer_record_type(
        [{"m": {"a": 1.5}, "t": (1, 2), "r": Row(x=1), "p": Pair(1, "y"), "c": Click("/", 1), "nested": [[Row(z=b"")]]}]
    )
    assert record.arrow_type == pa.struct(
        [
            ("m", pa.map_(pa.string(), pa.float64())),
            ("t", pa.list_(pa.int64())),
            ("r", pa.struct([("x", pa.int64())])),
            ("p", pa.struct([("x", pa.int64()), ("y", pa.string())])),
            ("c", pa.struct([("page", pa.string()), ("n", pa.int64())])),
            ("nested", pa.list_(pa.list_(pa.struct([("z", pa.binary())])))),
        ]
    )


def test_the_first_value_decides_and_later_values_are_not_merged() -> None:
    record = infer_record_type([{"a": 1}, {"a": "x", "b": 2}])
    assert record.arrow_type == pa.struct([("a", pa.int64())])
    assert infer_record_type([1, "x"]) == RecordType(pa.int64())
    assert infer_record_type([[1], ["x"]]) == RecordType(pa.list_(pa.int64()))


def test_none_parts_take_their_type_from_the_first_later_value_that_has_one() -> None:
    record = infer_record_type(
        [
            {"a": None, "tags": [], "m": {}, "s": Row(x=None), "l": [None]},
            {"a": None, "tags": [None], "m": {"k": None}, "s": None, "l": None},
            {"a": 1.5, "tags": ["x"], "m": {"k": 2}, "s": Row(x=True), "l": [[None]]},
            {"a": "later types are not used", "l": [[dt.date(2020, 1, 1)]]},
        ]
    )
    assert record.arrow_type == pa.struct(
        [
            ("a", pa.float64()),
            ("tags", pa.list_(pa.string())),
            ("m", pa.map_(pa.string(), pa.int64())),
            ("s", pa.struct([("x", pa.bool_())])),
            ("l", pa.list_(pa.list_(pa.date32()))),
        ]
    )
    assert record.conform({"a": None, "tags": [], "m": {}, "s": Row(x=None), "l": [None]}) is not None


def test_a_first_value_of_none_is_resolved_by_the_next_value() -> None:
    assert infer_record_type([None, 3]) == RecordType(pa.int64())
    assert infer_record_type([None, {"a": 1}]).shape == "dict"


def test_later_records_of_another_form_still_resolve_fields_by_name() -> None:
    record = infer_record_type([{"a": None}, Row(a=1), Click("/", 1)])
    assert record.arrow_type == pa.struct([("a", pa.int64())])


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([], "there are no values to infer a record type from; declare the type instead"),
        ([None, None], "every value is None, so its type cannot be inferred"),
        ([{"a": 1, "b": None}, {"a": 2}], "field 'b' is None, empty or missing in every value"),
        ([{"s": Row(x=None)}], "field 's.x' is None, empty or missing in every value"),
        ([{"tags": []}, {"tags": [None]}], "field 'tags[]' is None, empty or missing in every value"),
        ([[]], "value[] is None, empty or missing in every value"),
        ([{"m": {}}], "field 'm.keys()' is None, empty or missing in every value"),
        ([{"m": {"k": None}}], "field 'm.values()' is None, empty or missing in every value"),
        ([object()], "cannot infer an Arrow type for value: object values have none"),
        ([{"a": {1, 2}}], "cannot infer an Arrow type for field 'a': set values have none"),
        ([{"m": {(1, 2): 1}}], "field 'm.keys()' are not scalars; map keys must be"),
        ([{1: "x"}], "the value has a key 1 that is not a str; field names are"),
    ],
)
def test_what_cannot_be_inferred_is_named_and_says_to_declare_a_schema(values: list[Any], message: str) -> None:
    with pytest.raises(SchemaInferenceError) as caught:
        infer_record_type(values)
    assert message in str(caught.value)
    assert "declare the type instead" in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_inferred_types_conform_and_round_trip_the_values() -> None:
    values = [
        {"user": "a", "at": dt.datetime(2020, 1, 1), "tags": ("x",), "price": Decimal("1.25"), "meta": {"k": [1]}},
        {"user": "b", "at": None, "tags": [], "price": None, "meta": {}},
    ]
    record = infer_record_type(values)
    conformed = [record.conform(v) for v in values]
    assert record.decode(record.encode(conformed)) == conformed
    assert conformed[0]["tags"] == ["x"]
    assert conformed[0]["price"] == Decimal("1.250000000000000000")


def test_positional_spark_rows_inside_a_record_are_lists() -> None:
    class PositionalSparkRow(tuple):  # type: ignore[type-arg]
        def asDict(self) -> dict[str, Any]:
            raise TypeError("Cannot convert a Row class into dict")

    record = infer_record_type([{"r": PositionalSparkRow([1, 2])}])
    assert record.arrow_type == pa.struct([("r", pa.list_(pa.int64()))])
