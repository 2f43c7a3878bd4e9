"""Flink's timer queue: a binary min-heap on the timer timestamp, 1-based, with de-duplication.

Timers with equal timestamps leave the queue in the order this exact heap yields them (Flink's
``HeapPriorityQueue``/``HeapPriorityQueueSet`` algorithms: sift-up on insert; on removal the last element
moves into the hole and is sifted down, then up). Reproducing the algorithm, not just "a heap", makes
the firing order of same-time timers across keys equal to Flink's. For the same reason a heap that stores
its changes records its operations (:meth:`TimerHeap.track_operations`), not its contents: replaying them on
the restored heap rebuilds the identical array.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

_ADD, _REMOVE = 0, 1
_POLL = (2,)


class InternalTimer:
    """A timer for ``key`` in ``namespace`` at ``timestamp``. Equal when all three are equal."""

    __slots__ = ("_index", "key", "namespace", "timestamp")

    def __init__(self, timestamp: int, key: Any, namespace: Any) -> None:
        self.timestamp = timestamp
        self.key = key
        self.namespace = namespace
        self._index = 0

    def identity(self) -> tuple[int, Any, Any]:
        return (self.timestamp, self.key, self.namespace)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, InternalTimer) and self.identity() == other.identity()

    def __hash__(self) -> int:
        return hash(self.identity())

    def __repr__(self) -> str:
        return f"InternalTimer(timestamp={self.timestamp}, key={self.key!r}, namespace={self.namespace!r})"


class TimerHeap:
    """A set of timers ordered by timestamp; ``add`` of an existing (timestamp, key, namespace) is a no-op."""

    def __init__(self) -> None:
        self._queue: list[InternalTimer | None] = [None]
        self._size = 0
        self._members: dict[tuple[int, Any, Any], InternalTimer] = {}
        self._owned: dict[tuple[Any, Any], int] = {}
        """Per ``(key, namespace)``, how many timers it has."""
        self.operations: list[tuple[Any, ...]] | None = None
        """The adds, removes and polls since the last :meth:`take_operations` (``None``: not recorded)."""

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[InternalTimer]:
        """The timers in heap-array order (not sorted)."""
        for index in range(1, self._size + 1):
            timer = self._queue[index]
            assert timer is not None
            yield timer

    def __contains__(self, identity: tuple[int, Any, Any]) -> bool:
        return identity in self._members

    def count_of(self, key: Any, namespace: Any) -> int:
        """How many timers ``key`` has for ``namespace`` (0 when none)."""
        return self._owned.get((key, namespace), 0)

    def _owned_less(self, key: Any, namespace: Any) -> None:
        owner = (key, namespace)
        left = self._owned[owner] - 1
        if left:
            self._owned[owner] = left
        else:
            del self._owned[owner]

    def peek(self) -> InternalTimer | None:
        return self._queue[1] if self._size else None

    def add(self, timestamp: int, key: Any, namespace: Any) -> bool:
        """Add a timer; returns ``True`` when it was not there before."""
        identity = (timestamp, key, namespace)
        if identity in self._members:
            return False
        timer = InternalTimer(timestamp, key, namespace)
        if self.operations is not None:
            self.operations.append((_ADD, timestamp, key, namespace))
        self._members[identity] = timer
        owner = (key, namespace)
        self._owned[owner] = self._owned.get(owner, 0) + 1
        self._size += 1
        if self._size >= len(self._queue):
            self._queue.append(None)
        self._move(timer, self._size)
        self._sift_up(self._size)
        return True

    def remove(self, timestamp: int, key: Any, namespace: Any) -> bool:
        """Remove a timer if present; returns whether it was there."""
        timer = self._members.pop((timestamp, key, namespace), None)
        if timer is None:
            return False
        if self.operations is not None:
            self.operations.append((_REMOVE, timestamp, key, namespace))
        self._owned_less(key, namespace)
        self._remove_at(timer._index)
        return True

    def poll(self) -> InternalTimer | None:
        if not self._size:
            return None
        head = self._queue[1]
        assert head is not None
        if self.operations is not None:
            self.operations.append(_POLL)
        del self._members[head.identity()]
        owner = (head.key, head.namespace)
        owned = self._owned
        left = owned[owner] - 1
        if left:
            owned[owner] = left
        else:
            del owned[owner]
        self._remove_at(1)
        return head

    # -- Flink's heap algorithm ------------------------------------------------------------------------

    def _move(self, timer: InternalTimer, index: int) -> None:
        self._queue[index] = timer
        timer._index = index

    def _remove_at(self, index: int) -> None:
        queue = self._queue
        last_index = self._size
        if index != last_index:
            last = queue[last_index]
            assert last is not None
            self._move(last, index)
            self._sift_down(index)
            if queue[index] is last:
                self._sift_up(index)
        queue[last_index] = None
        self._size -= 1

    def _sift_up(self, index: int) -> None:
        queue: list[Any] = self._queue  # slots [1, size] hold timers
        current = queue[index]
        time = current.timestamp
        parent_index = index >> 1
        while parent_index > 0:
            parent = queue[parent_index]
            if not time < parent.timestamp:
                break
            queue[index] = parent
            parent._index = index
            index = parent_index
            parent_index >>= 1
        queue[index] = current
        current._index = index

    def _sift_down(self, index: int) -> None:
        queue: list[Any] = self._queue  # slots [1, size] hold timers
        size = self._size
        current = queue[index]
        time = current.timestamp
        child = index << 1
        while child <= size:
            smaller = queue[child]
            if child < size and queue[child + 1].timestamp < smaller.timestamp:  # the second child, when smaller
                child += 1
                smaller = queue[child]
            if not smaller.timestamp < time:
                break
            queue[index] = smaller
            smaller._index = index
            index = child
            child = index << 1
        queue[index] = current
        current._index = index

    # -- snapshots ---------------------------------------------------------------------------------------

    def snapshot(self) -> list[tuple[int, Any, Any]]:
        """The timers in heap-array order; :meth:`restore` rebuilds the identical heap from it."""
        return [timer.identity() for timer in self]

    def restore(self, timers: list[tuple[int, Any, Any]], operations: Iterable[tuple[Any, ...]] = ()) -> None:
        """Rebuild the heap :meth:`snapshot` saw, then replay ``operations`` (:meth:`take_operations`) on it."""
        tracking = self.operations is not None
        self.__init__()  # type: ignore[misc]
        for timestamp, key, namespace in timers:
            self.add(timestamp, key, namespace)
        for operation in operations:
            if operation[0] == _ADD:
                self.add(operation[1], operation[2], operation[3])
            elif operation[0] == _REMOVE:
                self.remove(operation[1], operation[2], operation[3])
            else:
                self.poll()
        if tracking:
            self.operations = []

    def track_operations(self) -> None:
        """Record adds, removes and polls from now on (see :meth:`take_operations`)."""
        if self.operations is None:
            self.operations = []

    def take_operations(self) -> list[tuple[Any, ...]]:
        """The operations since the last call; replayed in order by :meth:`restore` they turn the heap of that
        moment into this one."""
        if self.operations is None:
            raise RuntimeError("operations are not recorded: call track_operations() first")
        operations, self.operations = self.operations, []
        return operations
