"""Processing-time clocks: the system clock, and a manual one that tests and runners advance."""

from __future__ import annotations

import time
from typing import Protocol


class ProcessingTimeService(Protocol):
    def get_current_processing_time(self) -> int:
        """Now, as ``int`` epoch milliseconds."""
        ...


class SystemProcessingTimeService:
    """The machine's wall clock, in epoch milliseconds."""

    def get_current_processing_time(self) -> int:
        return time.time_ns() // 1_000_000


class ManualProcessingTimeService:
    """A clock that only moves when told to (Flink's ``TestProcessingTimeService``). Starts at ``start`` (0)."""

    def __init__(self, start: int = 0) -> None:
        self.now = start

    def get_current_processing_time(self) -> int:
        return self.now

    def set_current_time(self, now: int) -> None:
        self.now = now
