"""Timers: Flink's heap priority queue (``HeapPriorityQueue``/``HeapPriorityQueueSet``) and the internal
timer service (``InternalTimerServiceImpl``)."""

from __future__ import annotations

import pickle
import random
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from panes.time import LONG_MIN
from panes.timers import InternalTimer, InternalTimerService, ManualProcessingTimeService, TimerHeap


def drain(heap: TimerHeap) -> list[tuple[int, Any, Any]]:
    out = []
    while (timer := heap.poll()) is not None:
        out.append(timer.identity())
    return out


def test_timers_leave_the_heap_in_timestamp_order() -> None:
    heap = TimerHeap()
    rng = random.Random(7)
    timestamps = [rng.randrange(-50, 50) for _ in range(200)]
    for i, ts in enumerate(timestamps):
        heap.add(ts, i, "ns")
    assert len(heap) == 200
    assert [t for t, _, _ in drain(heap)] == sorted(timestamps)
    assert len(heap) == 0
    assert heap.peek() is None
    assert heap.poll() is None


def test_a_timer_is_a_set_member_per_timestamp_key_and_namespace() -> None:
    heap = TimerHeap()
    assert heap.add(5, "k", "w1")
    assert not heap.add(5, "k", "w1")  # the same timer again: no second entry
    assert heap.add(5, "k", "w2")
    assert heap.add(5, "k2", "w1")
    assert heap.add(6, "k", "w1")
    assert len(heap) == 4
    assert (5, "k", "w1") in heap
    assert heap.remove(5, "k", "w1")
    assert not heap.remove(5, "k", "w1")
    assert (5, "k", "w1") not in heap
    assert len(heap) == 3
    assert InternalTimer(1, "k", "w") == InternalTimer(1, "k", "w")
    assert InternalTimer(1, "k", "w") != InternalTimer(1, "k", "v")


def test_equal_timestamps_leave_in_the_order_of_flinks_heap_not_fifo() -> None:
    # three timers at 5: the first leaves, the last one moves into the root and is not sifted below an
    # equal child, so it leaves second
    heap = TimerHeap()
    for name in "ABC":
        heap.add(5, name, None)
    assert [k for _, k, _ in drain(heap)] == ["A", "C", "B"]

    heap = TimerHeap()
    heap.add(1, "A", None)
    for name in "BCD":
        heap.add(5, name, None)
    assert [k for _, k, _ in drain(heap)] == ["A", "D", "C", "B"]


def test_removing_from_the_middle_keeps_a_valid_heap() -> None:
    heap = TimerHeap()
    rng = random.Random(3)
    present = set()
    for i in range(300):
        ts = rng.randrange(0, 40)
        heap.add(ts, i, None)
        present.add((ts, i, None))
        if i % 3 == 0:
            victim = rng.choice(sorted(present))
            assert heap.remove(*victim)
            present.discard(victim)
    assert sorted(present) == sorted(t.identity() for t in heap)
    assert [t for t, _, _ in drain(heap)] == sorted(t for t, _, _ in present)


def test_a_restored_heap_is_the_same_heap() -> None:
    heap = TimerHeap()
    rng = random.Random(11)
    for i in range(100):
        heap.add(rng.randrange(0, 10), i % 7, i % 3)  # many equal timestamps
        if i % 5 == 0:
            heap.poll()
    restored = TimerHeap()
    restored.restore(pickle.loads(pickle.dumps(heap.snapshot())))
    assert restored.snapshot() == heap.snapshot()
    assert drain(restored) == drain(heap)  # equal timestamps included, the order is the same


# -- the timer service ------------------------------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.service: InternalTimerService | None = None
        self.key: Any = None
        self.fired: list[tuple[str, int, Any, Any, int]] = []
        self.on_fire: Any = None

    def on_event_time(self, timer: InternalTimer) -> None:
        assert self.service is not None
        self.fired.append(("event", timer.timestamp, timer.key, timer.namespace, self.service.current_watermark))
        if self.on_fire is not None:
            self.on_fire(timer)

    def on_processing_time(self, timer: InternalTimer) -> None:
        assert self.service is not None
        now = self.service.current_processing_time()
        self.fired.append(("processing", timer.timestamp, timer.key, timer.namespace, now))
        if self.on_fire is not None:
            self.on_fire(timer)


def make_service(now: int = 0) -> tuple[InternalTimerService, Recorder, ManualProcessingTimeService]:
    recorder = Recorder()
    clock = ManualProcessingTimeService(now)

    def set_key(key: Any) -> None:
        recorder.key = key

    service = InternalTimerService(lambda: recorder.key, set_key, recorder, clock)
    recorder.service = service
    return service, recorder, clock


def test_event_time_timers_fire_up_to_the_watermark_with_their_key_current() -> None:
    service, recorder, _ = make_service()
    assert service.current_watermark == LONG_MIN
    for key, ts in (("a", 10), ("b", 5), ("a", 20)):
        recorder.key = key
        service.register_event_time_timer("w", ts)
    assert service.next_event_time_timer() == 5

    service.advance_watermark(10)
    # the watermark is already the new one while timers fire, and each timer's key is made current
    assert recorder.fired == [("event", 5, "b", "w", 10), ("event", 10, "a", "w", 10)]
    assert service.current_watermark == 10
    assert service.next_event_time_timer() == 20


def test_timers_registered_while_firing_fire_in_the_same_advance_when_due() -> None:
    service, recorder, _ = make_service()
    recorder.key = "k"
    service.register_event_time_timer("w", 1)

    def chain(timer: InternalTimer) -> None:
        if timer.timestamp < 4:
            service.register_event_time_timer("w", timer.timestamp + 1)
        service.register_event_time_timer("late", 100)

    recorder.on_fire = chain
    service.advance_watermark(3)
    assert [f[1] for f in recorder.fired] == [1, 2, 3]
    assert service.next_event_time_timer() == 4


def test_deleted_timers_do_not_fire_and_deleting_a_missing_timer_is_fine() -> None:
    service, recorder, _ = make_service()
    recorder.key = "k"
    service.register_event_time_timer("w", 1)
    service.register_event_time_timer("w", 2)
    service.delete_event_time_timer("w", 1)
    service.delete_event_time_timer("w", 99)
    recorder.key = "other"
    service.delete_event_time_timer("w", 2)  # another key's timer: not this one
    service.advance_watermark(5)
    assert [(f[1], f[2]) for f in recorder.fired] == [(2, "k")]


def test_processing_time_timers_fire_when_the_clock_reaches_them() -> None:
    service, recorder, clock = make_service(now=0)
    recorder.key = "k"
    service.register_processing_time_timer("w", 10)
    service.register_processing_time_timer("w", 30)
    service.register_processing_time_timer("w", 10)  # de-duplicated
    assert service.next_processing_time_timer() == 10
    clock.set_current_time(25)
    service.advance_processing_time(25)
    assert recorder.fired == [("processing", 10, "k", "w", 25)]
    service.delete_processing_time_timer("w", 30)
    clock.set_current_time(100)
    service.advance_processing_time(100)
    assert len(recorder.fired) == 1
    assert service.next_processing_time_timer() is None
    # event time and processing time are independent
    service.advance_watermark(1_000_000)
    assert len(recorder.fired) == 1


def test_the_timer_service_snapshot_carries_timers_and_watermark() -> None:
    service, recorder, _ = make_service()
    recorder.key = "k"
    service.register_event_time_timer("w", 7)
    service.register_processing_time_timer("w", 9)
    service.advance_watermark(3)
    data = pickle.loads(pickle.dumps(service.snapshot()))

    restored, restored_recorder, clock = make_service()
    restored.restore(data)
    assert restored.current_watermark == 3
    restored.advance_watermark(7)
    clock.set_current_time(9)
    restored.advance_processing_time(9)
    assert [(f[0], f[1], f[2]) for f in restored_recorder.fired] == [("event", 7, "k"), ("processing", 9, "k")]


class ReferenceHeap:
    """Flink's ``HeapPriorityQueue`` as plainly as it reads (1-based array; remove moves the last element into
    the hole, sifts it down, and up when it did not move), to check ``TimerHeap``'s tuned form against."""

    def __init__(self) -> None:
        self.items: list[Any] = [None]

    def add(self, item: tuple[int, str]) -> None:
        if item in self.items[1:]:
            return
        self.items.append(item)
        self._up(len(self.items) - 1)

    def remove(self, item: tuple[int, str]) -> None:
        if item in self.items[1:]:
            self._remove_at(self.items.index(item, 1))

    def poll(self) -> tuple[int, str] | None:
        if len(self.items) == 1:
            return None
        head = self.items[1]
        self._remove_at(1)
        return head  # type: ignore[no-any-return]

    def _remove_at(self, index: int) -> None:
        last = self.items.pop()
        if index < len(self.items):
            self.items[index] = last
            self._down(index)
            if self.items[index] is last:
                self._up(index)

    def _up(self, index: int) -> None:
        while index > 1 and self.items[index][0] < self.items[index // 2][0]:
            self.items[index], self.items[index // 2] = self.items[index // 2], self.items[index]
            index //= 2

    def _down(self, index: int) -> None:
        size = len(self.items) - 1
        while 2 * index <= size:
            child = 2 * index
            if child + 1 <= size and self.items[child + 1][0] < self.items[child][0]:
                child += 1
            if not self.items[child][0] < self.items[index][0]:
                return
            self.items[index], self.items[child] = self.items[child], self.items[index]
            index = child


OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["add", "add", "remove", "poll", "due", "all due"]),
        st.integers(0, 6),
        st.sampled_from("abcdefgh"),
    ),
    max_size=120,
)


@given(OPERATIONS)
def test_the_heap_keeps_flinks_array_order_through_any_operations(operations: list[tuple[str, int, str]]) -> None:
    heap, reference = TimerHeap(), ReferenceHeap()
    for operation, timestamp, key in operations:
        if operation == "add":
            heap.add(timestamp, key, None)
            reference.add((timestamp, key))
        elif operation == "remove":
            heap.remove(timestamp, key, None)
            reference.remove((timestamp, key))
        elif operation == "due":  # poll_due(timestamp): the head only when it is due at timestamp
            polled = heap.poll_due(timestamp)
            due = len(reference.items) > 1 and reference.items[1][0] <= timestamp
            assert (None if polled is None else (polled.timestamp, polled.key)) == (reference.poll() if due else None)
        elif operation == "all due":  # poll_all_due(timestamp): what polling the head while it is due gives
            expected = []
            while len(reference.items) > 1 and reference.items[1][0] <= timestamp:
                expected.append(reference.poll())
            assert [(timer.timestamp, timer.key) for timer in heap.poll_all_due(timestamp)] == expected
        else:
            polled = heap.poll()
            assert (None if polled is None else (polled.timestamp, polled.key)) == reference.poll()
        assert [(t, k) for t, k, _ in heap.snapshot()] == reference.items[1:]
        if heap.positions_current():  # after poll_all_due, positions are renumbered when a removal needs them
            assert all(timer._index == index for index, timer in enumerate(heap, start=1))
        elif operation == "remove":
            raise AssertionError("a removal leaves the positions current")
        assert heap._times[1 : len(heap) + 1] == [timer.timestamp for timer in heap]  # the compared timestamps
        for owner in "abcdefgh":
            assert heap.count_of(owner, None) == sum(item[1] == owner for item in reference.items[1:])
            assert ((timestamp, owner, None) in heap) == ((timestamp, owner) in reference.items[1:])


@given(
    st.lists(st.tuples(st.integers(0, 12), st.integers(0, 40)), max_size=300),
    st.lists(st.tuples(st.integers(0, 12), st.integers(0, 40)), max_size=40),
    st.integers(-1, 13),
)
def test_polling_all_due_at_once_is_polling_them_one_by_one(
    timers: list[tuple[int, int]], later: list[tuple[int, int]], time: int
) -> None:
    """A large heap with many ties: ``poll_all_due`` gives the timers ``poll_due`` gives one by one, in the same
    order, leaves the same array and records the same operations (a restore replaying them rebuilds it); removes,
    adds and polls afterwards (positions renumbered) go on alike."""
    at_once, one_by_one = TimerHeap(), TimerHeap()
    for heap in (at_once, one_by_one):
        for timestamp, key in timers:
            heap.add(timestamp, key, "w")
        heap.track_operations()
    before = at_once.snapshot()
    polled = at_once.poll_all_due(time)
    expected = []
    while (timer := one_by_one.poll_due(time)) is not None:
        expected.append(timer)
    assert [timer.identity() for timer in polled] == [timer.identity() for timer in expected]
    assert at_once.snapshot() == one_by_one.snapshot()
    assert at_once._times[1 : len(at_once) + 1] == one_by_one._times[1 : len(one_by_one) + 1]
    replayed = TimerHeap()
    replayed.restore(before, at_once.take_operations())
    assert replayed.snapshot() == one_by_one.snapshot()
    for timestamp, key in later:
        for heap in (at_once, one_by_one):
            heap.remove(timestamp, key, "w")
            heap.add(timestamp + 1, key, "w")
        assert at_once.snapshot() == one_by_one.snapshot()
        assert at_once.count_of(key, "w") == one_by_one.count_of(key, "w")
    if at_once.positions_current():
        assert all(timer._index == index for index, timer in enumerate(at_once, start=1))
    assert drain(at_once) == drain(one_by_one)
