"""Count windows, built exactly as Flink builds them from ``GlobalWindows``, a count trigger and an evictor."""

from __future__ import annotations

from typing import Any

from panes.windowing.assigners.global_windows import GlobalWindows
from panes.windowing.evictors import CountEvictor, Evictor
from panes.windowing.triggers.base import Trigger
from panes.windowing.triggers.count import CountTrigger
from panes.windowing.triggers.purging import PurgingTrigger


def count_window_parts(
    size: int, slide: int | None = None
) -> tuple[GlobalWindows, Trigger[Any, Any], Evictor[Any, Any] | None]:
    """``(assigner, trigger, evictor)`` of Flink's ``countWindow(size)`` / ``countWindow(size, slide)``.

    - ``count_window(size)``: ``GlobalWindows`` + ``PurgingTrigger(CountTrigger(size))``: fires and purges
      every ``size`` elements.
    - ``count_window(size, slide)``: ``GlobalWindows`` + ``CountTrigger(slide)`` + ``CountEvictor(size)``:
      every ``slide`` elements, fires on the last ``size``.

    Raises ``ValueError`` unless ``size > 0`` and ``slide > 0``.
    """
    for name, value in (("size", size), ("slide", slide)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"count window {name} must be an int, got {type(value).__name__}")
        if value <= 0:
            raise ValueError(f"count window parameters must satisfy {name} > 0 (got {value})")
    if slide is None:
        return GlobalWindows.create(), PurgingTrigger.of(CountTrigger.of(size)), None
    return GlobalWindows.create(), CountTrigger.of(slide), CountEvictor.of(size)
