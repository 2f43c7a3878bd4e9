"""Inferring the Arrow type and shape of a stream's values from the values themselves.

The first value decides. Its shape: a ``dict`` is a record of shape ``"dict"`` (its keys are the field
names), a :class:`Row` one of shape ``"row"`` (a positional row's fields are named ``f0, f1, ...``), a
plain ``tuple`` one of shape ``"tuple"`` (fields ``_1, _2, ...``); a namedtuple, a dataclass or an object
with ``asDict()`` (a PySpark ``Row``) is a record of shape ``"dict"``; anything else is a ``"scalar"``.

Python types map to Arrow types as PySpark infers them: ``bool`` -> ``bool_``, ``int`` -> ``int64``,
``float`` -> ``float64`` (numpy scalars likewise), ``str`` -> ``string``, ``bytes`` -> ``binary``,
``Decimal`` -> ``decimal128(38, 18)``, ``datetime`` -> ``timestamp("us", tz="UTC")`` (naive ones too),
``date`` -> ``date32``, ``time`` -> ``time64("us")``. Inside a record a ``list`` or ``tuple`` is a list of
the type of its first element that is not ``None``, a ``dict`` is a map (as Spark infers nested dicts),
and a ``Row``, namedtuple, dataclass or ``asDict()`` object is a struct.

A part that is ``None`` in the first value (a field, the elements of an empty list, the keys and values
of an empty map) takes its type from the first later value where it is not ``None``; later values are
only read for such parts, never merged. A part that stays unknown raises
:class:`~panes.types.errors.SchemaInferenceError`, as does a value of a Python type with no Arrow
equivalent.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from panes.types.errors import SchemaInferenceError
from panes.types.row import Row

__all__ = ["infer"]

_Candidates = Callable[[], Iterator[Any]]
_DECLARE = (
    "declare the type instead (a DDL string such as 'user STRING, n BIGINT', a pyarrow schema or Types...), "
    "or use Types.PICKLED_BYTE_ARRAY() to move the values pickled"
)


def infer(values: Sequence[Any]) -> tuple[pa.DataType, str]:
    """The Arrow type and shape (``"dict"``, ``"row"``, ``"tuple"`` or ``"scalar"``) of ``values``.

    Raises :class:`SchemaInferenceError` when there are no values, or as the module docstring says.
    """
    if len(values) == 0:
        raise SchemaInferenceError(f"there are no values to infer a record type from; {_DECLARE}")
    first = next((value for value in values if value is not None), None)
    if first is None:
        raise SchemaInferenceError(f"every value is None, so its type cannot be inferred; {_DECLARE}")
    kind = _kind(first, top=True, where="value")
    shape = "scalar"
    if kind == "struct":
        shape = "dict"
        if isinstance(first, Row):
            shape = "row"
        elif _is_plain_tuple(first):
            shape = "tuple"
    return _infer(lambda: iter(values), "", top=True), shape


def _is_plain_tuple(value: Any) -> bool:
    kind = type(value)
    return isinstance(value, tuple) and not hasattr(kind, "_fields") and not callable(getattr(kind, "asDict", None))


def _kind(value: Any, top: bool, where: str) -> str:
    if isinstance(value, (bool, int, float, str, bytes, bytearray, memoryview, decimal.Decimal)):
        return "scalar"
    if isinstance(value, (dt.date, dt.time, np.bool_, np.integer, np.floating)):
        return "scalar"
    if isinstance(value, dict):
        return "struct" if top else "map"
    if isinstance(value, Row):
        return "struct"
    if isinstance(value, list):
        return "list"
    if isinstance(value, tuple):  # a namedtuple, a PySpark Row, or the record itself: a struct
        return "list" if _fields(value, top) is None else "struct"
    if callable(getattr(type(value), "asDict", None)):
        return "struct"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return "struct"
    raise SchemaInferenceError(
        f"cannot infer an Arrow type for {where}: {type(value).__name__} values have none; {_DECLARE}"
    )


def _scalar_type(value: Any) -> pa.DataType:
    if isinstance(value, (bool, np.bool_)):
        return pa.bool_()
    if isinstance(value, (int, np.integer)):
        return pa.int64()
    if isinstance(value, (float, np.floating)):
        return pa.float64()
    if isinstance(value, str):
        return pa.string()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return pa.binary()
    if isinstance(value, decimal.Decimal):
        return pa.decimal128(38, 18)
    if isinstance(value, dt.datetime):
        return pa.timestamp("us", tz="UTC")
    if isinstance(value, dt.date):
        return pa.date32()
    return pa.time64("us")


def _fields(value: Any, top: bool) -> dict[str, Any] | None:
    """The fields of a record-like value by name, or ``None`` when ``value`` is not record-like."""
    if isinstance(value, dict):
        return value if top else None
    if isinstance(value, Row):
        if value._fields is None:
            return {f"f{i}": item for i, item in enumerate(value)}
        return value.as_dict()
    kind = type(value)
    if callable(getattr(kind, "asDict", None)):
        try:
            return dict(value.asDict())
        except (TypeError, ValueError):  # a positional PySpark Row
            return {f"_{i + 1}": item for i, item in enumerate(value)} if top else None
    if isinstance(value, tuple) and isinstance(getattr(kind, "_fields", None), tuple):
        return dict(zip(kind._fields, value, strict=True))
    if isinstance(value, tuple):
        return {f"_{i + 1}": item for i, item in enumerate(value)} if top else None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    return None


def _describe(path: str) -> str:
    if not path:
        return "the value"
    if path.startswith("["):
        return f"value{path}"
    return f"field {path[1:]!r}"


def _infer(candidates: _Candidates, path: str, top: bool) -> pa.DataType:
    """The type of the first value of ``candidates()`` that is not ``None`` (all the values at ``path``)."""
    first = next((value for value in candidates() if value is not None), None)
    where = _describe(path)
    if first is None:
        raise SchemaInferenceError(
            f"{where} is None, empty or missing in every value, so its type is unknown; {_DECLARE}"
        )
    kind = _kind(first, top, where)
    if kind == "scalar":
        return _scalar_type(first)
    if kind == "list":
        return pa.list_(_infer(lambda: _elements(candidates()), path + "[]", top=False))
    if kind == "map":
        keys = _infer(lambda: _map_parts(candidates(), keys=True), path + ".keys()", top=False)
        if pa.types.is_nested(keys):
            raise SchemaInferenceError(f"{_describe(path + '.keys()')} are not scalars; map keys must be; {_DECLARE}")
        values = _infer(lambda: _map_parts(candidates(), keys=False), path + ".values()", top=False)
        return pa.map_(keys, values)
    names = _fields(first, top) or {}
    for name in names:
        if not isinstance(name, str):
            raise SchemaInferenceError(f"{where} has a key {name!r} that is not a str; field names are; {_DECLARE}")
    return pa.struct(
        [
            pa.field(name, _infer(_field_candidates(candidates, name, top), f"{path}.{name}", top=False))
            for name in names
        ]
    )


def _elements(values: Iterator[Any]) -> Iterator[Any]:
    for value in values:
        if isinstance(value, (list, tuple)):
            yield from value


def _map_parts(values: Iterator[Any], keys: bool) -> Iterator[Any]:
    for value in values:
        if isinstance(value, dict):
            yield from (value.keys() if keys else value.values())


def _field_candidates(candidates: _Candidates, name: str, top: bool) -> _Candidates:
    def values() -> Iterator[Any]:
        for value in candidates():
            fields = _fields(value, top)
            if fields is not None:
                yield fields.get(name)

    return values
