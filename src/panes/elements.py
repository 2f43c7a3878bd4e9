"""The elements that flow between operators: records, watermarks and watermark status.

These are Flink's ``StreamRecord``, ``Watermark`` and ``WatermarkStatus``. A record's timestamp is
``None`` when it has none (Flink's ``hasTimestamp() == false``).
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from panes.time import LONG_MAX

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: Any) -> Any:  # only type checkers read it (typing has it from Python 3.11)
        return lambda function: function


T = TypeVar("T")
R = TypeVar("R")


@dataclass_transform(frozen_default=True)
def _frozen(cls: type[R]) -> type[R]:
    """Marks a hand-written immutable class as a frozen dataclass for type checkers (assigning a field is an
    error there too); it returns the class as it is."""
    return cls


@_frozen
class StreamRecord(Generic[T]):
    """A value with an optional event timestamp (``int`` epoch ms, or ``None`` for no timestamp).

    Immutable, compared and hashed by ``(value, timestamp)``, as a frozen dataclass is; assigning a field raises
    ``dataclasses.FrozenInstanceError``. A slotted class rather than a dataclass: one is made for nearly every
    element an operator emits, and this one is made in a third of a frozen dataclass's time.
    """

    __slots__ = ("timestamp", "value")
    __match_args__ = ("value", "timestamp")

    value: T
    timestamp: int | None

    def __init__(self, value: T, timestamp: int | None = None) -> None:
        _set_value(self, value)
        _set_timestamp(self, timestamp)

    def has_timestamp(self) -> bool:
        return self.timestamp is not None

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, StreamRecord)
        return self.value == other.value and self.timestamp == other.timestamp

    def __hash__(self) -> int:
        return hash((self.value, self.timestamp))

    def __repr__(self) -> str:
        return f"StreamRecord(value={self.value!r}, timestamp={self.timestamp!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (StreamRecord, (self.value, self.timestamp))

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickles a record pickled when it was a dataclass (snapshots written by earlier versions)."""
        _set_value(self, state["value"])
        _set_timestamp(self, state["timestamp"])


# the slots' own setters: they bypass ``__setattr__``, which refuses every assignment after ``__init__``
_set_value = vars(StreamRecord)["value"].__set__
_set_timestamp = vars(StreamRecord)["timestamp"].__set__


@dataclass(frozen=True, order=True)
class Watermark:
    """Event time has progressed to ``timestamp``: no element with a timestamp ``<= timestamp`` should follow."""

    timestamp: int

    def __repr__(self) -> str:
        return f"Watermark({self.timestamp})"


MAX_WATERMARK = Watermark(LONG_MAX)
"""The watermark that ends event time; a bounded input emits it at its end, firing every event-time timer."""


class WatermarkStatus(Enum):
    """Whether an input currently takes part in watermark progress (Flink's ``WatermarkStatus``)."""

    ACTIVE = "ACTIVE"
    IDLE = "IDLE"

    def is_active(self) -> bool:
        return self is WatermarkStatus.ACTIVE

    def is_idle(self) -> bool:
        return self is WatermarkStatus.IDLE


StreamElement = StreamRecord[Any] | Watermark | WatermarkStatus
