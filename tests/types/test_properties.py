"""Property tests (hypothesis) of record types: for generated types and values that fit them,
``decode(encode([conform(v)])) == [conform(v)]`` and ``conform(conform(v)) == conform(v)``, with the same
Python types throughout; values that do not fit raise ``SchemaMismatchError``.

Values that fit are drawn in every form the rules accept (numpy scalars, tuples for lists, bytearrays,
naive or aware datetimes, decimals with more or fewer trailing zeros, records as dicts, rows, tuples and
lists), so canonicalisation is exercised as well as the round trip.
"""

from __future__ import annotations

import datetime as dt
import decimal
import pickle
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from panes.types import RecordType, Row, SchemaMismatchError
from panes.types.typeinfo import CHAR_METADATA

from .support import same

_WIDE = decimal.Context(prec=200)
_ZONES = st.sampled_from(
    [dt.timezone.utc, dt.timezone(dt.timedelta(hours=2)), dt.timezone(dt.timedelta(hours=-5, minutes=-30))]
)
_SAFE_DATETIMES = st.datetimes(min_value=dt.datetime(2, 1, 1), max_value=dt.datetime(9998, 12, 31))
_CHAR = "char"
_INT_BITS = {pa.int8(): 8, pa.int16(): 16, pa.int32(): 32, pa.int64(): 64}

SCALAR_TYPES = [
    pa.bool_(),
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.float32(),
    pa.float64(),
    pa.string(),
    _CHAR,
    pa.binary(),
    pa.date32(),
    pa.timestamp("us", tz="UTC"),
    pa.timestamp("us"),
    pa.time64("us"),
    pa.decimal128(1, 0),
    pa.decimal128(5, 2),
    pa.decimal128(10, 10),
    pa.decimal128(38, 0),
    pa.decimal128(38, 18),
]
KEY_TYPES = [pa.bool_(), pa.int32(), pa.int64(), pa.string(), pa.date32()]


def _field(name: str, t: Any, nullable: bool = True) -> pa.Field:
    if t == _CHAR:
        return pa.field(name, pa.string(), nullable=nullable, metadata=CHAR_METADATA)
    return pa.field(name, t, nullable=nullable)


def _struct_of(fields: list[tuple[str, pa.Field, bool]]) -> pa.DataType:
    return pa.struct([pa.field(name, f.type, nullable=nullable, metadata=f.metadata) for name, f, nullable in fields])


def _list_field(element: pa.Field, nullable: bool) -> pa.Field:
    return pa.field("item", pa.list_(element.with_nullable(nullable)))


def _map_field(key: pa.DataType, value: pa.Field, nullable: bool) -> pa.Field:
    return pa.field(
        "item", pa.map_(pa.field("key", key, nullable=False), value.with_name("value").with_nullable(nullable))
    )


FIELDS: st.SearchStrategy[pa.Field] = st.recursive(
    st.sampled_from(SCALAR_TYPES).map(lambda t: _field("item", t)),
    lambda children: st.one_of(
        st.builds(_list_field, children, st.booleans()),
        st.builds(_map_field, st.sampled_from(KEY_TYPES), children, st.booleans()),
        st.lists(st.tuples(st.text(max_size=4), children, st.booleans()), max_size=4, unique_by=lambda c: c[0]).map(
            lambda fields: pa.field("item", _struct_of(fields))
        ),
    ),
    max_leaves=8,
)


@st.composite
def record_types(draw: st.DrawFn) -> RecordType:
    field = draw(FIELDS)
    if pa.types.is_struct(field.type):
        return RecordType(field.type, draw(st.sampled_from(["dict", "row", "tuple"])))
    return RecordType(field)


# -- values that fit ------------------------------------------------------------------------------------------


def _decimals(precision: int, scale: int) -> st.SearchStrategy[Any]:
    unscaled = st.integers(-(10**precision) + 1, 10**precision - 1)
    exact = unscaled.map(lambda n: _WIDE.scaleb(decimal.Decimal(n), -scale))
    forms = [
        exact,
        exact.map(lambda d: d.normalize(_WIDE)),
        exact.map(lambda d: _WIDE.multiply(d, decimal.Decimal("1.000"))),
    ]
    if precision > scale:
        forms.append(st.integers(-(10 ** (precision - scale)) + 1, 10 ** (precision - scale) - 1))
    return st.one_of(forms)


VALID_CHARACTERS = st.characters(codec="utf-8")
"""What a ``STRING`` or ``CHAR`` holds: characters UTF-8 can encode, so no lone surrogate (``'\\ud800'``), which
the conformer refuses (``test_conform.py``; :data:`LONE_SURROGATES` below)."""
LONE_SURROGATES = st.tuples(st.text(max_size=3), st.characters(categories=["Cs"]), st.text(max_size=3)).map("".join)
"""Python strings that hold a lone surrogate somewhere: valid ``str`` objects, but not Unicode text."""


def _scalar_values(field: pa.Field) -> st.SearchStrategy[Any]:
    t = field.type
    if field.metadata == CHAR_METADATA:
        return VALID_CHARACTERS
    if t == pa.bool_():
        return st.booleans() | st.booleans().map(np.bool_)
    if t in _INT_BITS:
        bits = _INT_BITS[t]
        ints = st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        return ints | ints.map(np.int64)
    if t == pa.float32():
        return st.one_of(
            st.floats(width=32),
            st.floats(min_value=-3.4e38, max_value=3.4e38),
            st.integers(-(2**53), 2**53),
            st.floats(width=32).map(np.float32),
        )
    if t == pa.float64():
        return st.one_of(
            st.floats(), st.integers(-(2**53), 2**53), st.floats().map(np.float64), st.integers(-99, 99).map(np.int16)
        )
    if t == pa.string():
        return st.text(VALID_CHARACTERS, max_size=6)
    if t == pa.binary():
        return st.binary(max_size=6) | st.binary(max_size=6).map(bytearray) | st.binary(max_size=6).map(memoryview)
    if t == pa.date32():
        return st.dates()
    if t == pa.timestamp("us", tz="UTC"):
        return st.datetimes() | _SAFE_DATETIMES.flatmap(lambda d: _ZONES.map(lambda z: d.replace(tzinfo=z)))
    if t == pa.timestamp("us"):
        return st.datetimes()
    if t == pa.time64("us"):
        return st.times()
    if pa.types.is_decimal(t):
        return _decimals(t.precision, t.scale)
    raise AssertionError(t)


def _record_forms(names: list[str], values: list[Any], shape: str) -> st.SearchStrategy[Any]:
    """The record of ``values`` as a dict (also with an extra key), a tuple, a list or a row."""
    by_name = dict(zip(names, values, strict=True))
    forms = [
        lambda: tuple(values),
        lambda: list(values),
        lambda: Row(*values),
        lambda: Row(**by_name),  # read by position for shape "tuple", by name otherwise
    ]
    if shape != "tuple":
        forms += [lambda: by_name, lambda: {**by_name, "\x00extra": 1}]
    return st.integers(0, len(forms) - 1).map(lambda i: forms[i]())


def fitting(field: pa.Field, shape: str = "dict") -> st.SearchStrategy[Any]:
    t = field.type
    if pa.types.is_struct(t):
        children = [t.field(i) for i in range(t.num_fields)]
        names = [c.name for c in children]
        strategy = st.tuples(*(fitting(c) for c in children)).flatmap(lambda vs: _record_forms(names, list(vs), shape))
    elif pa.types.is_list(t):
        elements = st.lists(fitting(t.value_field), max_size=3)
        strategy = elements | elements.map(tuple)
    elif pa.types.is_map(t):
        strategy = st.dictionaries(fitting(t.key_field), fitting(t.item_field), max_size=3)
    else:
        strategy = _scalar_values(field)
    return st.none() | strategy if field.nullable else strategy


def _root(record: RecordType) -> pa.Field:
    return (
        record.columns().field(0) if record.shape == "scalar" else pa.field("value", record.arrow_type, nullable=False)
    )


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_conformed_values_round_trip_and_are_fixed_points(data: st.DataObject) -> None:
    record = data.draw(record_types(), label="record type")
    values = data.draw(st.lists(fitting(_root(record), record.shape), min_size=1, max_size=3), label="values")
    conformed = [record.conform(value) for value in values]
    decoded = record.decode(record.encode(conformed))
    assert same(decoded, conformed), (decoded, conformed)
    assert same([record.conform(value) for value in conformed], conformed)


@settings(max_examples=100)
@given(record_types())
def test_record_types_survive_pickle(record: RecordType) -> None:
    restored = pickle.loads(pickle.dumps(record))
    assert restored == record
    assert hash(restored) == hash(record)
    assert restored.ddl() == record.ddl()


# -- values that do not fit -----------------------------------------------------------------------------------


def _scalar_misfits(field: pa.Field) -> st.SearchStrategy[Any]:
    t = field.type
    anything_else = st.just(object()) | st.just({1, 2})
    if field.metadata == CHAR_METADATA:
        return anything_else | st.text().filter(lambda s: len(s) != 1) | st.integers() | LONE_SURROGATES
    if t == pa.bool_():
        return anything_else | st.integers() | st.text()
    if t in _INT_BITS:
        bits = _INT_BITS[t]
        return (
            anything_else
            | st.integers(min_value=2 ** (bits - 1))
            | st.integers(max_value=-(2 ** (bits - 1)) - 1)
            | st.floats()
            | st.booleans()
        )
    if pa.types.is_floating(t):
        return anything_else | st.integers(min_value=2**53 + 1) | st.booleans() | st.text() | st.decimals()
    if t == pa.string():
        return anything_else | st.binary() | st.integers() | LONE_SURROGATES
    if t == pa.binary():
        return anything_else | st.text() | st.integers()
    if t == pa.date32():
        return anything_else | st.datetimes() | st.text()
    if t == pa.timestamp("us", tz="UTC"):
        return anything_else | st.dates() | st.integers()
    if t == pa.timestamp("us"):
        return anything_else | st.dates() | _SAFE_DATETIMES.flatmap(lambda d: _ZONES.map(lambda z: d.replace(tzinfo=z)))
    if t == pa.time64("us"):
        return anything_else | st.datetimes() | st.times(timezones=_ZONES)
    if pa.types.is_decimal(t):
        p, s = t.precision, t.scale
        too_precise = (
            st.integers(1, 10**p - 1).filter(lambda n: n % 10).map(lambda n: _WIDE.scaleb(decimal.Decimal(n), -s - 1))
        )
        too_big = st.integers(10**p, 10 ** (p + 3)).map(lambda n: _WIDE.scaleb(decimal.Decimal(n), -s))
        return (
            anything_else
            | too_precise
            | too_big
            | st.floats()
            | st.sampled_from([decimal.Decimal("NaN"), decimal.Decimal("Inf")])
        )
    raise AssertionError(t)


@st.composite
def misfitting(draw: st.DrawFn, field: pa.Field, shape: str = "dict") -> Any:
    """A value that does not fit ``field``: the whole value, or one part of it."""
    t = field.type
    if not field.nullable and draw(st.integers(0, 4)) == 0:
        return None
    if pa.types.is_struct(t):
        children = [t.field(i) for i in range(t.num_fields)]
        if not children or draw(st.booleans()):
            return draw(st.just(object()) | st.integers() | st.text())
        bad = draw(st.integers(0, len(children) - 1))
        values = [draw(misfitting(c)) if i == bad else draw(fitting(c)) for i, c in enumerate(children)]
        return draw(_record_forms([c.name for c in children], values, shape))
    if pa.types.is_list(t):
        if draw(st.booleans()):
            return draw(st.integers() | st.text() | st.just({1}))
        before = draw(st.lists(fitting(t.value_field), max_size=2))
        return [*before, draw(misfitting(t.value_field))]
    if pa.types.is_map(t):
        if draw(st.booleans()):
            return draw(st.integers() | st.just([(1, 2)]))
        key = draw(fitting(t.key_field))
        return {key: draw(misfitting(t.item_field))}
    return draw(_scalar_misfits(field))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_values_that_do_not_fit_are_refused(data: st.DataObject) -> None:
    record = data.draw(record_types(), label="record type")
    value = data.draw(misfitting(_root(record), record.shape), label="value")
    try:
        record.conform(value)
    except SchemaMismatchError as error:
        assert str(error).startswith(("value", "field ")), str(error)
        assert " does not fit " in str(error) or "missing" in str(error)
    else:
        raise AssertionError(f"{value!r} was accepted as {record!r}")
