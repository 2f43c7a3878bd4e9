"""The local (reference) runner: runs a plan in process, element by element, with Flink's exact timing."""

from panes.local.clock import SteppingClock
from panes.local.job import LocalJob
from panes.local.runner import LocalRunner

__all__ = ["LocalJob", "LocalRunner", "SteppingClock"]
