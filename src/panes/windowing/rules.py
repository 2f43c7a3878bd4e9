"""The event-time rules every window implementation applies, each written once, in a scalar form (one window or
element, Python ints) and a vectorised form (numpy ``int64`` arrays) side by side.

Flink's ``WindowOperator`` and ``EventTimeTrigger`` define them; with ``W`` the current watermark and ``L`` the
allowed lateness (``>= 0``):

- **ended** (the firing rule of the event-time triggers): a window has ended when ``max_timestamp <= W``. An
  element of an ended window fires it at once; otherwise a timer at ``max_timestamp`` fires it.
- **cleanup time**: ``max_timestamp + L``, added as Java ``long``\\ s; ``LONG_MAX`` (never cleaned up, no timer)
  when the sum wraps around past ``LONG_MAX``. A window whose own end wrapped around (its max timestamp near
  ``LONG_MIN``) keeps its early cleanup time: Flink cleans it up at the first watermark. (Processing-time windows
  are cleaned up at their max timestamp.)
- **late window**: its cleanup time is ``<= W``; the element is not added to it.
- **late element**: skipped by every window it belongs to, and ``timestamp + L <= W`` (Java ``long`` addition):
  it goes to the late-data output, or is counted as dropped. (An element skipped by all its windows is late
  unless a window's end wrapped around the long range.)

Vectorised forms wrap around as Java's ``long`` does (numpy's ``int64`` array arithmetic wraps silently). Where
each implementation calls them: ``WindowOperator`` (``operator.py``), ``AlignedWindowOperator`` (``aligned.py``),
the columnar operators (``columnar/aligned.py``, ``columnar/sessions.py``) and the triggers
(``triggers/event_time.py``, ``triggers/continuous.py``, ``triggers/composite.py``).
"""

from __future__ import annotations

import numpy as np

from panes.time import LONG_MAX, java_add


def has_ended(max_timestamp: int, watermark: int) -> bool:
    """Whether the window whose max timestamp is ``max_timestamp`` has ended at ``watermark``."""
    return max_timestamp <= watermark


def have_ended(max_timestamps: np.ndarray, watermark: int) -> np.ndarray:
    """:func:`has_ended` of each window."""
    return max_timestamps <= watermark


def cleanup_time(max_timestamp: int, allowed_lateness: int) -> int:
    """The cleanup time of an event-time window whose max timestamp is ``max_timestamp`` (see the module)."""
    if not allowed_lateness:
        return max_timestamp
    cleanup = java_add(max_timestamp, allowed_lateness)
    return cleanup if cleanup >= max_timestamp else LONG_MAX


def cleanup_times(max_timestamps: np.ndarray, allowed_lateness: int) -> np.ndarray:
    """:func:`cleanup_time` of each window."""
    return np.where(max_timestamps > LONG_MAX - allowed_lateness, LONG_MAX, max_timestamps + allowed_lateness)


def is_window_late(cleanup: int, watermark: int) -> bool:
    """Whether a window whose cleanup time is ``cleanup`` (:func:`cleanup_time`) is late at ``watermark``."""
    return cleanup <= watermark


def windows_late(cleanups: np.ndarray, watermark: int) -> np.ndarray:
    """:func:`is_window_late` of each window."""
    return cleanups <= watermark


def is_element_late(timestamp: int, allowed_lateness: int, watermark: int) -> bool:
    """Whether an element at ``timestamp`` that every one of its windows skipped is late at ``watermark``."""
    return java_add(timestamp, allowed_lateness) <= watermark


def elements_late(timestamps: np.ndarray, allowed_lateness: int, watermark: int) -> np.ndarray:
    """:func:`is_element_late` of each element."""
    return timestamps + allowed_lateness <= watermark
