"""Watermark generators: the ``WatermarkGenerator`` interface and Flink's built-in generators.

A generator sees every event (``on_event``, where a *punctuated* generator emits) and is asked periodically
for a watermark (``on_periodic_emit``, every ``pipeline.auto-watermark-interval`` of processing time, 200 ms
by default, where a *periodic* generator emits). Watermarks are ``int`` epoch milliseconds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from panes.elements import Watermark
from panes.time import LONG_MIN, DurationLike, duration_ms
from panes.timers.clock import ProcessingTimeService, SystemProcessingTimeService
from panes.watermarks.output import WatermarkOutput


class WatermarkGenerator(ABC):
    """Generates watermarks from events and/or periodically (Flink's ``WatermarkGenerator``).

    Subclasses implement both methods; either may do nothing. Emitting through ``output`` a watermark that
    is not larger than an earlier one is allowed: the operator drops it, so watermarks never go backwards.
    """

    @abstractmethod
    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        """Called for every event with its assigned timestamp; a punctuated generator emits here."""

    @abstractmethod
    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        """Called every auto-watermark interval of processing time; a periodic generator emits here."""

    def snapshot_state(self) -> Any:
        """Progress to keep across a restore (panes' runners snapshot it; Flink restarts generators fresh).

        The default keeps nothing; a generator that tracks progress returns picklable data here and takes
        it back in :meth:`restore_state`.
        """
        return None

    def restore_state(self, state: Any) -> None:
        """Take back what :meth:`snapshot_state` returned."""


@dataclass(frozen=True)
class WatermarkGeneratorContext:
    """What a generator supplier receives (Flink's ``WatermarkGeneratorSupplier.Context``).

    ``input_activity_clock`` is the processing-time clock against which idleness is measured; an operator
    passes a pausable view of its own processing-time service. The default is the machine's wall clock.
    """

    input_activity_clock: ProcessingTimeService = field(default_factory=SystemProcessingTimeService)


WatermarkGeneratorSupplier = Callable[[WatermarkGeneratorContext], WatermarkGenerator]
"""Creates a fresh generator for one operator instance (Flink's ``WatermarkGeneratorSupplier``)."""


class BoundedOutOfOrdernessWatermarks(WatermarkGenerator):
    """Periodic watermarks for events at most ``max_out_of_orderness`` late (Flink's same-named generator).

    Tracks the largest timestamp seen and emits ``max_timestamp - max_out_of_orderness - 1`` on each periodic
    emit: an event with timestamp ``T`` promises that no event older than ``T - max_out_of_orderness`` follows.
    Before any event the emitted watermark is ``LONG_MIN``. ``max_out_of_orderness`` is a ``timedelta`` or
    ``int`` ms; a negative one raises ``ValueError``.
    """

    __slots__ = ("_max_timestamp", "out_of_orderness")

    def __init__(self, max_out_of_orderness: DurationLike) -> None:
        millis = duration_ms(max_out_of_orderness, name="max_out_of_orderness")
        if millis < 0:
            raise ValueError(f"max_out_of_orderness cannot be negative (got {millis} ms)")
        self.out_of_orderness = millis
        # chosen so that the first watermark, before any event, is exactly LONG_MIN
        self._max_timestamp = LONG_MIN + millis + 1

    @property
    def max_timestamp(self) -> int:
        """The largest event timestamp seen so far (the initial value makes the watermark ``LONG_MIN``)."""
        return self._max_timestamp

    def current_watermark(self) -> int:
        """The watermark a periodic emit gives now: ``max_timestamp - max_out_of_orderness - 1`` (``LONG_MIN``
        before any event). The Spark runner rates each row with it (``panes.spark.watermarks``)."""
        return self._max_timestamp - self.out_of_orderness - 1

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        self._max_timestamp = max(self._max_timestamp, event_timestamp)

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        output.emit_watermark(Watermark(self.current_watermark()))

    def snapshot_state(self) -> Any:
        return self._max_timestamp

    def restore_state(self, state: Any) -> None:
        if state is not None:
            self._max_timestamp = state

    def __repr__(self) -> str:
        return f"BoundedOutOfOrdernessWatermarks({self.out_of_orderness} ms)"


class AscendingTimestampsWatermarks(BoundedOutOfOrdernessWatermarks):
    """Periodic watermarks for ascending timestamps: ``max_timestamp - 1`` (Flink's ``AscendingTimestampsWatermarks``).

    The watermark stays one below the latest timestamp because more events with that same timestamp may follow.
    """

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(0)

    def __repr__(self) -> str:
        return "AscendingTimestampsWatermarks()"


class NoWatermarksGenerator(WatermarkGenerator):
    """A generator that never emits a watermark (Flink's ``NoWatermarksGenerator``), for processing-time jobs."""

    __slots__ = ()

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        pass

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        pass

    def __repr__(self) -> str:
        return "NoWatermarksGenerator()"
