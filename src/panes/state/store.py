"""A ``KeyedStateStore`` over the heap backend, bound to one namespace (a window, or none)."""

from __future__ import annotations

from typing import Any

from panes.state.api import AggregatingState, KeyedStateStore, ListState, MapState, ReducingState, ValueState
from panes.state.backend import VOID_NAMESPACE, HeapKeyedStateBackend
from panes.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)


def _check(descriptor: Any, expected: type[StateDescriptor]) -> None:
    if not isinstance(descriptor, expected):
        raise TypeError(f"expected a {expected.__name__}, got {type(descriptor).__name__}")


class NamespacedStateStore(KeyedStateStore):
    """Keyed state of the backend's current key within ``namespace`` (``VOID_NAMESPACE`` by default)."""

    def __init__(self, backend: HeapKeyedStateBackend, namespace: Any = VOID_NAMESPACE) -> None:
        self._backend = backend
        self.namespace = namespace

    def get_state(self, descriptor: ValueStateDescriptor) -> ValueState[Any]:
        _check(descriptor, ValueStateDescriptor)
        state: ValueState[Any] = self._backend.get_partitioned_state(self.namespace, descriptor)
        return state

    def get_list_state(self, descriptor: ListStateDescriptor) -> ListState[Any]:
        _check(descriptor, ListStateDescriptor)
        state: ListState[Any] = self._backend.get_partitioned_state(self.namespace, descriptor)
        return state

    def get_map_state(self, descriptor: MapStateDescriptor) -> MapState[Any, Any]:
        _check(descriptor, MapStateDescriptor)
        state: MapState[Any, Any] = self._backend.get_partitioned_state(self.namespace, descriptor)
        return state

    def get_reducing_state(self, descriptor: ReducingStateDescriptor) -> ReducingState[Any]:
        _check(descriptor, ReducingStateDescriptor)
        state: ReducingState[Any] = self._backend.get_partitioned_state(self.namespace, descriptor)
        return state

    def get_aggregating_state(self, descriptor: AggregatingStateDescriptor) -> AggregatingState[Any, Any]:
        _check(descriptor, AggregatingStateDescriptor)
        state: AggregatingState[Any, Any] = self._backend.get_partitioned_state(self.namespace, descriptor)
        return state


class MergingWindowStateStore(KeyedStateStore):
    """Per-window state is not available for merging windows: every access raises, as in Flink."""

    def _refuse(self) -> Any:
        from panes.errors import UnsupportedOperationError

        raise UnsupportedOperationError("Per-window state is not allowed when using merging windows.")

    def get_state(self, descriptor: ValueStateDescriptor) -> ValueState[Any]:
        return self._refuse()  # type: ignore[no-any-return]

    def get_list_state(self, descriptor: ListStateDescriptor) -> ListState[Any]:
        return self._refuse()  # type: ignore[no-any-return]

    def get_map_state(self, descriptor: MapStateDescriptor) -> MapState[Any, Any]:
        return self._refuse()  # type: ignore[no-any-return]

    def get_reducing_state(self, descriptor: ReducingStateDescriptor) -> ReducingState[Any]:
        return self._refuse()  # type: ignore[no-any-return]

    def get_aggregating_state(self, descriptor: AggregatingStateDescriptor) -> AggregatingState[Any, Any]:
        return self._refuse()  # type: ignore[no-any-return]
