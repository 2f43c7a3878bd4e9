"""Functions of a broadcast connected stream (Flink's ``BroadcastProcessFunction`` and
``KeyedBroadcastProcessFunction``, PyFlink's method names).

``process_element(value, ctx)`` handles the non-broadcast side: ``ctx`` is a read-only context whose
``get_broadcast_state(descriptor)`` is a read-only view. ``process_broadcast_element(value, ctx)`` handles
every broadcast element, in every parallel instance: ``ctx.get_broadcast_state(descriptor)`` may be written.
On a keyed stream the non-broadcast side also has keyed state, timers (``ctx.timer_service()``, ``on_timer``)
and the current key, and the broadcast side may visit the keyed state of every key
(``ctx.apply_to_keyed_state(descriptor, function)``). Results and ``ctx.output(tag, value)`` work as in the
other process functions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from panes.functions.base import Function
from panes.functions.stream import TimeDomain, TimerService
from panes.state.broadcast import BroadcastState, ReadOnlyBroadcastState
from panes.tags import OutputTag

IN1 = TypeVar("IN1")
IN2 = TypeVar("IN2")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")


class BaseBroadcastContext(ABC):
    """What both sides' contexts have: the element's timestamp, time, and side outputs."""

    @abstractmethod
    def timestamp(self) -> int | None:
        """The timestamp of the element being processed (of the timer, in ``on_timer``); ``None`` if none."""

    @abstractmethod
    def current_processing_time(self) -> int: ...

    @abstractmethod
    def current_watermark(self) -> int: ...

    @abstractmethod
    def output(self, output_tag: OutputTag[Any], value: Any) -> None:
        """Emit ``value`` to side output ``output_tag`` with the current timestamp."""


class BroadcastContext(BaseBroadcastContext):
    """The broadcast side's context: broadcast state may be written."""

    @abstractmethod
    def get_broadcast_state(self, state_descriptor: Any) -> BroadcastState[Any, Any]:
        """The broadcast state of ``state_descriptor`` (one given to ``broadcast(...)``; another raises
        ``ValueError``)."""


class ReadOnlyBroadcastContext(BaseBroadcastContext):
    """The non-broadcast side's context: broadcast state is read-only."""

    @abstractmethod
    def get_broadcast_state(self, state_descriptor: Any) -> ReadOnlyBroadcastState[Any, Any]: ...


class KeyedBroadcastContext(BroadcastContext):
    @abstractmethod
    def apply_to_keyed_state(self, state_descriptor: Any, function: Callable[[Any, Any], None]) -> None:
        """Call ``function(key, state)`` for every key that has state of ``state_descriptor`` in this instance."""


class KeyedReadOnlyBroadcastContext(ReadOnlyBroadcastContext):
    @abstractmethod
    def timer_service(self) -> TimerService: ...

    @abstractmethod
    def get_current_key(self) -> Any: ...


class KeyedBroadcastOnTimerContext(KeyedReadOnlyBroadcastContext):
    @abstractmethod
    def time_domain(self) -> TimeDomain: ...


class BaseBroadcastProcessFunction(Function):
    """What both broadcast process functions are (PyFlink's ``BaseBroadcastProcessFunction``)."""


class BroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[IN1, IN2, OUT]):
    """Processing of a non-keyed stream connected with a broadcast stream."""

    Context = BroadcastContext
    ReadOnlyContext = ReadOnlyBroadcastContext

    @abstractmethod
    def process_element(self, value: IN1, ctx: ReadOnlyBroadcastContext) -> Iterable[OUT] | None: ...

    @abstractmethod
    def process_broadcast_element(self, value: IN2, ctx: BroadcastContext) -> Iterable[OUT] | None: ...


class KeyedBroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[KEY, IN1, IN2, OUT]):
    """Processing of a keyed stream connected with a broadcast stream: keyed state and timers on the keyed side."""

    Context = KeyedBroadcastContext
    ReadOnlyContext = KeyedReadOnlyBroadcastContext
    OnTimerContext = KeyedBroadcastOnTimerContext

    @abstractmethod
    def process_element(self, value: IN1, ctx: KeyedReadOnlyBroadcastContext) -> Iterable[OUT] | None: ...

    @abstractmethod
    def process_broadcast_element(self, value: IN2, ctx: KeyedBroadcastContext) -> Iterable[OUT] | None: ...

    def on_timer(self, timestamp: int, ctx: KeyedBroadcastOnTimerContext) -> Iterable[OUT] | None:
        """Called when a timer registered through ``ctx.timer_service()`` fires; default: nothing."""
        return None
