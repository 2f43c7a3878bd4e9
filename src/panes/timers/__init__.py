"""Timers: Flink's heap priority queue, the internal timer service, and processing-time clocks."""

from panes.timers.clock import ManualProcessingTimeService, ProcessingTimeService, SystemProcessingTimeService
from panes.timers.heap import InternalTimer, TimerHeap
from panes.timers.loops import NON_FORWARD_LIMIT, TimerLoopError
from panes.timers.service import InternalTimerService, Triggerable

__all__ = [
    "InternalTimer",
    "InternalTimerService",
    "NON_FORWARD_LIMIT",
    "ManualProcessingTimeService",
    "ProcessingTimeService",
    "SystemProcessingTimeService",
    "TimerHeap",
    "TimerLoopError",
    "Triggerable",
]
