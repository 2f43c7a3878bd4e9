"""Partitioners: which downstream instances a record goes to (Flink's ``StreamPartitioner`` family).

Each sending instance owns its own partitioner copy (``copy()``), since round-robin partitioners keep a
position. ``select(value, channels)`` returns the target instance indexes in ``[0, channels)``.
"""

from __future__ import annotations

import copy
import random
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from panes.errors import UserFunctionError
from panes.keygroups import assign_key_to_parallel_operator
from panes.operators.keys import extract_key


class StreamPartitioner(ABC):
    name = "partitioner"

    @abstractmethod
    def select(self, value: Any, channels: int) -> list[int]: ...

    def setup(self, sender_index: int, sender_parallelism: int) -> None:
        """Called once per sending instance before the first record."""

    def copy(self) -> StreamPartitioner:
        return copy.copy(self)

    def snapshot_state(self) -> dict[str, Any]:
        """The per-sender position (the ``_``-prefixed attributes set in ``setup``), for job snapshots."""
        return {name: value for name, value in vars(self).items() if name.startswith("_")}

    def restore_state(self, state: dict[str, Any]) -> None:
        vars(self).update(state)

    def is_broadcast(self) -> bool:
        return False

    def __repr__(self) -> str:
        return self.name.upper()


class ForwardPartitioner(StreamPartitioner):
    """Instance ``i`` sends to instance ``i`` (both sides must have the same parallelism)."""

    name = "forward"

    def setup(self, sender_index: int, sender_parallelism: int) -> None:
        self._index = sender_index

    def select(self, value: Any, channels: int) -> list[int]:
        return [self._index % channels]


class RebalancePartitioner(StreamPartitioner):
    """Round-robin over all downstream instances, starting at a per-sender offset."""

    name = "rebalance"

    def setup(self, sender_index: int, sender_parallelism: int) -> None:
        self._next = sender_index

    def select(self, value: Any, channels: int) -> list[int]:
        self._next = (self._next + 1) % channels
        return [self._next]


class RescalePartitioner(StreamPartitioner):
    """Round-robin over the downstream instances local to the sender (a subset when parallelisms differ)."""

    name = "rescale"

    def setup(self, sender_index: int, sender_parallelism: int) -> None:
        self._sender = sender_index
        self._senders = sender_parallelism
        self._position = -1

    def select(self, value: Any, channels: int) -> list[int]:
        if channels >= self._senders:
            share = [c for c in range(channels) if c * self._senders // channels == self._sender]
        else:
            share = [self._sender * channels // self._senders]
        self._position = (self._position + 1) % len(share)
        return [share[self._position]]


class ShufflePartitioner(StreamPartitioner):
    """A uniformly random instance (seeded per sender, so local runs are repeatable)."""

    name = "shuffle"

    def setup(self, sender_index: int, sender_parallelism: int) -> None:
        self._random = random.Random(sender_index)

    def select(self, value: Any, channels: int) -> list[int]:
        return [self._random.randrange(channels)]


class BroadcastPartitioner(StreamPartitioner):
    """Every downstream instance gets every record."""

    name = "broadcast"

    def select(self, value: Any, channels: int) -> list[int]:
        return list(range(channels))

    def is_broadcast(self) -> bool:
        return True


class GlobalPartitioner(StreamPartitioner):
    """Everything to instance 0."""

    name = "global"

    def select(self, value: Any, channels: int) -> list[int]:
        return [0]


class KeyGroupStreamPartitioner(StreamPartitioner):
    """By key: the instance that owns the key's key group (``key_by``)."""

    name = "hash"

    def __init__(self, key_selector: Callable[[Any], Any], max_parallelism: int) -> None:
        self.key_selector = key_selector
        self.max_parallelism = max_parallelism

    def select(self, value: Any, channels: int) -> list[int]:
        """The one instance of ``channels`` that owns ``value``'s key (its key is extracted, and refused when
        missing, also where there is one instance to choose, which needs no hash)."""
        key = extract_key(self.key_selector, value)
        if channels == 1:
            return [0]
        return [assign_key_to_parallel_operator(key, self.max_parallelism, channels)]


class CustomPartitionerWrapper(StreamPartitioner):
    """``partition_custom(partitioner, key_selector)``: ``partitioner(key, channels)`` picks the instance (a
    partitioner that raises is a ``UserFunctionError``)."""

    name = "custom"

    def __init__(self, partitioner: Any, key_selector: Callable[[Any], Any]) -> None:
        self.partitioner = partitioner
        self.key_selector = key_selector

    def select(self, value: Any, channels: int) -> list[int]:
        key = extract_key(self.key_selector, value)
        method = getattr(self.partitioner, "partition", None)
        try:
            target = method(key, channels) if method is not None else self.partitioner(key, channels)
        except Exception as error:
            raise UserFunctionError(error, function="custom partitioner") from error
        if not 0 <= target < channels:
            raise ValueError(f"custom partitioner returned {target}; it must be in [0, {channels})")
        return [int(target)]
