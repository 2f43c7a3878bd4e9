"""Timestamp assigners: how an event's timestamp is found (Flink's ``TimestampAssigner`` family).

An assigner receives the element and the timestamp the record already carries (``NO_TIMESTAMP``, that is
``LONG_MIN``, when it has none) and returns the event timestamp as ``int`` epoch milliseconds. A plain
callable ``(element, record_timestamp) -> int`` is accepted wherever an assigner is, and so is a column name,
for rows: the timestamp is then that field of the element.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeAlias

from panes.time import LONG_MAX, LONG_MIN, timestamp_ms

NO_TIMESTAMP: int = LONG_MIN
"""The record timestamp an assigner sees when the record has none (Flink's ``TimestampAssigner.NO_TIMESTAMP``)."""


class TimestampAssigner(ABC):
    """Extracts an event timestamp from an element (Flink's ``TimestampAssigner``)."""

    @abstractmethod
    def extract_timestamp(self, element: Any, record_timestamp: int) -> int:
        """The event timestamp of ``element`` in ``int`` epoch ms.

        ``record_timestamp`` is the timestamp the record already has, or ``NO_TIMESTAMP`` (``LONG_MIN``).
        """


TimestampAssignerLike: TypeAlias = "TimestampAssigner | str | Callable[[Any, int], Any]"
"""What ``with_timestamp_assigner`` accepts: an assigner, a column name, or ``(element, record_ts) -> ts``."""


def checked_timestamp(value: Any, what: str) -> int:
    """``value`` as ``int`` epoch ms: an ``int`` in Java's long range or an aware ``datetime``.

    Raises ``TypeError`` for anything else (``None``, floats, naive datetimes, ...) and ``ValueError`` out of
    range, the message starting with ``what``.
    """
    if type(value) is int and LONG_MIN <= value <= LONG_MAX:
        return value
    if value is None:
        raise TypeError(f"{what} is None; a timestamp must be int epoch milliseconds or an aware datetime")
    if isinstance(value, datetime):
        return timestamp_ms(value, name=what)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return timestamp_ms(int(value), name=what)
    raise TypeError(
        f"{what} must be int epoch milliseconds or an aware datetime, not {type(value).__name__} ({value!r})"
    )


class RecordTimestampAssigner(TimestampAssigner):
    """Keeps the timestamp the record already has (Flink's ``RecordTimestampAssigner``, the default).

    A record without a timestamp gets ``NO_TIMESTAMP`` (``LONG_MIN``), as in Flink; event-time windows
    later refuse such a record.
    """

    __slots__ = ()

    def extract_timestamp(self, element: Any, record_timestamp: int) -> int:
        return record_timestamp

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RecordTimestampAssigner)

    def __hash__(self) -> int:
        return hash(RecordTimestampAssigner)

    def __repr__(self) -> str:
        return "RecordTimestampAssigner()"


class FunctionTimestampAssigner(TimestampAssigner):
    """An assigner from a callable ``fn(element, record_timestamp)`` (Flink's ``SerializableTimestampAssigner``).

    The result must be ``int`` epoch ms in Java's long range or a timezone-aware ``datetime``; anything else
    (``None``, a float, a naive datetime) raises ``TypeError`` naming the function.
    """

    __slots__ = ("function",)

    def __init__(self, function: Callable[[Any, int], Any]) -> None:
        if not callable(function):
            raise TypeError(f"a timestamp assigner function must be callable, got {type(function).__name__}")
        self.function = function

    def extract_timestamp(self, element: Any, record_timestamp: int) -> int:
        value = self.function(element, record_timestamp)
        if type(value) is int and LONG_MIN <= value <= LONG_MAX:
            return value
        name = getattr(self.function, "__qualname__", repr(self.function))
        return checked_timestamp(value, f"the timestamp returned by {name}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FunctionTimestampAssigner) and other.function == self.function

    def __hash__(self) -> int:
        return hash(self.function)

    def __repr__(self) -> str:
        return f"FunctionTimestampAssigner({self.function!r})"


_MISSING = object()


def _field(element: Any, column: str) -> Any:
    if type(element) is dict or isinstance(element, Mapping):  # a dict first: no ABC check
        return element.get(column, _MISSING)
    value = getattr(element, column, _MISSING)
    if value is _MISSING and hasattr(type(element), "__getitem__") and not isinstance(element, str | bytes):
        try:
            value = element[column]
        except (LookupError, TypeError, ValueError):
            value = _MISSING
    return value


class ColumnTimestampAssigner(TimestampAssigner):
    """The timestamp is the field ``column`` of the element, which is a row.

    A mapping (``dict``, ...) is read by key; any other object by attribute (dataclasses, named tuples,
    PySpark ``Row``) and, failing that, by ``element[column]``. The field must hold ``int`` epoch ms or an
    aware ``datetime``. A missing field raises ``KeyError``, a ``None`` field ``ValueError`` and any other
    type ``TypeError``. The Spark runner reads :attr:`column` to extract timestamps column-wise.
    """

    __slots__ = ("column",)

    def __init__(self, column: str) -> None:
        if not isinstance(column, str):
            raise TypeError(f"a timestamp column name must be a str, got {type(column).__name__}")
        if not column:
            raise ValueError("a timestamp column name must not be empty")
        self.column = column

    def extract_timestamp(self, element: Any, record_timestamp: int) -> int:
        value = _field(element, self.column)
        if type(value) is int and LONG_MIN <= value <= LONG_MAX:
            return value
        if value is _MISSING:
            raise KeyError(f"it has no field {self.column!r}")
        if value is None:
            raise ValueError(f"its field {self.column!r} is None")
        return checked_timestamp(value, f"timestamp column {self.column!r}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ColumnTimestampAssigner) and other.column == self.column

    def __hash__(self) -> int:
        return hash((ColumnTimestampAssigner, self.column))

    def __repr__(self) -> str:
        return f"ColumnTimestampAssigner({self.column!r})"


def as_timestamp_assigner(assigner: TimestampAssignerLike) -> TimestampAssigner:
    """Normalise what ``with_timestamp_assigner`` accepts into a :class:`TimestampAssigner`.

    A ``str`` becomes a :class:`ColumnTimestampAssigner`, another callable a
    :class:`FunctionTimestampAssigner`; ``None`` and other values raise ``TypeError``.
    """
    if isinstance(assigner, TimestampAssigner):
        return assigner
    if isinstance(assigner, str):
        return ColumnTimestampAssigner(assigner)
    if assigner is None:
        raise TypeError("timestamp_assigner must not be None")
    if callable(assigner):
        return FunctionTimestampAssigner(assigner)
    raise TypeError(
        "timestamp_assigner must be a TimestampAssigner, a column name or a callable "
        f"(element, record_timestamp) -> timestamp, not {type(assigner).__name__}"
    )
