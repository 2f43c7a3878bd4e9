"""The Spark processor's one wake-up timer per shard, without Spark: the shard's meta remembers the timer it
registered, so the processor never lists timers (``processor.ShardProcessor._set_wake_up``).

A fake handle stands in for Spark's: it keeps the registered timers and, as Spark does after
``handleExpiredTimer`` returns, deletes the timer that fired."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from panes.spark.processor import ShardProcessor


class FakeHandle:
    """The timer calls of Spark's ``StatefulProcessorHandle`` for one key, counted."""

    def __init__(self) -> None:
        self.timers: set[int] = set()
        self.calls = 0

    def registerTimer(self, expiry: int) -> None:
        self.calls += 1
        self.timers.add(expiry)

    def deleteTimer(self, expiry: int) -> None:
        self.calls += 1
        self.timers.discard(expiry)

    def listTimers(self) -> list[int]:
        raise AssertionError("the processor lists no timers: its meta remembers the one it registered")


def processor(handle: FakeHandle) -> ShardProcessor:
    shard = ShardProcessor.__new__(ShardProcessor)  # only the handle matters here
    shard.handle = handle  # type: ignore[assignment]
    return shard


calls = st.lists(st.tuples(st.none() | st.integers(0, 6), st.booleans()), max_size=30)
"""Calls of one shard: the wake-up it wants (``None``: none), and whether its registered timer fired it."""


@given(calls)
def test_the_shard_has_exactly_the_timer_it_wants_and_an_unchanged_wake_up_costs_no_timer_call(
    sequence: list[tuple[int | None, bool]],
) -> None:
    handle = FakeHandle()
    shard = processor(handle)
    registered: int | None = None  # what the meta holds
    for wanted, fires in sequence:
        fired = registered if fires else None
        before, kept = handle.calls, registered
        registered = shard._set_wake_up(wanted, registered, fired)
        if fired is not None:
            handle.timers.discard(fired)  # Spark deletes the fired timer once the call returns
        expected = set() if wanted is None or wanted == fired else {wanted}
        assert handle.timers == expected
        assert registered == (wanted if expected else None), "the meta must name the timer Spark holds"
        if fired is None and wanted == kept:
            assert handle.calls == before, "an unchanged wake-up makes no timer call"


def test_a_call_that_keeps_its_wake_up_makes_no_timer_call_and_one_that_moves_it_makes_two() -> None:
    handle = FakeHandle()
    shard = processor(handle)
    assert shard._set_wake_up(10, None, None) == 10 and handle.calls == 1
    assert shard._set_wake_up(10, 10, None) == 10 and handle.calls == 1
    assert shard._set_wake_up(20, 10, None) == 20 and handle.calls == 3 and handle.timers == {20}
    # the timer at 20 fired: the next one is registered, the fired one left for Spark to delete
    assert shard._set_wake_up(30, 20, 20) == 30 and handle.calls == 4 and handle.timers == {20, 30}
    assert shard._set_wake_up(None, 30, None) is None and handle.timers == {20}
