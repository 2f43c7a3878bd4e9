"""Window joins and co-groups: ``a.join(b)`` / ``a.co_group(b)`` ``.where(key_a).equal_to(key_b)
.window(assigner)`` ``[.trigger(t)] [.evictor(e)] [.allowed_lateness(ms)]`` ``.apply(function)``.

Built as Flink builds them (``CoGroupedStreams``, ``JoinedStreams``), from primitives every runner hosts:
each input is tagged with its side by a map, the two are unioned, keyed by each side's key selector and
windowed with the given assigner, trigger, evictor and allowed lateness, and a window function splits every
fired pane back into the two sides (``panes.windowing.cogroup``). So a co-group sees, per key and window, the
elements of both inputs (either side may be empty); a join sees every pair of the two sides (an inner join:
a key and window with elements on one side only gives nothing). Results carry the window's
``max_timestamp()``, as every window result does. Triggers and evictors see ``TaggedUnion`` elements.

Each configuration step returns a new object (as in Flink); invalid arguments raise when given: a key
selector or window assigner of the wrong kind (``TypeError``), a trigger that does not fit the assigner, a
negative allowed lateness (see ``WindowedStream``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from panes.datastream.key_types import check_same_key_types, key_type_of
from panes.functions.join import (
    FlatJoinFunction,
    as_co_group_function,
    as_flat_join_function,
    as_join_function,
)
from panes.time import DurationLike
from panes.windowing.assigners.base import WindowAssigner
from panes.windowing.cogroup import (
    CoGroupWindowFunction,
    FlatJoinCoGroupFunction,
    Input1Tagger,
    Input2Tagger,
    JoinCoGroupFunction,
    UnionKeySelector,
)
from panes.windowing.evictors import Evictor
from panes.windowing.triggers.base import Trigger
from panes.windowing.window_step import validate_window_configuration

if TYPE_CHECKING:
    from panes.datastream.stream import DataStream


def _key(key_selector: Any) -> Any:
    from panes.datastream.stream import _field_or_function_key

    if key_selector is None:
        raise TypeError("a join or co-group needs a key selector for each input (a callable, field name or position)")
    return _field_or_function_key(key_selector)


def _tagged(stream: DataStream, tagger: Any, name: str) -> DataStream:
    """``stream``'s elements tagged with their side, by a map with the input's parallelism (as in Flink)."""
    tagged = stream.map(tagger).name(name)
    parallelism = stream.transformation.parallelism
    return tagged if parallelism is None else tagged.set_parallelism(parallelism)


@dataclass(frozen=True)
class _WithWindow:
    """Both inputs, their key selectors and the window configuration; ``apply`` builds the pipeline."""

    input1: DataStream
    input2: DataStream
    key_selector1: Any
    key_selector2: Any
    assigner: WindowAssigner[Any, Any]
    trigger_: Trigger[Any, Any] | None = None
    evictor_: Evictor[Any, Any] | None = None
    allowed_lateness_: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.assigner, WindowAssigner):
            raise TypeError(f"expected a WindowAssigner, got {type(self.assigner).__name__}")

    def _check(self, trigger: Trigger[Any, Any] | None, lateness: DurationLike | None) -> int | None:
        checked = validate_window_configuration(
            self.assigner,
            trigger if trigger is not None else self.assigner.get_default_trigger(),
            0 if lateness is None else lateness,
        )
        return None if lateness is None else checked

    def trigger(self, trigger: Trigger[Any, Any]) -> Any:
        """Replace the assigner's default trigger (checked against the assigner now)."""
        self._check(trigger, self.allowed_lateness_)
        return replace(self, trigger_=trigger)

    def evictor(self, evictor: Evictor[Any, Any]) -> Any:
        """Evict elements before and/or after the function (see ``WindowedStream.evictor``)."""
        if not isinstance(evictor, Evictor):
            raise TypeError(f"expected an Evictor, got {type(evictor).__name__}")
        return replace(self, evictor_=evictor)

    def allowed_lateness(self, time: DurationLike) -> Any:
        """How long after the watermark passed a window's end it still accepts elements (and fires again)."""
        return replace(self, allowed_lateness_=self._check(self.trigger_, time))

    def get_allowed_lateness(self) -> int | None:
        """The allowed lateness in ms, or ``None`` when none was set (the window's default, 0)."""
        return self.allowed_lateness_

    def _co_group(self, function: Any, name: str, output_type: Any) -> DataStream:
        tagged1 = _tagged(self.input1, Input1Tagger(), f"{name}: tag input 1")
        tagged2 = _tagged(self.input2, Input2Tagger(), f"{name}: tag input 2")
        keyed = tagged1.union(tagged2).key_by(UnionKeySelector(self.key_selector1, self.key_selector2))
        windowed = keyed.window(self.assigner)
        if self.trigger_ is not None:
            windowed.trigger(self.trigger_)
        if self.evictor_ is not None:
            windowed.evictor(self.evictor_)
        if self.allowed_lateness_ is not None:
            windowed.allowed_lateness(self.allowed_lateness_)
        return windowed.apply(CoGroupWindowFunction(function), output_type=output_type).name(name)


class CoGroupWithWindow(_WithWindow):
    """A co-group with keys and a window; finish it with ``apply``."""

    def apply(self, function: Any, output_type: Any = None) -> DataStream:
        """Evaluate each key's window with a ``CoGroupFunction`` or a callable ``(first, second) -> iterable``
        (two lists, either may be empty). ``output_type`` declares the results' type (as for ``map``)."""
        return self._co_group(as_co_group_function(function), "Window(CoGroup)", output_type)


class JoinWithWindow(_WithWindow):
    """A join with keys and a window; finish it with ``apply`` (or ``flat_apply``)."""

    def apply(self, function: Any, output_type: Any = None) -> DataStream:
        """Join every pair of a key's window: a ``JoinFunction`` (one result per pair), a ``FlatJoinFunction``
        (an iterable per pair) or a callable ``(first, second) -> result`` (a ``JoinFunction``).
        ``output_type`` declares the results' type (as for ``map``)."""
        join = as_join_function(function)
        if isinstance(join, FlatJoinFunction):
            return self._co_group(FlatJoinCoGroupFunction(join), "Window(Join)", output_type)
        return self._co_group(JoinCoGroupFunction(join), "Window(Join)", output_type)

    def flat_apply(self, function: Any, output_type: Any = None) -> DataStream:
        """Join with a ``FlatJoinFunction`` or a callable ``(first, second) -> iterable`` (zero or more
        results per pair)."""
        return self._co_group(FlatJoinCoGroupFunction(as_flat_join_function(function)), "Window(Join)", output_type)


class _Streams:
    """``where`` / ``equal_to`` / ``window`` of ``JoinedStreams`` and ``CoGroupedStreams``."""

    _with_window: type[_WithWindow]

    def __init__(self, input1: DataStream, input2: DataStream) -> None:
        from panes.datastream.stream import DataStream

        for stream in (input1, input2):
            if not isinstance(stream, DataStream):
                raise TypeError(f"expected a DataStream, got {type(stream).__name__}")
        self.input1 = input1
        self.input2 = input2

    def where(self, key_selector: Any, key_type: Any = None) -> _Where:
        """The first input's key: a ``KeySelector``, a callable, or a field name or position; ``key_type``
        (a ``Types`` value) declares its type (``panes.datastream.key_types``)."""
        selector = _key(key_selector)
        return _Where(self, selector, key_type_of(self.input1.transformation, selector, key_type))


class _Where:
    def __init__(self, streams: _Streams, key_selector1: Any, key_type1: str | None) -> None:
        self._streams = streams
        self.key_selector1 = key_selector1
        self.key_type1 = key_type1

    def equal_to(self, key_selector: Any, key_type: Any = None) -> _EqualTo:
        """The second input's key (its keys must compare equal to the first input's to meet them). Raises
        ``ValueError`` when both keys' types are known (declared, or fields of typed streams) and differ."""
        selector = _key(key_selector)
        key_type2 = key_type_of(self._streams.input2.transformation, selector, key_type)
        check_same_key_types(self.key_type1, key_type2, "where(...).equal_to(...)")
        return _EqualTo(self._streams, self.key_selector1, selector)


class _EqualTo:
    def __init__(self, streams: _Streams, key_selector1: Any, key_selector2: Any) -> None:
        self._streams = streams
        self.key_selector1 = key_selector1
        self.key_selector2 = key_selector2

    def window(self, assigner: WindowAssigner[Any, Any]) -> Any:
        """The windows both inputs' elements are grouped in, per key."""
        streams = self._streams
        return streams._with_window(streams.input1, streams.input2, self.key_selector1, self.key_selector2, assigner)


class CoGroupedStreams(_Streams):
    """Two streams to co-group per key and window (``a.co_group(b)``)."""

    _with_window = CoGroupWithWindow


class JoinedStreams(_Streams):
    """Two streams to join per key and window (``a.join(b)``)."""

    _with_window = JoinWithWindow
