"""Helpers for the record type tests: scalar record types by DDL and a strict deep equality."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

from panes.types import RecordType, Row, parse_ddl


def scalar(ddl_type: str) -> RecordType:
    """The scalar record type of one Spark DDL type, such as ``"BIGINT"``."""
    record = RecordType.of(parse_ddl(f"v {ddl_type}").field("v").type)
    assert record is not None
    return record


def same(a: Any, b: Any) -> bool:
    """Equal, with the same Python types throughout (NaN equals NaN, a Decimal keeps its exponent, a datetime
    its time zone)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Row):
        return a._fields == b._fields and same(a._values, b._values)
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, decimal.Decimal):
        return a.as_tuple() == b.as_tuple()
    if isinstance(a, dt.datetime):
        return a == b and a.tzinfo == b.tzinfo and repr(a) == repr(b)
    return bool(a == b)


def round_trip(record: RecordType, value: Any) -> Any:
    """``decode(encode([value]))[0]``."""
    decoded = record.decode(record.encode([value]))
    assert len(decoded) == 1
    return decoded[0]
