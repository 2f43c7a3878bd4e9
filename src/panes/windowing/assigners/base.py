"""The ``WindowAssigner`` ABC: which windows an element belongs to, and their default trigger."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeAlias, TypeVar

from panes.errors import BadRecordError
from panes.time import LONG_MIN
from panes.windowing.triggers.base import Trigger
from panes.windowing.windows import Window

if TYPE_CHECKING:
    from panes.windowing.evictors import Evictor

T = TypeVar("T")
W = TypeVar("W")

MISSING_TIMESTAMP_MESSAGE = (
    "Record has no timestamp (Flink: Long.MIN_VALUE timestamp = no timestamp marker). "
    "Is the time characteristic set to 'ProcessingTime', or did you forget to call "
    "'DataStream.assign_timestamps_and_watermarks(...)'?"
)


class MissingTimestampError(BadRecordError):
    """An element without a timestamp reached an event-time window assigner."""

    def __init__(self) -> None:
        super().__init__(MISSING_TIMESTAMP_MESSAGE)


def require_timestamp(timestamp: int | None) -> int:
    """``timestamp`` if the element has one; raises :class:`MissingTimestampError` for ``None``/``LONG_MIN``."""
    if timestamp is None or timestamp == LONG_MIN:
        raise MissingTimestampError()
    return timestamp


class WindowAssignerContext(Protocol):
    def get_current_processing_time(self) -> int: ...


class WindowAssigner(ABC, Generic[T, W]):
    """Assigns each element to zero or more windows.

    ``assign_windows`` receives the element, its timestamp (``LONG_MIN`` when it has none) and a context
    with the current processing time. ``is_event_time()`` decides whether lateness and cleanup follow the
    watermark.
    """

    @abstractmethod
    def assign_windows(self, element: T, timestamp: int, context: WindowAssignerContext) -> Collection[W]: ...

    @abstractmethod
    def get_default_trigger(self) -> Trigger[Any, Any]: ...

    @abstractmethod
    def is_event_time(self) -> bool: ...

    def get_default_evictor(self) -> Evictor[Any, Any] | None:
        """The evictor a windowed stream starts with (``None``, the default: no evictor). Count windows come with
        one, so that ``window(CountSlidingWindowAssigner.of(size, slide))`` is Java's ``countWindow``."""
        return None

    def is_merging(self) -> bool:
        return isinstance(self, MergingWindowAssigner)

    def window_type(self) -> type[Window] | None:
        """The class of the windows this assigner makes, when it is known (the built-in assigners say it;
        ``None``, the default, means any). The window operator checks it against the trigger's
        ``required_window_type()``."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    WindowAssignerContext: TypeAlias = WindowAssignerContext


class MergeCallback:
    """What ``merge_windows`` reports merges to: call it, ``callback(merged, result)``, or, as PyFlink's
    ``MergingWindowAssigner.MergeCallback``, ``callback.merge(merged, result)``."""

    __slots__ = ("_report",)

    def __init__(self, report: Callable[[Collection[Any], Any], None]) -> None:
        self._report = report

    def __call__(self, to_be_merged: Collection[Any], merge_result: Any) -> None:
        self._report(to_be_merged, merge_result)

    def merge(self, to_be_merged: Collection[Any], merge_result: Any) -> None:
        self._report(to_be_merged, merge_result)


class MergingWindowAssigner(WindowAssigner[T, W]):
    """An assigner whose windows can merge (sessions). ``merge_windows`` calls ``callback(merged, result)``
    (or ``callback.merge(merged, result)``) for each group of windows that merge."""

    MergeCallback: TypeAlias = MergeCallback

    @abstractmethod
    def merge_windows(self, windows: Iterable[W], callback: MergeCallback) -> None: ...
