"""Count windows, built exactly as Flink builds them from ``GlobalWindows``, a count trigger and an evictor.

``CountTumblingWindowAssigner`` and ``CountSlidingWindowAssigner`` are PyFlink's names for them: PyFlink's own
classes put elements into numbered ``CountWindow``s and fire a sliding window only once it holds ``size``
elements, while Java's ``countWindow(size, slide)`` fires every ``slide`` elements on the last (up to) ``size``,
so its first firings see fewer elements. panes follows Java: both assigners are ``GlobalWindows`` with Java's
trigger and evictor, and ``KeyedStream.count_window``/``DataStream.count_window_all`` use them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from panes.time import LONG_MAX
from panes.windowing.assigners.global_windows import GlobalWindows
from panes.windowing.evictors import CountEvictor, Evictor
from panes.windowing.triggers.base import Trigger
from panes.windowing.triggers.count import CountTrigger
from panes.windowing.triggers.purging import PurgingTrigger
from panes.windowing.windows import Window

_MASK = (1 << 64) - 1


def _check(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"count window {name} must be an int, got {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"count window parameters must satisfy {name} > 0 (got {value})")
    return value


class CountTumblingWindowAssigner(GlobalWindows):
    """Java's ``countWindow(size)``: ``GlobalWindows`` + ``PurgingTrigger(CountTrigger(size))``, firing and
    purging every ``size`` elements of a key. ``ValueError`` unless ``size > 0``."""

    def __init__(self, window_size: int) -> None:
        self.window_size = _check("size", window_size)
        super().__init__(PurgingTrigger.of(CountTrigger.of(self.window_size)))

    @staticmethod
    def of(window_size: int) -> CountTumblingWindowAssigner:
        return CountTumblingWindowAssigner(window_size)

    def __repr__(self) -> str:
        return f"CountTumblingWindowAssigner({self.window_size})"


class CountSlidingWindowAssigner(GlobalWindows):
    """Java's ``countWindow(size, slide)``: ``GlobalWindows`` + ``CountTrigger(slide)`` + ``CountEvictor(size)``,
    firing every ``slide`` elements of a key on its last (up to) ``size`` elements. ``ValueError`` unless
    ``size > 0`` and ``slide > 0``."""

    def __init__(self, window_size: int, window_slide: int) -> None:
        self.window_size = _check("size", window_size)
        self.window_slide = _check("slide", window_slide)
        super().__init__(CountTrigger.of(self.window_slide))

    @staticmethod
    def of(window_size: int, window_slide: int) -> CountSlidingWindowAssigner:
        return CountSlidingWindowAssigner(window_size, window_slide)

    def get_default_evictor(self) -> Evictor[Any, Any] | None:
        return CountEvictor.of(self.window_size)

    def __repr__(self) -> str:
        return f"CountSlidingWindowAssigner({self.window_size}, {self.window_slide})"


@dataclass(frozen=True, slots=True)
class CountWindow(Window):
    """PyFlink's numbered count window (``id``; it never ends: ``max_timestamp() == LONG_MAX``). panes' count
    windows are Java's ``GlobalWindow`` (see the module doc); this class keeps PyFlink code that names it (type
    hints, custom assigners) working, and hashes as Flink's ``CountWindow`` does."""

    id: int

    def max_timestamp(self) -> int:
        return LONG_MAX

    def java_hash_code(self) -> int:
        """``MathUtils.longToIntWithBitMixing(id)``, as Flink's ``CountWindow.hashCode()``."""
        value = self.id & _MASK
        value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & _MASK
        value ^= value >> 31
        low = value & 0xFFFFFFFF
        return low - (1 << 32) if low >= 1 << 31 else low


def count_window_assigner(size: int, slide: int | None = None) -> GlobalWindows:
    """The assigner of ``count_window(size)`` / ``count_window(size, slide)`` (``slide`` ``None``: tumbling).
    As in Java, ``slide`` must be ``> 0`` when given (PyFlink reads ``slide=0`` as tumbling)."""
    if slide is None:
        return CountTumblingWindowAssigner(size)
    return CountSlidingWindowAssigner(size, slide)


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
    assigner = count_window_assigner(size, slide)
    return assigner, assigner.get_default_trigger(), assigner.get_default_evictor()
