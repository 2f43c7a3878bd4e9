"""What a window operator does, told as it happens: the observer interface, and the timing of each fired pane.

A :class:`WindowObserver` attached to a :class:`~panes.windowing.operator.WindowOperator` with
``operator.set_observer(observer)`` hears of every element (its key, timestamp and the watermark it met), of
each window the element was added to, of late elements (sent to the late-data side output, or dropped and
counted), of merges, firings, purges, cleanups and watermark advances. Nothing is observed, and nothing costs
anything beyond a ``None`` check per element and per firing, while no observer is set.

The *time that closes windows* is the watermark for event-time assigners and the processing time for
processing-time ones. :func:`pane_timing` classifies a firing as Apache Beam's ``PaneInfo`` does (Flink's
DataStream API fires panes without naming their timing; Beam's ``PaneInfoTracker.describePane`` is the
reference), in Flink's time convention, where a watermark ``w`` says no element with ``timestamp <= w`` is
still to come:

- ``EARLY``: the closing time has not reached the window's ``max_timestamp`` (``time < max_timestamp``);
- ``ON_TIME``: the one firing during the advance that takes the closing time past the window's end
  (``time_before < max_timestamp <= time``), when every earlier pane of the window was early;
- ``LATE``: any firing after an on-time or late pane of the window, and any firing once the closing time was
  already past the window's end before the current advance (``max_timestamp <= time_before``): an element
  that arrived within the allowed lateness, for example.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any


class PaneTiming(Enum):
    """When a pane fired relative to its window's end (see the module docstring)."""

    EARLY = "early"
    ON_TIME = "on time"
    LATE = "late"


def pane_timing(max_timestamp: int, time: int, time_before: int, previous: PaneTiming | None) -> PaneTiming:
    """The timing of a pane of a window ending at ``max_timestamp`` (inclusive) fired when the closing time is
    ``time``, during an advance from ``time_before`` (equal to ``time`` outside an advance), after panes of
    the window whose last timing was ``previous`` (``None``: the first pane)."""
    if (previous is not None and previous is not PaneTiming.EARLY) or max_timestamp <= time_before:
        return PaneTiming.LATE
    if time < max_timestamp:
        return PaneTiming.EARLY
    return PaneTiming.ON_TIME


class WindowObserver:
    """Hears what a window operator does; every method does nothing unless overridden.

    Calls come in the operator's order: for an element, :meth:`element` first, then :meth:`merged` and
    :meth:`assigned` for each window it joins (with the firings its trigger decides on at once), then
    :meth:`late` when every window it belongs to was already late. ``key`` is the element's key (``window_all``:
    the constant key). Times are int ms; ``watermark`` is ``LONG_MIN`` before the first watermark.
    """

    def element(self, key: Any, value: Any, timestamp: int | None, watermark: int, processing_time: int) -> None:
        """An element reached the operator (``timestamp`` ``None``: it has none, processing-time windows), with
        the operator's watermark and processing time then."""

    def assigned(self, key: Any, window: Any) -> None:
        """The current element was added to the pane of ``window`` (the merged window for sessions)."""

    def late(self, key: Any, value: Any, timestamp: int, watermark: int, side_output: bool) -> None:
        """The current element was late for all its windows: sent to the late-data side output
        (``side_output``) or dropped and counted in ``num_late_records_dropped``."""

    def merged(self, key: Any, result: Any, merged_windows: Sequence[Any]) -> None:
        """``merged_windows`` were merged into ``result`` (merging assigners: sessions)."""

    def fired(self, key: Any, window: Any, time: int, time_before: int, watermark: int, processing_time: int) -> None:
        """The pane of ``window`` was evaluated (it had contents). ``time`` is the closing time the pane fired
        at: the timer's time when a timer of the window's clock fired it (the clock passes timers in time order,
        so during a jump from 5 to 100 a timer at 40 fires at 40), else the clock's current time;
        ``time_before`` is the closing time before the advance in progress (the current one outside an
        advance). Both are what :func:`pane_timing` needs; ``watermark`` and ``processing_time`` are the
        operator's clocks now."""

    def purged(self, key: Any, window: Any) -> None:
        """The contents of ``window``'s pane were cleared by the trigger (PURGE)."""

    def cleaned(self, key: Any, window: Any) -> None:
        """``window`` reached its cleanup time: all its state is gone."""

    def watermark(self, previous: int, watermark: int) -> None:
        """The operator received ``watermark`` (its watermark was ``previous``); event-time firings it causes
        follow this call."""

    def processing_time(self, previous: int, now: int) -> None:
        """The operator's processing time advanced to ``now``; processing-time firings it causes follow."""

    def key_time(self, key: Any, watermark: int) -> None:
        """Event time per key (``panes.watermarks.per_key``): after an element of ``key``, its effective
        watermark is ``watermark`` (firings its time causes carry their watermark too)."""
