"""``ConnectedStreams``: two streams processed by one co-function, keyed alike after ``key_by``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from panes.datastream.key_types import check_same_key_types
from panes.datastream.plan import TwoInputTransformation
from panes.errors import UnsupportedOperationError
from panes.functions.stream import (
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedCoProcessFunction,
)
from panes.operators.two_input import CoProcessOperator, CoStreamFlatMap, CoStreamMap, KeyedCoProcessOperator

if TYPE_CHECKING:
    from panes.datastream.stream import DataStream


class ConnectedStreams:
    """Two streams processed by one co-function (``first``/``second``; PyFlink calls them ``stream1``/``stream2``)."""

    def __init__(self, first: DataStream, second: DataStream) -> None:
        self.first = first
        self.second = second
        self.env = first.env

    @property
    def stream1(self) -> DataStream:
        return self.first

    @property
    def stream2(self) -> DataStream:
        return self.second

    def _keys(self) -> tuple[Callable[[Any], Any] | None, Callable[[Any], Any] | None]:
        from panes.datastream.stream import KeyedStream

        k1 = self.first.key_selector if isinstance(self.first, KeyedStream) else None
        k2 = self.second.key_selector if isinstance(self.second, KeyedStream) else None
        if (k1 is None) != (k2 is None):
            raise ValueError("connect either two keyed streams or two non-keyed streams (key both with key_by)")
        if isinstance(self.first, KeyedStream) and isinstance(self.second, KeyedStream):
            check_same_key_types(
                self.first.key_type, self.second.key_type, "connected keyed streams", UnsupportedOperationError
            )
        return k1, k2

    def key_by(self, key_selector1: Any, key_selector2: Any, key_type: Any = None) -> ConnectedStreams:
        """Key both inputs (by selectors that yield comparable keys; a field name or position also works).
        ``key_type`` is PyFlink's declaration of the common key type (keys stay Python values; the type is what
        ``panes.datastream.key_types`` compares). Keying streams that are already keyed re-keys them."""
        return ConnectedStreams(self.first.key_by(key_selector1, key_type), self.second.key_by(key_selector2, key_type))

    def _two_input(
        self,
        name: str,
        op_kind: str,
        function: Any,
        make_operator: Callable[..., Any],
        output_type: Any = None,
    ) -> DataStream:
        """The co-operator ``make_operator(function copy, key_selector1, key_selector2)`` over both inputs: every
        connected-stream operation is built here, so keyed inputs always reach the operator with their keys."""
        from panes.datastream.stream import DataStream, declared_type, instance_copy

        k1, k2 = self._keys()
        transformation = TwoInputTransformation(
            name=name,
            inputs=(self.first.transformation, self.second.transformation),
            op_kind=op_kind,
            spec=function,
            operator_factory=lambda: make_operator(instance_copy(function), k1, k2),
            key_selector1=k1,
            key_selector2=k2,
            output_type=declared_type(output_type),
        )
        return DataStream(self.env, transformation)

    def is_keyed(self) -> bool:
        """Whether both inputs are keyed (``key_by``), which gives the co-function keyed state and timers."""
        return self._keys()[0] is not None

    def map(self, func: CoMapFunction[Any, Any, Any], output_type: Any = None) -> DataStream:
        """``func.map1`` for each element of the first input, ``func.map2`` for the second; one result each."""
        if not isinstance(func, CoMapFunction):
            raise TypeError(f"ConnectedStreams.map needs a CoMapFunction, got {type(func).__name__}")
        return self._two_input("Co-Map", "co_map", func, CoStreamMap, output_type)

    def flat_map(self, func: CoFlatMapFunction[Any, Any, Any], output_type: Any = None) -> DataStream:
        """``func.flat_map1`` / ``func.flat_map2`` per element; each returns any number of results."""
        if not isinstance(func, CoFlatMapFunction):
            raise TypeError(f"ConnectedStreams.flat_map needs a CoFlatMapFunction, got {type(func).__name__}")
        return self._two_input("Co-FlatMap", "co_flat_map", func, CoStreamFlatMap, output_type)

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        """A ``CoProcessFunction`` for non-keyed inputs; for keyed inputs a ``KeyedCoProcessFunction`` (or a
        ``CoProcessFunction``, as Java and PyFlink accept), with keyed state and timers."""
        if self.is_keyed():
            if not isinstance(func, (KeyedCoProcessFunction, CoProcessFunction)):
                raise TypeError(f"keyed connected streams need a KeyedCoProcessFunction, got {type(func).__name__}")
            return self._two_input("KeyedCo-Process", "keyed_co_process", func, KeyedCoProcessOperator, output_type)
        if not isinstance(func, CoProcessFunction):
            raise TypeError(f"non-keyed connected streams need a CoProcessFunction, got {type(func).__name__}")
        return self._two_input("Co-Process", "co_process", func, CoProcessOperator, output_type)
