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
from panes.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)

__all__ = [
    "VOID_NAMESPACE",
    "AggregatingState",
    "AggregatingStateDescriptor",
    "AppendingState",
    "HeapKeyedStateBackend",
    "KeyedStateStore",
    "ListState",
    "ListStateDescriptor",
    "MapState",
    "MapStateDescriptor",
    "MergingState",
    "ReducingState",
    "ReducingStateDescriptor",
    "State",
    "StateDescriptor",
    "ValueState",
    "ValueStateDescriptor",
]
