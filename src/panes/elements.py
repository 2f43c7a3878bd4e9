"""The elements that flow between operators: records, watermarks and watermark status.

These are Flink's ``StreamRecord``, ``Watermark`` and ``WatermarkStatus``. A record's timestamp is
``None`` when it has none (Flink's ``hasTimestamp() == false``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, TypeVar

from panes.time import LONG_MAX

T = TypeVar("T")


@dataclass(frozen=True)
class StreamRecord(Generic[T]):
    """A value with an optional event timestamp (``int`` epoch ms, or ``None`` for no timestamp)."""

    value: T
    timestamp: int | None = None

    def has_timestamp(self) -> bool:
        return self.timestamp is not None


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
