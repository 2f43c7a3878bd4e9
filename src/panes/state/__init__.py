"""Keyed state: descriptors, the state interfaces user code sees, and the heap state backend.

State is scoped to the current key and a namespace (a window for window state, ``VOID_NAMESPACE``
otherwise), as in Flink.
"""

from panes.state.api import (
    AggregatingState,
    AppendingState,
    KeyedStateStore,
    ListState,
    MapState,
    MergingState,
    ReducingState,
    State,
    ValueState,
)
from panes.state.backend import VOID_NAMESPACE, HeapKeyedStateBackend
from panes.state.broadcast import BroadcastState, ReadOnlyBroadcastState
from panes.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from panes.state.ttl import StateTtlConfig, TtlValue

__all__ = [
    "VOID_NAMESPACE",
    "AggregatingState",
    "AggregatingStateDescriptor",
    "AppendingState",
    "BroadcastState",
    "HeapKeyedStateBackend",
    "KeyedStateStore",
    "ListState",
    "ListStateDescriptor",
    "MapState",
    "MapStateDescriptor",
    "MergingState",
    "ReadOnlyBroadcastState",
    "ReducingState",
    "ReducingStateDescriptor",
    "State",
    "StateDescriptor",
    "StateTtlConfig",
    "TtlValue",
    "ValueState",
    "ValueStateDescriptor",
]
