"""Window functions users write: ``ProcessWindowFunction``, ``WindowFunction`` and their all-window forms.

They return (or yield) an iterable of results; each result is emitted with the window's
``max_timestamp()`` as its timestamp. ``None`` means no result. Side outputs go through
``context.output(tag, value)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

from panes.functions.base import Function
from panes.state.api import KeyedStateStore
from panes.tags import OutputTag
from panes.windowing.pane_info import PaneInfo

IN = TypeVar("IN")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")
W = TypeVar("W")


class WindowContext(ABC, Generic[W]):
    """What a process window function sees of its window (Flink's ``ProcessWindowFunction.Context``)."""

    @abstractmethod
    def window(self) -> W: ...

    @abstractmethod
    def current_processing_time(self) -> int: ...

    @abstractmethod
    def current_watermark(self) -> int: ...

    @abstractmethod
    def window_state(self) -> KeyedStateStore:
        """State scoped to the key and this window (not available for merging windows)."""

    @abstractmethod
    def global_state(self) -> KeyedStateStore:
        """State scoped to the key only."""

    @abstractmethod
    def output(self, output_tag: OutputTag[Any], value: Any) -> None:
        """Emit ``value`` to the side output ``output_tag`` with the window's max timestamp."""

    @abstractmethod
    def pane(self) -> PaneInfo:
        """Which firing of the window this is, its timing and whether it is the last (``panes.windowing.pane_info``);
        ``UnsupportedOperationError`` outside a firing (in ``clear``)."""


class ProcessWindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """Evaluates a whole pane: ``process(key, context, elements)`` returns the results."""

    Context = WindowContext

    @abstractmethod
    def process(self, key: KEY, context: WindowContext[W], elements: Iterable[IN]) -> Iterable[OUT] | None: ...

    def clear(self, context: WindowContext[W]) -> None:
        """Called when the window is purged at cleanup time; delete per-window state here."""


class ProcessAllWindowFunction(Function, Generic[IN, OUT, W]):
    """The non-keyed form: ``process(context, elements)``."""

    Context = WindowContext

    @abstractmethod
    def process(self, context: WindowContext[W], elements: Iterable[IN]) -> Iterable[OUT] | None: ...

    def clear(self, context: WindowContext[W]) -> None:
        """Called when the window is purged at cleanup time."""


class WindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """The older one-method form: ``apply(key, window, inputs)``."""

    @abstractmethod
    def apply(self, key: KEY, window: W, inputs: Iterable[IN]) -> Iterable[OUT] | None: ...


class AllWindowFunction(Function, Generic[IN, OUT, W]):
    """The non-keyed one-method form: ``apply(window, inputs)``."""

    @abstractmethod
    def apply(self, window: W, inputs: Iterable[IN]) -> Iterable[OUT] | None: ...
