"""The ``Trigger`` ABC, ``TriggerResult`` and the contexts a trigger is called with.

A trigger decides when a window's pane is evaluated. It is called on every element added to a window
(``on_element``), when a timer it registered fires (``on_event_time`` / ``on_processing_time``), when
windows merge (``on_merge``, only when ``can_merge()``), and when the window is purged (``clear``, which must
delete the trigger's timers and state). Triggers keep state only through ``ctx.get_partitioned_state``,
which is scoped to the key and the window.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from typing import Any, Generic, TypeAlias, TypeVar

from panes.state.descriptors import StateDescriptor
from panes.windowing.windows import Window

T = TypeVar("T")
W = TypeVar("W")


class TriggerResult(Enum):
    """What the window operator does after a trigger call: fire (evaluate the pane) and/or purge it."""

    CONTINUE = (False, False)
    FIRE_AND_PURGE = (True, True)
    FIRE = (True, False)
    PURGE = (False, True)

    def __init__(self, fire: bool, purge: bool) -> None:
        self._fire = fire
        self._purge = purge

    def is_fire(self) -> bool:
        return self._fire

    def is_purge(self) -> bool:
        return self._purge


class TriggerContext(ABC):
    """Time, timers and state of the current key and window, for a trigger."""

    @abstractmethod
    def get_current_processing_time(self) -> int: ...

    @abstractmethod
    def get_current_watermark(self) -> int: ...

    @abstractmethod
    def register_processing_time_timer(self, time: int) -> None: ...

    @abstractmethod
    def register_event_time_timer(self, time: int) -> None: ...

    @abstractmethod
    def delete_processing_time_timer(self, time: int) -> None: ...

    @abstractmethod
    def delete_event_time_timer(self, time: int) -> None: ...

    @abstractmethod
    def get_partitioned_state(self, state_descriptor: StateDescriptor) -> Any:
        """The state of ``state_descriptor`` for the current key and window."""


class OnMergeContext(TriggerContext):
    @abstractmethod
    def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
        """Merge this state of the merged windows into the merge result (mergeable states only)."""


class Trigger(ABC, Generic[T, W]):
    """Decides when a pane fires. Subclass it for custom triggers; see the module docstring."""

    TriggerContext: TypeAlias = TriggerContext
    OnMergeContext: TypeAlias = OnMergeContext

    @abstractmethod
    def on_element(self, element: T, timestamp: int, window: W, ctx: TriggerContext) -> TriggerResult:
        """Called for every element added to ``window``. ``timestamp`` is ``LONG_MIN`` for no timestamp."""

    @abstractmethod
    def on_processing_time(self, time: int, window: W, ctx: TriggerContext) -> TriggerResult:
        """Called when a processing-time timer of this trigger (key, window) fires."""

    @abstractmethod
    def on_event_time(self, time: int, window: W, ctx: TriggerContext) -> TriggerResult:
        """Called when an event-time timer of this (key, window) fires, the operator's cleanup timer included."""

    def can_merge(self) -> bool:
        """Whether this trigger supports merging windows (required by session windows)."""
        return False

    def required_window_type(self) -> type[Window] | None:
        """The class of window this trigger works on, or ``None`` for any window (the default).

        Built-in triggers that Flink types with a window class and that read the window's end (``EventTimeTrigger``
        and ``ProcessingTimeTrigger`` need a ``TimeWindow``) say so, and the window operator refuses them with an
        assigner that makes other windows (Flink's job fails there). A user-written trigger is not refused
        unless it overrides this.
        """
        return None

    def on_merge(self, window: W, ctx: OnMergeContext) -> None:
        """Called when windows merged into ``window``; re-establish timers and merge state here."""
        raise NotImplementedError(f"{type(self).__name__} does not support merging")

    @abstractmethod
    def clear(self, window: W, ctx: TriggerContext) -> None:
        """Delete every timer and all state this trigger keeps for ``window``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
