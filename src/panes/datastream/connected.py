"""``ConnectedStreams``: two streams processed by one co-function, keyed alike after ``key_by``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from panes.datastream.plan import TwoInputTransformation
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
    def __init__(self, first: DataStream, second: DataStream) -> None:
        self.first = first
        self.second = second
        self.env = first.env

    def _keys(self) -> tuple[Callable[[Any], Any] | None, Callable[[Any], Any] | None]:
        from panes.datastream.stream import KeyedStream

        k1 = self.first.key_selector if isinstance(self.first, KeyedStream) else None
        k2 = self.second.key_selector if isinstance(self.second, KeyedStream) else None
        if (k1 is None) != (k2 is None):
            raise ValueError("connect either two keyed streams or two non-keyed streams (key both with key_by)")
        return k1, k2

    def key_by(self, key_selector1: Any, key_selector2: Any) -> ConnectedStreams:
        """Key both inputs (by selectors that yield comparable keys)."""
        return ConnectedStreams(self.first.key_by(key_selector1), self.second.key_by(key_selector2))

    def _two_input(
        self, name: str, op_kind: str, spec: Any, factory: Callable[[], Any], output_type: Any = None
    ) -> DataStream:
        from panes.datastream.stream import DataStream, declared_type

        k1, k2 = self._keys()
        transformation = TwoInputTransformation(
            name=name,
            inputs=(self.first.transformation, self.second.transformation),
            op_kind=op_kind,
            spec=spec,
            operator_factory=factory,
            key_selector1=k1,
            key_selector2=k2,
            output_type=declared_type(output_type),
        )
        return DataStream(self.env, transformation)

    def map(self, func: CoMapFunction[Any, Any, Any], output_type: Any = None) -> DataStream:
        from panes.datastream.stream import instance_copy

        if not isinstance(func, CoMapFunction):
            raise TypeError(f"ConnectedStreams.map needs a CoMapFunction, got {type(func).__name__}")
        return self._two_input("Co-Map", "co_map", func, lambda: CoStreamMap(instance_copy(func)), output_type)

    def flat_map(self, func: CoFlatMapFunction[Any, Any, Any], output_type: Any = None) -> DataStream:
        from panes.datastream.stream import instance_copy

        if not isinstance(func, CoFlatMapFunction):
            raise TypeError(f"ConnectedStreams.flat_map needs a CoFlatMapFunction, got {type(func).__name__}")
        k1, k2 = self._keys()
        return self._two_input(
            "Co-FlatMap", "co_flat_map", func, lambda: CoStreamFlatMap(instance_copy(func), k1, k2), output_type
        )

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        """``CoProcessFunction`` for non-keyed inputs, ``KeyedCoProcessFunction`` for keyed ones."""
        from panes.datastream.stream import instance_copy

        k1, k2 = self._keys()
        if k1 is not None:
            if not isinstance(func, KeyedCoProcessFunction):
                raise TypeError(f"keyed connected streams need a KeyedCoProcessFunction, got {type(func).__name__}")
            assert k2 is not None
            return self._two_input(
                "KeyedCo-Process",
                "keyed_co_process",
                func,
                lambda: KeyedCoProcessOperator(instance_copy(func), k1, k2),
                output_type,
            )
        if not isinstance(func, CoProcessFunction):
            raise TypeError(f"non-keyed connected streams need a CoProcessFunction, got {type(func).__name__}")
        return self._two_input(
            "Co-Process", "co_process", func, lambda: CoProcessOperator(instance_copy(func)), output_type
        )
