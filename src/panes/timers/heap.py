"""Flink's timer queue: a binary min-heap on the timer timestamp, 1-based, with de-duplication.

Timers with equal timestamps leave the queue in the order this exact heap yields them (Flink's
``HeapPriorityQueue``/``HeapPriorityQueueSet`` algorithms: sift-up on insert; on removal the last element
moves into the hole and is sifted down, then up). Reproducing the algorithm, not just "a heap", makes
the firing order of same-time timers across keys equal to Flink's. For the same reason a heap that stores
its changes records its operations (:meth:`TimerHeap.track_operations`), not its contents: replaying them on
the restored heap rebuilds the identical array.

:meth:`TimerHeap.poll_all_due` polls every due timer in one loop (a timer pass whose callbacks neither add nor
remove queued timers): the same timers in the same order, and the same array after, as polling one by one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

_ADD, _REMOVE = 0, 1
_POLL = (2,)
_AFTER_ALL = 1 << 64
"""Later than every timestamp (a Java ``long``): what :meth:`TimerHeap.poll_all_due` puts past the heap's end."""


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
    """A set of timers ordered by timestamp; ``add`` of an existing (timestamp, key, namespace) is a no-op.

    The array holds the timers in slots ``[1, size]``; a parallel array holds their timestamps, which is what the
    sifts compare (reading an ``int`` from a list, not an attribute of each timer). The timers are also indexed
    by ``(key, namespace)`` and then timestamp, which answers membership, removal and :meth:`count_of` alike."""

    def __init__(self) -> None:
        self._queue: list[InternalTimer | None] = [None]
        self._times: list[int] = [0]
        """``_times[i]`` is ``_queue[i].timestamp`` for every slot in ``[1, size]``."""
        self._size = 0
        self._members: dict[tuple[Any, Any], dict[int, InternalTimer]] = {}
        """Per ``(key, namespace)``, its timers by timestamp (never empty)."""
        self.operations: list[tuple[Any, ...]] | None = None
        """The adds, removes and polls since the last :meth:`take_operations` (``None``: not recorded)."""
        self._stale = False
        """Whether a timer's ``_index`` may be out of date (after :meth:`poll_all_due`, which does not keep the
        positions of the timers it moves); :meth:`remove`, the one reader of positions, renumbers them first."""

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[InternalTimer]:
        """The timers in heap-array order (not sorted)."""
        for index in range(1, self._size + 1):
            timer = self._queue[index]
            assert timer is not None
            yield timer

    def __contains__(self, identity: tuple[int, Any, Any]) -> bool:
        timestamp, key, namespace = identity
        own = self._members.get((key, namespace))
        return own is not None and timestamp in own

    def count_of(self, key: Any, namespace: Any) -> int:
        """How many timers ``key`` has for ``namespace`` (0 when none)."""
        own = self._members.get((key, namespace))
        return 0 if own is None else len(own)

    def peek(self) -> InternalTimer | None:
        return self._queue[1] if self._size else None

    def add(self, timestamp: int, key: Any, namespace: Any) -> bool:
        """Add a timer; returns ``True`` when it was not there before."""
        own = self._members.setdefault((key, namespace), {})  # one look-up (an owner's key hashes its window)
        if timestamp in own:
            return False
        timer = own[timestamp] = InternalTimer(timestamp, key, namespace)
        if self.operations is not None:
            self.operations.append((_ADD, timestamp, key, namespace))
        size = self._size = self._size + 1
        queue, times = self._queue, self._times
        if size == len(queue):  # the lists grow together (poll_all_due leaves ``times`` as long as it was)
            queue.append(timer)
            times.append(timestamp)
        else:
            queue[size] = timer
            times[size] = timestamp
        if size > 1 and timestamp < times[size >> 1]:
            self._sift_up(size)
        else:  # not below its parent: where it is (what _sift_up would leave, without the call)
            timer._index = size
        return True

    def remove(self, timestamp: int, key: Any, namespace: Any) -> bool:
        """Remove a timer if present; returns whether it was there."""
        owner = (key, namespace)
        own = self._members.get(owner)
        timer = None if own is None else own.pop(timestamp, None)
        if timer is None:
            return False
        if not own:
            del self._members[owner]
        if self.operations is not None:
            self.operations.append((_REMOVE, timestamp, key, namespace))
        if self._stale:
            self._renumber()
        self._remove_at(timer._index)
        return True

    def positions_current(self) -> bool:
        """Whether every timer's ``_index`` is its slot now (else the next :meth:`remove` renumbers them)."""
        return not self._stale

    def _renumber(self) -> None:
        queue = self._queue
        for index in range(1, self._size + 1):
            queue[index]._index = index  # type: ignore[union-attr]
        self._stale = False

    def poll_due(self, time: int) -> InternalTimer | None:
        """:meth:`poll` when the head's timestamp is at or before ``time``, else ``None`` (one call per timer of
        a timer pass rather than :meth:`peek` and :meth:`poll`)."""
        if not self._size or self._times[1] > time:
            return None
        return self.poll()

    def poll_all_due(self, time: int) -> list[InternalTimer]:
        """Every timer at or before ``time``, polled: what calling :meth:`poll_due` ``(time)`` until it gives
        ``None`` returns, in the same order, leaving the same array (and recording the same polls). One loop over
        Flink's sift-down on the timestamps, which does not keep the moved timers' ``_index`` (the heap renumbers
        them when it next needs them, see :meth:`remove`). For a timer pass whose callbacks add no due timer and
        remove no queued one, so that polling them all first changes nothing they see."""
        queue, times = self._queue, self._times
        size = self._size
        if not size or times[1] > time:
            return []
        # the slots past the heap read as later than any timer (_AFTER_ALL), so a sift needs no bound check: the
        # children of any slot up to ``size`` are slots up to ``2 * size + 1``
        length = len(times)
        del times[size + 1 :]
        times.extend([_AFTER_ALL] * (size + 2))
        polled: list[InternalTimer] = []
        append = polled.append
        while size and times[1] <= time:
            append(queue[1])  # type: ignore[arg-type]
            last = queue[size]
            last_time = times[size]
            queue[size] = None
            times[size] = _AFTER_ALL
            size -= 1
            # _sift_down(1) of the last timer, comparing timestamps only (the order of ties is this loop's)
            index = 1
            child = 2
            while True:
                smaller_time = times[child]
                second = times[child + 1]
                if second < smaller_time:
                    child += 1
                    smaller_time = second
                if not smaller_time < last_time:
                    break
                queue[index] = queue[child]
                times[index] = smaller_time
                index = child
                child = index << 1
            queue[index] = last
            times[index] = last_time
        del times[max(length, len(queue)) :]
        self._size = size
        members = self._members
        if size:
            self._stale = True
            pop = members.pop
            for timer in polled:
                owner = (timer.key, timer.namespace)
                own = pop(owner)  # one look-up for the usual owner of one timer
                if len(own) > 1:
                    del own[timer.timestamp]
                    members[owner] = own
        else:
            members.clear()
            queue[1] = None
        if self.operations is not None:
            self.operations.extend([_POLL] * len(polled))
        return polled

    def poll(self) -> InternalTimer | None:
        if not self._size:
            return None
        head = self._queue[1]
        assert head is not None
        if self.operations is not None:
            self.operations.append(_POLL)
        owner = (head.key, head.namespace)
        own = self._members[owner]
        del own[head.timestamp]
        if not own:
            del self._members[owner]
        # _remove_at(1): the last timer moves to the root and is sifted down (sifting up from the root is a no-op)
        queue, times = self._queue, self._times
        last_index = self._size
        last = queue[last_index]
        assert last is not None
        queue[last_index] = None
        self._size = last_index - 1
        if last_index > 1:
            queue[1] = last
            times[1] = times[last_index]
            last._index = 1
            self._sift_down(1)
        return head

    # -- Flink's heap algorithm ------------------------------------------------------------------------

    def _remove_at(self, index: int) -> None:
        queue = self._queue
        times = self._times
        last_index = self._size
        if index != last_index:
            last = queue[last_index]
            assert last is not None
            queue[index] = last
            times[index] = times[last_index]
            last._index = index
            self._sift_down(index)
            if queue[index] is last:
                self._sift_up(index)
        queue[last_index] = None
        self._size = last_index - 1

    def _sift_up(self, index: int) -> None:
        queue: list[Any] = self._queue  # slots [1, size] hold timers
        times = self._times
        current = queue[index]
        time = times[index]
        parent_index = index >> 1
        while parent_index > 0:
            parent_time = times[parent_index]
            if not time < parent_time:
                break
            parent = queue[parent_index]
            queue[index] = parent
            times[index] = parent_time
            parent._index = index
            index = parent_index
            parent_index >>= 1
        queue[index] = current
        times[index] = time
        current._index = index

    def _sift_down(self, index: int) -> None:
        queue: list[Any] = self._queue  # slots [1, size] hold timers
        times = self._times
        size = self._size
        current = queue[index]
        time = times[index]
        child = index << 1
        while child <= size:
            smaller_time = times[child]
            if child < size:
                second = times[child + 1]
                if second < smaller_time:  # the second child, when smaller
                    child += 1
                    smaller_time = second
            if not smaller_time < time:
                break
            smaller = queue[child]
            queue[index] = smaller
            times[index] = smaller_time
            smaller._index = index
            index = child
            child = index << 1
        queue[index] = current
        times[index] = time
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
