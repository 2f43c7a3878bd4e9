"""State descriptors: the name and kind of a piece of keyed state (Flink's ``*StateDescriptor``).

Two descriptors with the same name refer to the same state; registering one name with two kinds raises
``ValueError``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from panes.functions.base import (
    AggregateFunction,
    ReduceFunction,
    as_aggregate_function,
    as_reduce_function,
)
from panes.types import RecordType


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError("a state descriptor needs a non-empty string name")


@dataclass(frozen=True)
class StateDescriptor:
    """Base of all state descriptors. ``name`` identifies the state within an operator."""

    name: str
    type_info: Any = field(default=None, compare=False)
    ttl_config: Any = field(default=None, init=False, compare=False, repr=False)
    """The state's ``StateTtlConfig`` once :meth:`enable_time_to_live` was called (``None``: no TTL)."""

    kind = "state"

    def __post_init__(self) -> None:
        _check_name(self.name)

    def get_name(self) -> str:
        return self.name

    def enable_time_to_live(self, ttl_config: Any) -> None:
        """Give the state a time-to-live (``panes.state.ttl``): its values expire ``ttl`` ms of processing time
        after their last access. A config whose update type is ``Disabled`` turns TTL off."""
        from panes.state.ttl import StateTtlConfig

        if not isinstance(ttl_config, StateTtlConfig):
            raise TypeError(
                f"enable_time_to_live needs a StateTtlConfig (StateTtlConfig.new_builder(ttl).build()), "
                f"got {type(ttl_config).__name__}"
            )
        object.__setattr__(self, "ttl_config", ttl_config if ttl_config.is_enabled() else None)


@dataclass(frozen=True)
class ValueStateDescriptor(StateDescriptor):
    """A single value per key and namespace; ``value()`` is ``None`` until set."""

    kind = "value"


@dataclass(frozen=True)
class ListStateDescriptor(StateDescriptor):
    """A list of values per key and namespace; mergeable (lists concatenate, target first)."""

    kind = "list"


@dataclass(frozen=True, init=False)
class MapStateDescriptor(StateDescriptor):
    """A map per key and namespace: ``MapStateDescriptor(name, key_type_info, value_type_info)`` as PyFlink
    spells it. Both types are optional and must be type declarations (``Types``..., ``TypeError`` otherwise);
    keys and values stay Python objects in state."""

    key_type_info: Any = field(default=None, compare=False)
    value_type_info: Any = field(default=None, compare=False)

    kind = "map"

    def __init__(self, name: str, key_type_info: Any = None, value_type_info: Any = None) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "type_info", None)
        object.__setattr__(self, "key_type_info", key_type_info)
        object.__setattr__(self, "value_type_info", value_type_info)
        _check_name(name)
        for declared in (key_type_info, value_type_info):
            if declared is not None:
                RecordType.of(declared)  # TypeError for something that is not a type declaration


@dataclass(frozen=True, init=False)
class ReducingStateDescriptor(StateDescriptor):
    """One value per key and namespace, combined on ``add`` with ``reduce_function``; mergeable."""

    reduce_function: ReduceFunction[Any] = field(default=None, compare=False)  # type: ignore[arg-type]

    kind = "reducing"

    def __init__(
        self, name: str, reduce_function: ReduceFunction[Any] | Callable[[Any, Any], Any], type_info: Any = None
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "type_info", type_info)
        object.__setattr__(self, "reduce_function", as_reduce_function(reduce_function))
        _check_name(name)


@dataclass(frozen=True, init=False)
class AggregatingStateDescriptor(StateDescriptor):
    """An accumulator per key and namespace, fed by ``agg_function``; ``get()`` is its result; mergeable."""

    agg_function: AggregateFunction[Any, Any, Any] = field(default=None, compare=False)  # type: ignore[arg-type]

    kind = "aggregating"

    def __init__(self, name: str, agg_function: AggregateFunction[Any, Any, Any], type_info: Any = None) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "type_info", type_info)
        object.__setattr__(self, "agg_function", as_aggregate_function(agg_function))
        _check_name(name)
