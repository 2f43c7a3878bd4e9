"""``DeltaTrigger``: fires when an element differs from the last fired-on element by more than a threshold."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from panes.state.descriptors import ValueStateDescriptor
from panes.windowing.triggers.base import Trigger, TriggerContext, TriggerResult
from panes.windowing.windows import Window

T = TypeVar("T")


class DeltaFunction(ABC, Generic[T]):
    """The distance between two data points (Flink's ``DeltaFunction``)."""

    @abstractmethod
    def get_delta(self, old_data_point: T, new_data_point: T) -> float: ...


class _CallableDelta(DeltaFunction[T]):
    def __init__(self, fn: Callable[[T, T], float]) -> None:
        self._fn = fn

    def get_delta(self, old_data_point: T, new_data_point: T) -> float:
        return self._fn(old_data_point, new_data_point)


def as_delta_function(fn: DeltaFunction[T] | Callable[[T, T], float]) -> DeltaFunction[T]:
    """``fn`` as a ``DeltaFunction``; a two-argument callable ``(old, new) -> float`` is wrapped."""
    if isinstance(fn, DeltaFunction):
        return fn
    if callable(fn):
        return _CallableDelta(fn)
    raise TypeError(f"expected a DeltaFunction or a callable (old, new) -> float, got {type(fn).__name__}")


class DeltaTrigger(Trigger[Any, Window]):
    """Fires when ``delta(last, element) > threshold``; ``last`` is the first element, then each fired-on one."""

    def __init__(self, threshold: float, delta_function: DeltaFunction[Any] | Callable[[Any, Any], float]) -> None:
        self.threshold = threshold
        self.delta_function = as_delta_function(delta_function)
        self._state = ValueStateDescriptor("last-element")

    @staticmethod
    def of(threshold: float, delta_function: DeltaFunction[Any] | Callable[[Any, Any], float]) -> DeltaTrigger:
        return DeltaTrigger(threshold, delta_function)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        last = ctx.get_partitioned_state(self._state)
        if last.value() is None:
            last.update(element)
            return TriggerResult.CONTINUE
        if self.delta_function.get_delta(last.value(), element) > self.threshold:
            last.update(element)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.get_partitioned_state(self._state).clear()

    def __repr__(self) -> str:
        return f"DeltaTrigger({self.threshold!r})"
