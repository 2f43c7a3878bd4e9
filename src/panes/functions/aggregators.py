"""Field aggregations ``sum``/``min``/``max``/``min_by``/``max_by`` as reduce functions (Flink's
``SumAggregator`` and ``ComparableAggregator``).

A *field* is a position (``int``) in a tuple/list — or ``0`` for a plain value — or a name (``str``) of a
dict key, a named tuple / dataclass / object attribute, or a Row field. ``sum``, ``min`` and ``max`` keep
the running (first) element and replace only the field; ``min_by``/``max_by`` keep the whole element that
has the extreme field (the first such element on ties, unless ``first=False``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from panes.functions.base import ReduceFunction
from panes.types.row import Row, _make_row


def get_field(value: Any, field: int | str) -> Any:
    """The ``field`` of ``value`` (see the module docstring); raises ``TypeError``/``KeyError`` if absent."""
    if type(value) is dict and type(field) is str:  # the common case, first
        return value[field]
    if isinstance(field, bool):
        raise TypeError("a field is an int position or a str name, not a bool")
    if isinstance(field, int):
        if isinstance(value, (tuple, list, Row)):
            return value[field]
        if field == 0:
            return value
        raise TypeError(f"field position {field} needs a tuple or list element, got {type(value).__name__}")
    if isinstance(value, dict):
        return value[field]
    if hasattr(value, field):
        return getattr(value, field)
    raise KeyError(f"element {value!r} has no field {field!r}")


def set_field(value: Any, field: int | str, new: Any) -> Any:
    """A copy of ``value`` whose ``field`` is ``new`` (the element itself for position 0 of a plain value)."""
    if isinstance(field, bool):
        raise TypeError("a field is an int position or a str name, not a bool")
    if isinstance(value, Row):
        values = list(value._values)
        index = field if isinstance(field, int) else _row_index(value, field)
        values[index] = new
        return _make_row(value._fields, tuple(values))
    if isinstance(field, int):
        if isinstance(value, list):
            copy = list(value)
            copy[field] = new
            return copy
        if isinstance(value, tuple):
            items = list(value)
            items[field] = new
            if hasattr(value, "_make"):
                return value._make(items)
            return tuple(items)
        if field == 0:
            return new
        raise TypeError(f"field position {field} needs a tuple or list element, got {type(value).__name__}")
    if isinstance(value, dict):
        return {**value, field: new}
    if isinstance(value, tuple) and hasattr(value, "asDict"):
        data = value.asDict()
        data[field] = new
        return type(value)(**data)
    if isinstance(value, tuple) and hasattr(value, "_replace"):
        return value._replace(**{field: new})
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{field: new})
    if hasattr(value, field):
        import copy as copy_module

        clone = copy_module.copy(value)
        setattr(clone, field, new)
        return clone
    raise KeyError(f"element {value!r} has no field {field!r}")


def _row_index(row: Row, field: str) -> int:
    if row._fields is None or field not in row._fields:
        raise KeyError(f"element {row!r} has no field {field!r}")
    return row._fields.index(field)


class SumAggregator(ReduceFunction[Any]):
    """Sums ``field``; the other fields come from the first element."""

    def __init__(self, field: int | str) -> None:
        self.field = field

    def reduce(self, value1: Any, value2: Any) -> Any:
        return set_field(value1, self.field, get_field(value1, self.field) + get_field(value2, self.field))

    def __repr__(self) -> str:
        return f"sum({self.field!r})"


class ComparableAggregator(ReduceFunction[Any]):
    """``min``/``max`` (replace the field) or ``min_by``/``max_by`` (keep the extreme element)."""

    def __init__(self, field: int | str, kind: str, by: bool, first: bool = True) -> None:
        if kind not in ("min", "max"):
            raise ValueError(f"kind must be 'min' or 'max', got {kind!r}")
        self.field = field
        self.kind = kind
        self.by = by
        self.first = first

    def _extremal(self, a: Any, b: Any) -> int:
        """1 when ``a`` is the extreme one, 0 on a tie, -1 when ``b`` is."""
        if a == b:
            return 0
        if self.kind == "min":
            return 1 if a < b else -1
        return 1 if a > b else -1

    def reduce(self, value1: Any, value2: Any) -> Any:
        a = get_field(value1, self.field)
        b = get_field(value2, self.field)
        c = self._extremal(a, b)
        if self.by:
            if c == 0:
                return value1 if self.first else value2
            return value1 if c == 1 else value2
        return value1 if c == 1 else set_field(value1, self.field, b)

    def __repr__(self) -> str:
        return f"{self.kind}{'_by' if self.by else ''}({self.field!r})"


class FieldKey:
    """A key selector reading one field (``key_by("user")``, ``key_by(0)``): ``FieldKey(field)(value)`` is
    ``get_field(value, field)``. Runners that move typed columns read the key column ``field`` directly."""

    __slots__ = ("field",)

    def __init__(self, field: int | str) -> None:
        self.field = field

    def __call__(self, value: Any) -> Any:
        return get_field(value, self.field)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldKey) and other.field == self.field

    def __hash__(self) -> int:
        return hash(("FieldKey", self.field))

    def __repr__(self) -> str:
        return f"FieldKey({self.field!r})"
