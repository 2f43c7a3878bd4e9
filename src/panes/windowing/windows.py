"""Windows: ``TimeWindow`` = ``[start, end)`` and the single ``GlobalWindow``.

``max_timestamp()`` is the largest timestamp that still belongs to a window: ``end - 1`` for a time window,
``LONG_MAX`` for the global window. Results of a window carry it as their timestamp.

Window bounds are Java ``long``s computed as Flink computes them, wrapping around at the ends of the range
(:func:`panes.time.java_add`): a window of size 1000 that starts at ``9223372036854775000`` ends at
``-9223372036854775616``, and its max timestamp ``-9223372036854775617`` is due at the first watermark.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from panes.java_hash import JavaHashSet
from panes.time import LONG_MAX, LONG_MIN, java_add, java_sub

_MASK64 = (1 << 64) - 1


def long_to_int_with_bit_mixing(value: int) -> int:
    """Flink's ``MathUtils.longToIntWithBitMixing``: SplitMix64's finalizer (shifts 30, 27 and 31 with its two
    multipliers, as Flink 2.3.0's bytecode has it), truncated to a signed 32-bit int as Java's ``(int)`` cast."""
    x = value & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    x = x ^ (x >> 31)
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= (1 << 31) else x


class Window(ABC):
    """A finite (or, for ``GlobalWindow``, unbounded) group of elements."""

    __slots__ = ()

    @abstractmethod
    def max_timestamp(self) -> int:
        """The largest timestamp that belongs to this window."""

    @abstractmethod
    def java_hash_code(self) -> int:
        """The ``hashCode()`` Flink's Java class has, so that hash-ordered iteration matches Flink."""


def intersect(start: int, end: int, other_start: int, other_end: int) -> bool:
    """Whether windows ``[start, end)`` and ``[other_start, other_end)`` overlap or touch, Flink's rule for
    merging session windows: ``start <= other_end and end >= other_start``, on the bounds as they are (an end
    that wrapped around past ``Long.MAX_VALUE`` is below its start, and such a window touches nothing after
    it). Every session merge applies it: :meth:`TimeWindow.merge_windows` and the columnar session operator."""
    return start <= other_end and end >= other_start


def merged_runs(groups: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The vectorised form of the merging sweep over windows ``[starts[i], ends[i])`` sorted by group (an
    ``int64`` code, e.g. a key's) and start, whose ends are not below their starts: the indices where a merged
    window begins, which are the first window of each group and every window that does not :func:`intersect`
    the cover of the windows before it in its group (its start is after all their ends). Ends and starts are
    compared by rank, so that one running maximum over ``(group, rank)`` serves every group."""
    times = np.unique(np.concatenate([starts, ends]))
    base = groups * (len(times) + 1)
    reach = np.maximum.accumulate(base + np.searchsorted(times, ends))
    begins = np.ones(len(starts), dtype=bool)
    begins[1:] = (groups[1:] != groups[:-1]) | (base[1:] + np.searchsorted(times, starts[1:]) > reach[:-1])
    found: np.ndarray = np.flatnonzero(begins)
    return found


@dataclass(frozen=True, slots=True)
class TimeWindow(Window):
    """The interval ``[start, end)`` of epoch milliseconds."""

    start: int
    end: int

    def max_timestamp(self) -> int:
        """``end - 1`` as a Java ``long``: ``LONG_MAX`` when ``end`` is ``LONG_MIN`` (the one case where
        ``java_sub(end, 1)`` wraps around, spelled out because this runs for every element and timer)."""
        end = self.end
        return end - 1 if end != LONG_MIN else LONG_MAX

    def java_hash_code(self) -> int:
        return long_to_int_with_bit_mixing(self.start + self.end)

    def intersects(self, other: TimeWindow) -> bool:
        """True when the windows overlap or touch (:func:`intersect`)."""
        return intersect(self.start, self.end, other.start, other.end)

    def cover(self, other: TimeWindow) -> TimeWindow:
        """The smallest window containing both."""
        return TimeWindow(min(self.start, other.start), max(self.end, other.end))

    def __repr__(self) -> str:
        return f"TimeWindow(start={self.start}, end={self.end})"

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        """The start of the window of size ``window_size`` (> 0), shifted by ``offset``, containing ``timestamp``.

        The largest ``start <= timestamp`` with ``start ≡ offset (mod window_size)``, negative timestamps
        included, computed with Java's ``long`` arithmetic as Flink does: ``timestamp - offset`` and the start
        wrap around at the ends of the range (near ``LONG_MIN`` the start wraps to a large positive value).
        """
        # Python's % is Flink's remainder-then-correct-the-sign: both give the non-negative remainder
        return java_sub(timestamp, java_sub(timestamp, offset) % window_size)

    @staticmethod
    def window_starts_with_offset(timestamps: np.ndarray, offset: int, window_size: int) -> np.ndarray:
        """:meth:`get_window_start_with_offset` of each ``int64`` timestamp (the same wrapping arithmetic:
        numpy's ``mod`` is non-negative for a positive divisor and its ``int64`` subtraction wraps)."""
        starts: np.ndarray = timestamps - np.mod(timestamps - offset, window_size)
        return starts

    @staticmethod
    def of_size(start: int, size: int) -> TimeWindow:
        """The window ``[start, start + size)``, its end wrapping around like a Java ``long``."""
        return TimeWindow(start, java_add(start, size))

    @staticmethod
    def merge_windows(
        windows: Iterable[TimeWindow],
        callback: Callable[[Collection[TimeWindow], TimeWindow], None],
    ) -> None:
        """Merge overlapping or touching windows; calls ``callback(merged, result)`` once per group of 2+.

        Windows are sorted by start (stable) and swept left to right, as Flink does; each group is handed
        over as a Java-ordered hash set so that later iteration matches Flink's.
        """
        groups: list[tuple[TimeWindow, JavaHashSet[TimeWindow]]] = []
        current: TimeWindow | None = None
        members: JavaHashSet[TimeWindow] | None = None
        for candidate in sorted(windows, key=lambda w: w.start):
            if current is None or members is None:
                current, members = candidate, JavaHashSet([candidate])
            elif current.intersects(candidate):
                current = current.cover(candidate)
                members.add(candidate)
            else:
                groups.append((current, members))
                current, members = candidate, JavaHashSet([candidate])
        if current is not None and members is not None:
            groups.append((current, members))
        for result, group in groups:
            if len(group) > 1:
                callback(group, result)


class GlobalWindow(Window):
    """The single window that holds everything; it never ends (``max_timestamp() == LONG_MAX``)."""

    __slots__ = ()
    _instance: GlobalWindow | None = None

    def __new__(cls) -> GlobalWindow:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    @classmethod
    def get(cls) -> GlobalWindow:
        return cls()

    def max_timestamp(self) -> int:
        return LONG_MAX

    def java_hash_code(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GlobalWindow)

    def __hash__(self) -> int:
        return 0

    def __reduce__(self) -> tuple[Any, ...]:
        return (GlobalWindow, ())

    def __repr__(self) -> str:
        return "GlobalWindow"
