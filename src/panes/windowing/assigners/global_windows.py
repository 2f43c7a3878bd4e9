"""``GlobalWindows``: every element in the one ``GlobalWindow``; results need a trigger."""

from __future__ import annotations

from typing import Any

from panes.windowing.assigners.base import WindowAssigner, WindowAssignerContext
from panes.windowing.triggers.base import Trigger
from panes.windowing.triggers.never import EndOfStreamTrigger, NeverTrigger
from panes.windowing.windows import GlobalWindow


class GlobalWindows(WindowAssigner[Any, GlobalWindow]):
    """All elements of a key share one window that never ends and is never cleaned up.

    The default trigger never fires (``create()``), or fires once at the end of a bounded input
    (``create_with_end_of_stream_trigger()``). Not event time: elements are never late.
    """

    def __init__(self, default_trigger: Trigger[Any, Any] | None = None) -> None:
        self._default_trigger = default_trigger

    @classmethod
    def create(cls) -> GlobalWindows:
        return cls(NeverTrigger())

    @classmethod
    def create_with_end_of_stream_trigger(cls) -> GlobalWindows:
        return cls(EndOfStreamTrigger())

    def assign_windows(self, element: Any, timestamp: int, context: WindowAssignerContext) -> list[GlobalWindow]:
        return [GlobalWindow()]

    def get_default_trigger(self) -> Trigger[Any, Any]:
        return self._default_trigger if self._default_trigger is not None else NeverTrigger()

    def is_event_time(self) -> bool:
        return False

    def window_type(self) -> type[GlobalWindow]:
        return GlobalWindow

    def __repr__(self) -> str:
        return f"GlobalWindows(trigger={type(self.get_default_trigger()).__name__})"
