"""Pane info: which firing of its window a pane is, and when it fired relative to the window's end.

Every firing of a window carries a :class:`PaneInfo`: its ``index`` (0 for the window's first firing, then 1,
2, ... also across purges), its ``timing`` (:class:`~panes.windowing.observer.PaneTiming`: ``EARLY`` before the
time that closes windows passes the window's end, ``ON_TIME`` for the first firing after it, ``LATE`` after
that, as Apache Beam's ``PaneInfo``; :func:`~panes.windowing.observer.pane_timing` has the rule) and
``is_last``: no firing of the window can follow. That is the firing of the window's cleanup timer (``max_timestamp +
allowed lateness`` of event time), or a firing in the advance of event time that reaches the cleanup time (the end
of the input included) when no timer of the trigger is left to fire the window before it
(``WindowStep._closes``, ``_fires_again``); a window that fired before its cleanup's advance has no last pane.
A ``ProcessWindowFunction`` reads it with
``context.pane()``; ``WindowRow(pane="pane")`` writes it as columns.

The window operator keeps one entry per window that fired, ``(firings, last timing)``, in its keyed state
(merged windows keep the most firings and the latest timing), removed when the window is cleaned up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from panes.state.descriptors import ReducingStateDescriptor
from panes.windowing.observer import PaneTiming, pane_timing

_ORDER = {PaneTiming.EARLY: 0, PaneTiming.ON_TIME: 1, PaneTiming.LATE: 2}


@dataclass(frozen=True)
class PaneInfo:
    """A firing of a window: see the module docstring."""

    index: int
    timing: PaneTiming
    is_last: bool
    closed_by_quiet: bool = False
    """Whether the firing came from the key's time moving because the key went quiet (a window with event time
    per key and a quiet timeout, ``PerKeyWatermarks.with_quiet_timeout``), not from its elements or the stream."""

    @property
    def is_first(self) -> bool:
        return self.index == 0


def _merge(a: tuple[int, str], b: tuple[int, str]) -> tuple[int, str]:
    """Two windows' firings so far, merged: the most firings, the latest timing."""
    timing = max(PaneTiming(a[1]), PaneTiming(b[1]), key=_ORDER.__getitem__)
    return max(a[0], b[0]), timing.value


PANE_STATE = ReducingStateDescriptor("window-pane-info", _merge)
"""Per window that fired: ``(firings so far, timing of the last one)``."""


def next_pane(
    state: Any, max_timestamp: int, time: int, time_before: int, is_last: bool, closed_by_quiet: bool = False
) -> PaneInfo:
    """The pane info of a firing of the window whose pane state is ``state`` (see :data:`PANE_STATE`), when the
    closing time is ``time`` during an advance from ``time_before`` (``closed_by_quiet``: an advance of a quiet
    key's time); records the firing (unless it is the last: nothing follows it, and the window's cleanup in the
    same advance drops the state)."""
    previous = state.get()
    count, last = (0, None) if previous is None else (previous[0], PaneTiming(previous[1]))
    timing = pane_timing(max_timestamp, time, time_before, last)
    if not is_last:
        state.clear()
        state.add((count + 1, timing.value))
    return PaneInfo(count, timing, is_last, closed_by_quiet)
