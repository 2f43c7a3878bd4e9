"""Evictors: remove elements from a pane before and/or after the window function runs.

An evictor receives the pane as a ``list`` of :class:`TimestampedValue` in arrival order and removes
elements by mutating that list in place (Flink removes through the iterator). ``size`` is the number of
elements in the list when the evictor is called. Evicted elements are gone from the window's state.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeAlias, TypeVar

from panes.time import LONG_MIN, DurationLike, duration_ms, java_sub
from panes.windowing.triggers.delta import DeltaFunction, as_delta_function

T = TypeVar("T")
W = TypeVar("W")


class TimestampedValue(Generic[T]):
    """A pane element with its timestamp (``None`` when it has none)."""

    __slots__ = ("timestamp", "value")

    def __init__(self, value: T, timestamp: int | None = None) -> None:
        self.value = value
        self.timestamp = timestamp

    def get_value(self) -> T:
        return self.value

    def get_timestamp(self) -> int:
        """The timestamp; ``LONG_MIN`` when the element has none (as Flink's ``StreamRecord``)."""
        return LONG_MIN if self.timestamp is None else self.timestamp

    def has_timestamp(self) -> bool:
        return self.timestamp is not None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TimestampedValue) and self.value == other.value and self.timestamp == other.timestamp

    def __hash__(self) -> int:
        return hash((self.timestamp, repr(self.value)))

    def __repr__(self) -> str:
        return f"TimestampedValue({self.value!r}, {self.timestamp})"


class EvictorContext(Protocol):
    def get_current_processing_time(self) -> int: ...

    def get_current_watermark(self) -> int: ...


class Evictor(ABC, Generic[T, W]):
    """Removes elements from a pane; see the module docstring for the contract."""

    EvictorContext: TypeAlias = EvictorContext

    @abstractmethod
    def evict_before(
        self, elements: list[TimestampedValue[T]], size: int, window: W, evictor_context: EvictorContext
    ) -> None: ...

    @abstractmethod
    def evict_after(
        self, elements: list[TimestampedValue[T]], size: int, window: W, evictor_context: EvictorContext
    ) -> None: ...


class _BeforeOrAfter(Evictor[Any, Any]):
    """An evictor that applies one rule, before the function or (``do_evict_after``) after it."""

    def __init__(self, do_evict_after: bool) -> None:
        self.do_evict_after = bool(do_evict_after)

    @abstractmethod
    def _evict(self, elements: list[TimestampedValue[Any]], size: int) -> None: ...

    def evict_before(
        self, elements: list[TimestampedValue[Any]], size: int, window: Any, evictor_context: EvictorContext
    ) -> None:
        if not self.do_evict_after:
            self._evict(elements, size)

    def evict_after(
        self, elements: list[TimestampedValue[Any]], size: int, window: Any, evictor_context: EvictorContext
    ) -> None:
        if self.do_evict_after:
            self._evict(elements, size)


class CountEvictor(_BeforeOrAfter):
    """Keeps at most ``max_count`` elements (the latest arrivals); ``max_count > 0``."""

    def __init__(self, max_count: int, do_evict_after: bool = False) -> None:
        if isinstance(max_count, bool) or not isinstance(max_count, int):
            raise TypeError(f"CountEvictor max_count must be an int, got {type(max_count).__name__}")
        if max_count <= 0:
            raise ValueError(f"CountEvictor parameters must satisfy max_count > 0 (got {max_count})")
        super().__init__(do_evict_after)
        self.max_count = max_count

    @staticmethod
    def of(max_count: int, do_evict_after: bool = False) -> CountEvictor:
        return CountEvictor(max_count, do_evict_after)

    def _evict(self, elements: list[TimestampedValue[Any]], size: int) -> None:
        if size <= self.max_count:
            return
        del elements[: size - self.max_count]

    def __repr__(self) -> str:
        return f"CountEvictor({self.max_count}, do_evict_after={self.do_evict_after})"


class TimeEvictor(_BeforeOrAfter):
    """Keeps the elements with ``timestamp > max_timestamp - window_size``; does nothing when the first element
    has no timestamp. ``window_size >= 0``."""

    def __init__(self, window_size: DurationLike, do_evict_after: bool = False) -> None:
        super().__init__(do_evict_after)
        self.window_size = duration_ms(window_size, name="TimeEvictor window_size")
        if self.window_size < 0:
            raise ValueError(f"TimeEvictor parameters must satisfy window_size >= 0 (got {self.window_size} ms)")

    @staticmethod
    def of(window_size: DurationLike, do_evict_after: bool = False) -> TimeEvictor:
        return TimeEvictor(window_size, do_evict_after)

    def _evict(self, elements: list[TimestampedValue[Any]], size: int) -> None:
        if not elements or not elements[0].has_timestamp():
            return
        current_time = max(element.get_timestamp() for element in elements)
        cutoff = java_sub(current_time, self.window_size)  # a Java long: wraps around near LONG_MIN
        elements[:] = [element for element in elements if not element.get_timestamp() <= cutoff]

    def __repr__(self) -> str:
        return f"TimeEvictor({self.window_size}, do_evict_after={self.do_evict_after})"


class DeltaEvictor(_BeforeOrAfter):
    """Removes every element whose ``delta(element, last) >= threshold``, ``last`` being the pane's last."""

    def __init__(
        self,
        threshold: float,
        delta_function: DeltaFunction[Any] | Callable[[Any, Any], float],
        do_evict_after: bool = False,
    ) -> None:
        super().__init__(do_evict_after)
        self.threshold = threshold
        self.delta_function = as_delta_function(delta_function)

    @staticmethod
    def of(
        threshold: float,
        delta_function: DeltaFunction[Any] | Callable[[Any, Any], float],
        do_evict_after: bool = False,
    ) -> DeltaEvictor:
        return DeltaEvictor(threshold, delta_function, do_evict_after)

    def _evict(self, elements: list[TimestampedValue[Any]], size: int) -> None:
        if not elements:
            return
        last = elements[-1].get_value()
        delta = self.delta_function.get_delta
        elements[:] = [e for e in elements if not delta(e.get_value(), last) >= self.threshold]

    def __repr__(self) -> str:
        return f"DeltaEvictor({self.threshold!r}, do_evict_after={self.do_evict_after})"
