"""Timestamp assigners: the record's own timestamp, functions and column names."""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest

from panes.time import LONG_MIN
from panes.watermarks import (
    NO_TIMESTAMP,
    ColumnTimestampAssigner,
    FunctionTimestampAssigner,
    RecordTimestampAssigner,
    TimestampAssigner,
    as_timestamp_assigner,
)


def test_no_timestamp_is_long_min() -> None:
    assert NO_TIMESTAMP == LONG_MIN


def test_record_assigner_keeps_the_record_timestamp() -> None:
    assigner = RecordTimestampAssigner()
    assert assigner.extract_timestamp("x", 42) == 42
    assert assigner.extract_timestamp("x", NO_TIMESTAMP) == NO_TIMESTAMP


def test_function_assigner_receives_element_and_record_timestamp() -> None:
    seen: list[tuple[Any, int]] = []

    def fn(element: Any, record_timestamp: int) -> int:
        seen.append((element, record_timestamp))
        return 42

    assert FunctionTimestampAssigner(fn).extract_timestamp(None, 13) == 42
    assert seen == [(None, 13)]


def test_function_assigner_accepts_aware_datetimes_and_numpy_ints() -> None:
    aware = datetime(1970, 1, 1, 0, 0, 1, tzinfo=timezone.utc)
    assert FunctionTimestampAssigner(lambda e, t: aware).extract_timestamp(None, 0) == 1000
    assert FunctionTimestampAssigner(lambda e, t: np.int64(7)).extract_timestamp(None, 0) == 7


@pytest.mark.parametrize("bad", [None, 1.5, "12", True, datetime(2020, 1, 1), timedelta(seconds=1)])
def test_function_assigner_rejects_values_that_are_not_timestamps(bad: Any) -> None:
    def my_assigner(element: Any, record_timestamp: int) -> Any:
        return bad

    with pytest.raises(TypeError, match="my_assigner"):
        FunctionTimestampAssigner(my_assigner).extract_timestamp(None, 0)


def test_function_assigner_rejects_timestamps_outside_the_long_range() -> None:
    with pytest.raises(ValueError, match="long range"):
        FunctionTimestampAssigner(lambda e, t: 2**63).extract_timestamp(None, 0)


@dataclass
class Event:
    ts: int
    value: str = "v"


def test_column_assigner_reads_mappings_and_attributes() -> None:
    assigner = ColumnTimestampAssigner("ts")
    row = namedtuple("Row", ["ts", "value"])
    assert assigner.extract_timestamp({"ts": 5, "value": 1}, NO_TIMESTAMP) == 5
    assert assigner.extract_timestamp(Event(6), NO_TIMESTAMP) == 6
    assert assigner.extract_timestamp(row(7, "a"), NO_TIMESTAMP) == 7


def test_column_assigner_falls_back_to_item_access() -> None:
    class ItemOnly:
        def __getitem__(self, key: str) -> int:
            if key != "ts":
                raise KeyError(key)
            return 8

    assert ColumnTimestampAssigner("ts").extract_timestamp(ItemOnly(), NO_TIMESTAMP) == 8


def test_column_assigner_converts_aware_datetimes() -> None:
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    expected = int(when.timestamp()) * 1000
    assert ColumnTimestampAssigner("ts").extract_timestamp({"ts": when}, NO_TIMESTAMP) == expected


def test_column_assigner_errors_name_the_column() -> None:
    assigner = ColumnTimestampAssigner("ts")
    with pytest.raises(KeyError, match="it has no field 'ts'"):
        assigner.extract_timestamp({"time": 1}, NO_TIMESTAMP)
    with pytest.raises(KeyError, match="it has no field 'ts'"):
        assigner.extract_timestamp(object(), NO_TIMESTAMP)
    with pytest.raises(KeyError, match="it has no field 'ts'"):
        assigner.extract_timestamp("a string", NO_TIMESTAMP)
    with pytest.raises(ValueError, match="'ts' is None"):
        assigner.extract_timestamp({"ts": None}, NO_TIMESTAMP)
    with pytest.raises(TypeError, match="'ts'"):
        assigner.extract_timestamp({"ts": 1.0}, NO_TIMESTAMP)
    with pytest.raises(TypeError, match="naive"):
        assigner.extract_timestamp({"ts": datetime(2024, 1, 1)}, NO_TIMESTAMP)


def test_column_name_must_be_a_non_empty_string() -> None:
    with pytest.raises(ValueError, match="empty"):
        ColumnTimestampAssigner("")
    with pytest.raises(TypeError):
        ColumnTimestampAssigner(3)  # type: ignore[arg-type]


def test_as_timestamp_assigner_normalises_every_accepted_form() -> None:
    class Fixed(TimestampAssigner):
        def extract_timestamp(self, element: Any, record_timestamp: int) -> int:
            return 1

    fixed = Fixed()
    assert as_timestamp_assigner(fixed) is fixed
    assert as_timestamp_assigner("ts") == ColumnTimestampAssigner("ts")
    assert isinstance(as_timestamp_assigner(lambda e, t: 1), FunctionTimestampAssigner)
    with pytest.raises(TypeError, match="None"):
        as_timestamp_assigner(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        as_timestamp_assigner(42)  # type: ignore[arg-type]
