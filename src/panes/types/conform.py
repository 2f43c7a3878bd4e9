"""The conform rules: does a Python value fit an Arrow type, and what is its canonical form.

:func:`compile_conformer` turns a record's Arrow field into a function that checks a value and returns its
canonical form, which is exactly what the value becomes after a trip through Arrow. The rules follow
PySpark's ``_make_type_verifier`` (what ``createDataFrame`` accepts), with ``int`` widened to floats:

* integers: ``int`` or a numpy integer, never ``bool``, within the width's range;
* ``FLOAT`` / ``DOUBLE``: ``float`` or a numpy float, or an integer of at most 2**53 in magnitude;
  a ``FLOAT`` is rounded to single precision, and refused when that overflows;
* ``STRING``: ``str`` (valid Unicode; one character for ``Types.CHAR()``); ``BINARY``: ``bytes``,
  ``bytearray`` or ``memoryview`` (canonical ``bytes``); ``BOOLEAN``: ``bool`` or a numpy bool;
* ``DATE``: ``datetime.date`` but not ``datetime``; ``TIMESTAMP``: ``datetime``, naive means UTC,
  canonical in UTC; ``TIMESTAMP_NTZ``: naive ``datetime``; ``TIME``: naive ``datetime.time``;
* ``DECIMAL(p, s)``: a finite ``Decimal`` or an integer that fits exactly, canonical with ``s`` digits;
* ``ARRAY``: ``list``, ``tuple`` or 1-d numpy array, canonical ``list``; ``MAP``: a mapping, canonical
  ``dict`` (two keys may not become one);
* ``STRUCT``: a mapping or a PySpark ``Row`` (``asDict()``) by name, a missing name being ``None`` when the
  field is nullable; a named :class:`Row`, a namedtuple or a dataclass by name, every field present; a
  positional ``Row``, a ``tuple`` or a ``list`` by position, as many values as fields. Canonical: ``dict``,
  or for the record itself a named ``Row`` (shape ``"row"``) or a ``tuple`` (shape ``"tuple"``, which reads
  every sequence, named or not, by position);
* ``None`` only where the field is nullable.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import struct
import zoneinfo
from collections.abc import Callable, Mapping
from typing import Any, cast

import numpy as np
import pyarrow as pa

from panes.types.ddl import to_ddl
from panes.types.errors import SchemaMismatchError
from panes.types.row import Row, _make_row
from panes.types.typeinfo import CHAR_METADATA

__all__ = ["UTC", "Conformer", "compile_conformer"]

Conformer = Callable[[Any], Any]

UTC = zoneinfo.ZoneInfo("UTC")
"""The ``tzinfo`` pyarrow gives datetimes of ``timestamp(tz="UTC")``: canonical instants carry it."""

_MISSING: Any = object()
_F32 = struct.Struct("<f")
_EXACT_FLOAT_INT = 2**53
_REPR_LIMIT = 100


class _Misfit(Exception):
    """Raised inside conformers; ``path`` grows from the innermost part outwards as it propagates."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail
        self.path: list[str] = []
        self.suffix = ""


def _show(value: Any) -> str:
    if value is None:
        return "None"
    try:
        text = repr(value)
    except Exception:
        text = object.__repr__(value)
    if len(text) > _REPR_LIMIT:
        text = text[: _REPR_LIMIT - 3] + "..."
    kind = type(value)
    return f"{text} ({'numpy.' if kind.__module__ == 'numpy' else ''}{kind.__name__})"


def _misfit(value: Any, ddl: str, why: str = "") -> _Misfit:
    return _Misfit(f"{_show(value)} does not fit {ddl}" + (f": {why}" if why else ""))


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _where(misfit: _Misfit) -> str:
    path = "".join(reversed(misfit.path))
    if not path:
        where = "value"
    elif path.startswith("["):
        where = f"value{path}"
    else:
        where = f"field {path[1:]!r}"
    return where + misfit.suffix


def compile_conformer(field: pa.Field, shape: str) -> Conformer:
    """The conform function of records of ``field`` (a type :func:`~panes.types.ddl.normalize_type`
    returned): it returns the canonical form of a value or raises :class:`SchemaMismatchError`."""
    inner = _field(field, shape)
    t = field.type
    # a record given as a dict goes straight to its struct's compiled reading by name
    fast = (
        _fast_by_name(t, tuple(_field(t.field(i)) for i in range(t.num_fields)), shape)
        if pa.types.is_struct(t)
        else None
    )

    def conform(value: Any) -> Any:
        if fast is not None and type(value) is dict:
            try:
                return fast(value)
            except _Misfit:
                pass  # the whole path below finds the field that does not fit, and says where it is
        try:
            return inner(value)
        except _Misfit as misfit:
            raise SchemaMismatchError(f"{_where(misfit)}: {misfit.detail}") from None

    return conform


def _field(field: pa.Field, shape: str = "dict") -> Conformer:
    conform = _type(field.type, field.metadata or {}, shape)
    if field.nullable:

        def nullable(value: Any) -> Any:
            return None if value is None or value is _MISSING else conform(value)

        return nullable
    ddl = f"{to_ddl(field.type)} NOT NULL"

    def not_null(value: Any) -> Any:
        if value is None:
            raise _Misfit(f"None does not fit {ddl}")
        if value is _MISSING:
            raise _Misfit(f"missing, and {ddl} needs a value")
        return conform(value)

    return not_null


def _type(t: pa.DataType, metadata: Mapping[bytes, bytes], shape: str) -> Conformer:
    types = pa.types
    ddl = to_ddl(t)
    if types.is_struct(t):
        return _struct(t, ddl, shape)
    if types.is_list(t):
        return _list(t, ddl)
    if types.is_map(t):
        return _map(t, ddl)
    if types.is_boolean(t):
        return _boolean(ddl)
    if types.is_integer(t):
        return _integer(t.bit_width, ddl)
    if types.is_floating(t):
        return _float(t.bit_width == 32, ddl)
    if types.is_decimal(t):
        return _decimal(t.precision, t.scale, ddl)
    if types.is_string(t):
        return _string(ddl, one_char=metadata.get(b"panes.type") == CHAR_METADATA[b"panes.type"])
    if types.is_binary(t):
        return _binary(ddl)
    if types.is_date32(t):
        return _date(ddl)
    if types.is_timestamp(t):
        return _instant(ddl) if t.tz else _local_datetime(ddl)
    if types.is_time64(t):
        return _time(ddl)
    raise TypeError(f"no conform rule for Arrow type {t}")  # normalize_type keeps these out


def _struct(t: pa.StructType, ddl: str, shape: str) -> Conformer:
    names = tuple(t.field(i).name for i in range(t.num_fields))
    fields = tuple(_field(t.field(i)) for i in range(t.num_fields))
    pairs = tuple(zip(names, fields, strict=True))
    count = len(names)
    positional_only = shape == "tuple"

    def build(values: list[Any]) -> Any:
        if shape == "row":
            return _make_row(names, tuple(values))
        if positional_only:
            return tuple(values)
        return dict(zip(names, values, strict=True))

    def locate(misfit: _Misfit, read: Callable[[int, str], Any]) -> _Misfit:
        """Find which field failed (the fast paths do not track it) and add it to the path."""
        for index, (name, conform) in enumerate(pairs):
            try:
                conform(read(index, name))
            except _Misfit as found:
                found.path.append("." + name)
                return found
        return misfit

    fast = _fast_by_name(t, fields, shape)

    def by_name(mapping: Mapping[str, Any]) -> Any:
        try:
            return fast(mapping)
        except _Misfit as misfit:
            raise locate(misfit, lambda _, name: mapping.get(name, _MISSING)) from None

    def by_name_strictly(value: Any, mapping: Mapping[str, Any]) -> Any:
        for name in names:
            if name not in mapping:
                misfit = _Misfit(f"missing from {_show(value)}")
                misfit.path.append("." + name)
                raise misfit
        return by_name(mapping)

    def by_position(value: Any, values: Any) -> Any:
        if len(values) != count:
            raise _misfit(value, ddl, f"it has {_count(len(values), 'value')} for {_count(count, 'field')}")
        try:
            return build([conform(item) for item, conform in zip(values, fields, strict=True)])
        except _Misfit as misfit:
            raise locate(misfit, lambda index, _: values[index]) from None

    def conform(value: Any) -> Any:
        if isinstance(value, dict):
            return by_name(value)
        if isinstance(value, Row):
            names_of_value = value._fields
            if names_of_value is None or positional_only:
                return by_position(value, value._values)
            return by_name_strictly(value, dict(zip(names_of_value, value._values, strict=True)))
        if isinstance(value, (tuple, list)):
            if positional_only or isinstance(value, list):
                return by_position(value, value)
            if callable(getattr(type(value), "asDict", None)):  # a PySpark Row (a tuple), named or not
                try:
                    return by_name(cast(Any, value).asDict())
                except (TypeError, ValueError):
                    return by_position(value, value)
            value_names = getattr(type(value), "_fields", None)
            if isinstance(value_names, tuple):  # a namedtuple
                return by_name_strictly(value, dict(zip(value_names, value, strict=True)))
            return by_position(value, value)
        if isinstance(value, Mapping):
            return by_name(value)
        if callable(getattr(type(value), "asDict", None)):
            return by_name(value.asDict())
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            attributes = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            return by_name_strictly(value, attributes)
        raise _misfit(value, ddl, "a record is a dict, a Row, a tuple, a namedtuple or a dataclass")

    return conform


def _fast_check(field: pa.Field) -> str | None:
    """A Python expression over ``v`` that is true when ``v`` is already the canonical form of a value of
    ``field`` (a common case the field's conformer would return unchanged), or ``None`` when there is none."""
    t, types = field.type, pa.types
    metadata = field.metadata or {}
    if types.is_integer(t):
        check = f"type(v) is int and {-(1 << (t.bit_width - 1))} <= v <= {(1 << (t.bit_width - 1)) - 1}"
    elif types.is_floating(t) and t.bit_width == 64:
        check = "type(v) is float"
    elif types.is_string(t) and metadata.get(b"panes.type") != CHAR_METADATA[b"panes.type"]:
        check = "type(v) is str and v.isascii()"
    elif types.is_boolean(t):
        check = "v is True or v is False"
    else:
        return None
    return f"v is None or ({check})" if field.nullable else check


def _fast_by_name(t: pa.StructType, fields: tuple[Conformer, ...], shape: str) -> Callable[[Mapping[str, Any]], Any]:
    """The conform function of a mapping read by name into a struct of ``t`` in ``shape``: a function compiled
    for ``t`` that keeps each field value that is already canonical (:func:`_fast_check`) and hands the others
    to the field's conformer (``fields``), which returns their canonical form or raises ``_Misfit``. It gives
    what calling every field's conformer gives, with a fraction of the calls for records of plain values."""
    lines = ["def by_name(mapping):"]
    names = [t.field(i).name for i in range(t.num_fields)]
    for index, name in enumerate(names):
        lines.append(f"    v = mapping.get({name!r}, MISSING)")
        check = _fast_check(t.field(index))
        call = f"f{index}(v)"
        lines.append(f"    v{index} = v if {check} else {call}" if check is not None else f"    v{index} = {call}")
    values = ", ".join(f"v{index}" for index in range(len(names)))
    if shape == "row":
        lines.append(f"    return make_row(names, ({values}{',' if len(names) == 1 else ''}))")
    elif shape == "tuple":
        lines.append(f"    return ({values}{',' if len(names) == 1 else ''})")
    else:
        lines.append("    return {" + ", ".join(f"{name!r}: v{index}" for index, name in enumerate(names)) + "}")
    namespace: dict[str, Any] = {"MISSING": _MISSING, "make_row": _make_row, "names": tuple(names)}
    namespace.update({f"f{index}": conform for index, conform in enumerate(fields)})
    exec("\n".join(lines), namespace)
    return cast(Callable[[Mapping[str, Any]], Any], namespace["by_name"])


def _list(t: pa.ListType, ddl: str) -> Conformer:
    element = _field(t.value_field)

    def conform(value: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            if not (isinstance(value, np.ndarray) and value.ndim == 1):
                raise _misfit(value, ddl, "an ARRAY is a list or a tuple")
            value = value.tolist()
        try:
            return [element(item) for item in value]
        except _Misfit as misfit:
            for index, item in enumerate(value):
                try:
                    element(item)
                except _Misfit as found:
                    found.path.append(f"[{index}]")
                    raise found from None
            raise misfit from None

    return conform


def _map(t: pa.MapType, ddl: str) -> Conformer:
    key_of = _field(t.key_field)
    value_of = _field(t.item_field)

    def conform(value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise _misfit(value, ddl, "a MAP is a dict")
        out: dict[Any, Any] = {}
        for key, item in value.items():
            try:
                canonical_key = key_of(key)
            except _Misfit as misfit:
                misfit.suffix = " key"
                raise
            if canonical_key in out:
                raise _misfit(value, ddl, f"two keys become the same key {canonical_key!r}")
            try:
                out[canonical_key] = value_of(item)
            except _Misfit as misfit:
                misfit.path.append(f"[{key!r}]")
                raise
        return out

    return conform


def _boolean(ddl: str) -> Conformer:
    def conform(value: Any) -> Any:
        if value is True or value is False:
            return value
        if isinstance(value, np.bool_):
            return bool(value)
        raise _misfit(value, ddl)

    return conform


def _integer(bits: int, ddl: str) -> Conformer:
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    why = f"outside [{low}, {high}]"

    def conform(value: Any) -> Any:
        if type(value) is int:
            if low <= value <= high:
                return value
            raise _misfit(value, ddl, why)
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            number = int(value)
            if low <= number <= high:
                return number
            raise _misfit(value, ddl, why)
        raise _misfit(value, ddl)

    return conform


def _float(single: bool, ddl: str) -> Conformer:
    def conform(value: Any) -> Any:
        if type(value) is float:
            number = value
        elif isinstance(value, (float, np.floating)):
            number = float(value)
        elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            if not -_EXACT_FLOAT_INT <= value <= _EXACT_FLOAT_INT:
                raise _misfit(value, ddl, "an integer beyond 2**53 is not exact as a float")
            number = float(value)
        else:
            raise _misfit(value, ddl)
        if not single:
            return number
        try:
            single_value: float = _F32.unpack(_F32.pack(number))[0]
        except OverflowError:
            raise _misfit(value, ddl, "outside FLOAT's range (about 3.4e38)") from None
        return single_value

    return conform


def _decimal(precision: int, scale: int, ddl: str) -> Conformer:
    limit = 10**precision

    def conform(value: Any) -> Any:
        if isinstance(value, decimal.Decimal):
            if not value.is_finite():
                raise _misfit(value, ddl, "not a finite number")
            sign, digits, exponent_or_flag = value.as_tuple()
            exponent = cast(int, exponent_or_flag)  # a finite Decimal has an int exponent
            coefficient = int("".join(map(str, digits)))
        elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            sign, coefficient, exponent = int(int(value) < 0), abs(int(value)), 0
        else:
            raise _misfit(value, ddl)
        shift = exponent + scale  # value * 10**scale == coefficient * 10**shift
        if coefficient == 0:
            unscaled = 0
        elif shift >= 0:
            if shift > precision:
                raise _misfit(value, ddl, f"more than {precision - scale} digits before the point")
            unscaled = coefficient * 10**shift
        else:
            if -shift > len(str(coefficient)):
                raise _misfit(value, ddl, f"more than {scale} digits after the point")
            unscaled, rest = divmod(coefficient, 10**-shift)
            if rest:
                raise _misfit(value, ddl, f"more than {scale} digits after the point")
        if unscaled >= limit:
            raise _misfit(value, ddl, f"more than {precision - scale} digits before the point")
        return decimal.Decimal((sign if unscaled else 0, tuple(map(int, str(unscaled))), -scale))

    return conform


def _string(ddl: str, one_char: bool) -> Conformer:
    def conform(value: Any) -> Any:
        if not isinstance(value, str):
            raise _misfit(value, ddl)
        text = value if type(value) is str else str(value)
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise _misfit(value, ddl, "not valid Unicode (a lone surrogate)") from None
        if one_char and len(text) != 1:
            raise _misfit(value, ddl, "Types.CHAR() holds exactly one character")
        return text

    return conform


def _binary(ddl: str) -> Conformer:
    def conform(value: Any) -> Any:
        if type(value) is bytes:
            return value
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        raise _misfit(value, ddl)

    return conform


def _date(ddl: str) -> Conformer:
    def conform(value: Any) -> Any:
        if isinstance(value, dt.datetime):
            raise _misfit(value, ddl, "a datetime is not a date (pass its .date())")
        if not isinstance(value, dt.date):
            raise _misfit(value, ddl)
        return value if type(value) is dt.date else dt.date(value.year, value.month, value.day)

    return conform


def _naive(value: dt.datetime, tzinfo: dt.tzinfo | None) -> dt.datetime:
    return dt.datetime(
        value.year, value.month, value.day, value.hour, value.minute, value.second, value.microsecond, tzinfo
    )


def _instant(ddl: str) -> Conformer:
    def conform(value: Any) -> Any:
        if not isinstance(value, dt.datetime):
            raise _misfit(value, ddl)
        if value.tzinfo is None or value.utcoffset() is None:
            return _naive(value, UTC)
        try:
            instant = value.astimezone(UTC)
        except OverflowError:
            raise _misfit(value, ddl, "outside the years 1 to 9999 in UTC") from None
        return instant if type(instant) is dt.datetime else _naive(instant, UTC)

    return conform


def _local_datetime(ddl: str) -> Conformer:
    def conform(value: Any) -> Any:
        if not isinstance(value, dt.datetime):
            raise _misfit(value, ddl)
        if value.tzinfo is not None and value.utcoffset() is not None:
            raise _misfit(value, ddl, "it has a time zone; TIMESTAMP_NTZ holds local date-times")
        if type(value) is dt.datetime and value.tzinfo is None and not value.fold:
            return value
        return _naive(value, None)

    return conform


def _time(ddl: str) -> Conformer:
    def conform(value: Any) -> Any:
        if not isinstance(value, dt.time):
            raise _misfit(value, ddl)
        if value.tzinfo is not None:
            raise _misfit(value, ddl, "it has a time zone; TIME holds local times of day")
        if type(value) is dt.time and not value.fold:
            return value
        return dt.time(value.hour, value.minute, value.second, value.microsecond)

    return conform
