"""``BroadcastStream`` and ``BroadcastConnectedStream``: a stream whose every element reaches every parallel
instance of the operator it is connected to, with broadcast state (Flink's broadcast state pattern).

``stream.broadcast(MapStateDescriptor(...), ...)`` gives a :class:`BroadcastStream`; ``other.connect(it)`` (keyed
or not) gives a :class:`BroadcastConnectedStream`, whose ``process`` takes a ``KeyedBroadcastProcessFunction``
when ``other`` is keyed and a ``BroadcastProcessFunction`` otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from panes.datastream.partitioning import BroadcastPartitioner
from panes.datastream.plan import PartitionTransformation, TwoInputTransformation
from panes.functions.broadcast import BroadcastProcessFunction, KeyedBroadcastProcessFunction
from panes.operators.broadcast import (
    CoBroadcastWithKeyedOperator,
    CoBroadcastWithNonKeyedOperator,
    check_broadcast_descriptors,
)
from panes.state.descriptors import MapStateDescriptor

if TYPE_CHECKING:
    from panes.datastream.stream import DataStream


@dataclass(frozen=True)
class BroadcastSpec:
    """What a broadcast step computes: ``function`` over input 0 (keyed when ``keyed``) and the broadcast input
    ``broadcast_input`` (1), with broadcast states ``descriptors``. Runners read ``broadcast_input`` to send every
    element of that input to every instance (every shard, on Spark)."""

    function: Any
    descriptors: tuple[MapStateDescriptor, ...]
    keyed: bool
    broadcast_input: int = 1


class BroadcastStream:
    """A stream broadcast to every instance of the operator it is connected to, with broadcast state."""

    def __init__(self, stream: DataStream, descriptors: Sequence[MapStateDescriptor]) -> None:
        self.env = stream.env
        self.descriptors = check_broadcast_descriptors(descriptors)
        self.transformation = PartitionTransformation(
            name="broadcast", inputs=(stream.transformation,), partitioner=BroadcastPartitioner()
        )

    def get_broadcast_state_descriptors(self) -> tuple[MapStateDescriptor, ...]:
        return self.descriptors


class BroadcastConnectedStream:
    """A (keyed or non-keyed) stream connected with a :class:`BroadcastStream`."""

    def __init__(self, stream: DataStream, broadcast: BroadcastStream) -> None:
        self.non_broadcast_stream = stream
        self.broadcast_stream = broadcast
        self.env = stream.env

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        """Process both inputs with ``func``: a ``KeyedBroadcastProcessFunction`` when the non-broadcast stream is
        keyed, a ``BroadcastProcessFunction`` otherwise (``TypeError`` when the kind does not match)."""
        from panes.datastream.stream import DataStream, KeyedStream, declared_type, instance_copy

        stream = self.non_broadcast_stream
        descriptors = self.broadcast_stream.descriptors
        factory: Callable[[], Any]
        if isinstance(stream, KeyedStream):
            if not isinstance(func, KeyedBroadcastProcessFunction):
                raise TypeError(
                    "a keyed stream connected with a broadcast stream needs a KeyedBroadcastProcessFunction, "
                    f"got {type(func).__name__}"
                )
            key = stream.key_selector

            def keyed_factory() -> CoBroadcastWithKeyedOperator:
                return CoBroadcastWithKeyedOperator(instance_copy(func), descriptors, key)

            name, op_kind, factory, k1 = "Co-Process-Broadcast-Keyed", "keyed_broadcast_process", keyed_factory, key
        else:
            if not isinstance(func, BroadcastProcessFunction):
                raise TypeError(
                    "a non-keyed stream connected with a broadcast stream needs a BroadcastProcessFunction, "
                    f"got {type(func).__name__}"
                )

            def factory_non_keyed() -> CoBroadcastWithNonKeyedOperator:
                return CoBroadcastWithNonKeyedOperator(instance_copy(func), descriptors)

            name, op_kind, factory, k1 = "Co-Process-Broadcast", "broadcast_process", factory_non_keyed, None
        transformation = TwoInputTransformation(
            name=name,
            inputs=(stream.transformation, self.broadcast_stream.transformation),
            op_kind=op_kind,
            spec=BroadcastSpec(func, descriptors, k1 is not None),
            operator_factory=factory,
            key_selector1=k1,
            key_selector2=None,
            output_type=declared_type(output_type),
        )
        return DataStream(self.env, transformation)
