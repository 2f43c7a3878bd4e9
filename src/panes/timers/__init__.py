"""Timers: Flink's heap priority queue, the internal timer service, and processing-time clocks."""

from panes.timers.clock import ManualProcessingTimeService, ProcessingTimeService, SystemProcessingTimeService
from panes.timers.heap import InternalTimer, TimerHeap
from panes.timers.service import InternalTimerService, Triggerable

__all__ = [
    "InternalTimer",
    "InternalTimerService",
    "ManualProcessingTimeService",
    "ProcessingTimeService",
    "SystemProcessingTimeService",
    "TimerHeap",
    "Triggerable",
]
