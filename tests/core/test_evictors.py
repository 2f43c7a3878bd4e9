"""Evictors, alone and in the evicting window operator (Flink's ``CountEvictor``, ``TimeEvictor``,
``DeltaEvictor`` and ``EvictingWindowOperatorTest``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from panes.functions.base import AggregateFunction
from panes.testing import WindowOperatorHarness
from panes.time import LONG_MAX, LONG_MIN
from panes.windowing import (
    CountEvictor,
    CountTrigger,
    DeltaEvictor,
    EventTimeSessionWindows,
    Evictor,
    GlobalWindow,
    GlobalWindows,
    TimeEvictor,
    TimestampedValue,
    TumblingEventTimeWindows,
)
from tests.core.support import first, records, window_contents

Pair = tuple[str, int]
CTX: Any = None


def tv(*values_at: tuple[Any, int | None]) -> list[TimestampedValue[Any]]:
    return [TimestampedValue(v, t) for v, t in values_at]


def values(elements: list[TimestampedValue[Any]]) -> list[Any]:
    return [e.value for e in elements]


# -- the evictors alone -------------------------------------------------------------------------------------------


def test_timestamped_values() -> None:
    assert TimestampedValue("x", 5).get_timestamp() == 5
    assert TimestampedValue("x", 5).has_timestamp()
    assert TimestampedValue("x").get_timestamp() == LONG_MIN
    assert not TimestampedValue("x").has_timestamp()
    assert TimestampedValue("x", 5) == TimestampedValue("x", 5)
    assert TimestampedValue("x", 5) != TimestampedValue("x", 6)


def test_count_evictor_keeps_the_last_max_count_elements() -> None:
    elements = tv(("a", 1), ("b", 2), ("c", 3), ("d", 4), ("e", 5))
    CountEvictor.of(3).evict_before(elements, len(elements), GlobalWindow(), CTX)
    assert values(elements) == ["c", "d", "e"]
    CountEvictor.of(3).evict_before(elements, len(elements), GlobalWindow(), CTX)
    assert values(elements) == ["c", "d", "e"]


def test_evictors_act_either_before_or_after_the_function() -> None:
    for evictor in (CountEvictor.of(1), TimeEvictor.of(0), DeltaEvictor.of(0.0, lambda a, b: 0.0)):
        before = tv(("a", 1), ("b", 2))
        evictor.evict_after(before, 2, GlobalWindow(), CTX)
        assert values(before) == ["a", "b"]  # not an after-evictor
        evictor.evict_before(before, 2, GlobalWindow(), CTX)
        assert len(before) < 2

    after = CountEvictor.of(1, do_evict_after=True)
    elements = tv(("a", 1), ("b", 2))
    after.evict_before(elements, 2, GlobalWindow(), CTX)
    assert values(elements) == ["a", "b"]
    after.evict_after(elements, 2, GlobalWindow(), CTX)
    assert values(elements) == ["b"]


def test_time_evictor_keeps_elements_within_window_size_of_the_newest() -> None:
    elements = tv(("a", 1000), ("b", 4000), ("c", 2000), ("d", 2001))
    TimeEvictor.of(2000).evict_before(elements, 4, GlobalWindow(), CTX)
    assert values(elements) == ["b", "d"]  # cutoff 4000 - 2000 = 2000; 2000 itself goes


def test_time_evictor_does_nothing_when_the_first_element_has_no_timestamp() -> None:
    elements = tv(("a", None), ("b", 4000), ("c", 1))
    TimeEvictor.of(10).evict_before(elements, 3, GlobalWindow(), CTX)
    assert values(elements) == ["a", "b", "c"]
    empty: list[TimestampedValue[Any]] = []
    TimeEvictor.of(10).evict_before(empty, 0, GlobalWindow(), CTX)
    assert empty == []


def test_delta_evictor_drops_elements_too_far_from_the_last_one() -> None:
    elements = tv((1, 0), (5, 0), (3, 0), (4, 0))
    # delta(element, last): last - element; evicted when >= 2
    DeltaEvictor.of(2.0, lambda old, new: new - old).evict_before(elements, 4, GlobalWindow(), CTX)
    assert values(elements) == [5, 3, 4]


# -- the evicting operator: Flink's scenarios ------------------------------------------------------------------------


def key_sum(key: str, window: Any, inputs: Iterable[Pair]) -> list[Pair]:
    return [(key, sum(v for _, v in inputs))]


def evicting(assigner: Any, evictor: Evictor[Any, Any], trigger: Any = None, **kwargs: Any) -> WindowOperatorHarness:
    if "reduce" not in kwargs and "aggregate" not in kwargs:
        kwargs["function"] = lambda key, ctx, elements: key_sum(key, ctx.window(), elements)
    return WindowOperatorHarness(
        assigner, key_selector=first, trigger=trigger or CountTrigger.of(2), evictor=evictor, **kwargs
    )


def feed(h: WindowOperatorHarness, *elements: tuple[str, int, int | None]) -> None:
    for key, value, ts in elements:
        h.process_element((key, value), ts)


def test_count_evictor_after_the_function() -> None:
    h = evicting(GlobalWindows.create(), CountEvictor.of(4, do_evict_after=True))
    feed(h, ("key2", 1, 3000), ("key2", 1, 3999))  # fires: 2
    feed(h, ("key1", 1, 20), ("key1", 1, 0), ("key1", 1, 999))  # fires on the 2nd: 2
    feed(h, ("key2", 1, 1998), ("key2", 1, 1999), ("key2", 1, 1000))  # fires on the 4th: 4
    assert records(h) == [(("key2", 2), LONG_MAX), (("key1", 2), LONG_MAX), (("key2", 4), LONG_MAX)]
    feed(h, ("key1", 1, 10999), ("key2", 1, 1000))  # key1: 4; key2: 6, then evicted down to 4
    assert records(h)[3:] == [(("key1", 4), LONG_MAX), (("key2", 6), LONG_MAX)]
    feed(h, ("key2", 1, 1000), ("key2", 1, 1000))  # 4 + 2
    assert records(h)[5:] == [(("key2", 6), LONG_MAX)]


def test_count_evictor_before_the_function_with_reduce() -> None:
    """Flink's ``testCountTrigger`` of the evicting operator: a sliding count window (4, 2) with reduce."""
    h = evicting(GlobalWindows.create(), CountEvictor.of(4), reduce=lambda a, b: (b[0], a[1] + b[1]))
    feed(h, ("key2", 1, 3000), ("key2", 1, 3999))
    feed(h, ("key1", 1, 20), ("key1", 1, 0), ("key1", 1, 999))
    feed(h, ("key2", 1, 1998), ("key2", 1, 1999), ("key2", 1, 1000))
    assert records(h) == [(("key2", 2), LONG_MAX), (("key1", 2), LONG_MAX), (("key2", 4), LONG_MAX)]
    feed(h, ("key1", 1, 10999), ("key2", 1, 1000))
    assert records(h)[3:] == [(("key1", 4), LONG_MAX), (("key2", 4), LONG_MAX)]


def test_time_evictor_after_the_function() -> None:
    h = evicting(GlobalWindows.create(), TimeEvictor.of(2000, do_evict_after=True))
    feed(h, ("key2", 1, 1000), ("key2", 1, 4000))  # 2; then 1000 is evicted (<= 4000 - 2000)
    feed(h, ("key1", 1, 20), ("key1", 1, 0), ("key1", 1, 999))  # 2
    feed(h, ("key2", 1, 3500), ("key2", 1, 2001), ("key2", 1, 1001))  # 4000, 3500, 2001: 3
    assert records(h) == [(("key2", 2), LONG_MAX), (("key1", 2), LONG_MAX), (("key2", 3), LONG_MAX)]
    feed(h, ("key1", 1, 10999), ("key2", 1, 1002))  # key1: 20, 0, 999, 10999; key2: 5 kept elements
    assert records(h)[3:] == [(("key1", 4), LONG_MAX), (("key2", 5), LONG_MAX)]
    assert window_contents(h)[("key1", GlobalWindow())] == [(("key1", 1), 10999)]


def test_time_evictor_before_the_function_in_tumbling_windows() -> None:
    h = evicting(TumblingEventTimeWindows.of(4000), TimeEvictor.of(2000))
    feed(h, ("key2", 1, 1000), ("key2", 1, 3999))  # [0, 4000): 1000 evicted before: 1
    feed(h, ("key1", 1, 20), ("key1", 1, 0), ("key1", 1, 999), ("key1", 1, 5999))  # [0, 4000): 2
    feed(h, ("key2", 1, 3500), ("key2", 1, 2001), ("key2", 1, 1001))  # 3999, 3500, 2001: 3
    assert records(h) == [(("key2", 1), 3999), (("key1", 2), 3999), (("key2", 3), 3999)]
    feed(h, ("key1", 1, 6500), ("key2", 1, 1002))  # key1 [4000, 8000): 2; key2: 1001, 1002 evicted
    assert records(h)[3:] == [(("key1", 2), 7999), (("key2", 3), 3999)]


def test_time_evictor_keeps_everything_without_timestamps() -> None:
    h = evicting(GlobalWindows.create(), TimeEvictor.of(2000, do_evict_after=True))
    feed(h, ("key2", 1, None), ("key2", 1, None))
    feed(h, ("key1", 1, None), ("key1", 1, None), ("key1", 1, None))
    feed(h, ("key2", 1, None), ("key2", 1, None), ("key2", 1, None))
    assert records(h) == [(("key2", 2), LONG_MAX), (("key1", 2), LONG_MAX), (("key2", 4), LONG_MAX)]
    feed(h, ("key1", 1, None), ("key2", 1, None))
    assert records(h)[3:] == [(("key1", 4), LONG_MAX), (("key2", 6), LONG_MAX)]


@pytest.mark.parametrize(
    ("after", "first_sums", "second_sums"),
    [
        (False, [("key2", 4), ("key1", 2), ("key2", 11)], [("key1", 8), ("key2", 10)]),
        (True, [("key2", 5), ("key1", 2), ("key2", 15)], [("key1", 16), ("key2", 22)]),
    ],
    ids=["before", "after"],
)
def test_delta_evictor(after: bool, first_sums: list[Pair], second_sums: list[Pair]) -> None:
    evictor = DeltaEvictor.of(2.0, lambda old, new: new[1] - old[1], do_evict_after=after)
    h = evicting(GlobalWindows.create(), evictor)
    feed(h, ("key2", 1, 3000), ("key2", 4, 3999))
    feed(h, ("key1", 1, 20), ("key1", 1, 0), ("key1", 5, 999))
    feed(h, ("key2", 5, 1998), ("key2", 6, 1999), ("key2", 1, 1000))
    assert records(h) == [(s, LONG_MAX) for s in first_sums]
    feed(h, ("key1", 3 if not after else 9, 10999), ("key2", 10, 1000))
    assert records(h)[3:] == [(s, LONG_MAX) for s in second_sums]


# -- what the evicting operator hands around --------------------------------------------------------------------------


class Recording(Evictor[Any, Any]):
    def __init__(self, keep_last: int | None = None) -> None:
        self.calls: list[tuple[str, list[Any], int, Any, int]] = []
        self.keep_last = keep_last

    def evict_before(self, elements: list[Any], size: int, window: Any, ctx: Any) -> None:
        self.calls.append(("before", values(elements), size, window, ctx.get_current_watermark()))
        if self.keep_last is not None:
            del elements[: len(elements) - self.keep_last]

    def evict_after(self, elements: list[Any], size: int, window: Any, ctx: Any) -> None:
        self.calls.append(("after", values(elements), size, window, ctx.get_current_watermark()))


def test_the_evictor_sees_the_pane_with_timestamps_its_size_window_and_time() -> None:
    evictor = Recording(keep_last=1)
    seen: list[list[Any]] = []

    def function(key: Any, ctx: Any, elements: Iterable[Any]) -> list[Any]:
        seen.append(list(elements))
        return []

    h = WindowOperatorHarness(TumblingEventTimeWindows.of(10), function, key_selector=lambda v: 0, evictor=evictor)
    h.process_element("a", 1)
    h.process_element("b", 2)
    h.process_element("c", 3)
    h.process_watermark(9)
    window = h.window_operator.assigner.assign_windows("x", 0, h.window_operator)[0]
    assert evictor.calls == [("before", ["a", "b", "c"], 3, window, 9), ("after", ["c"], 1, window, 9)]
    assert seen == [["c"]]  # the function sees values only, after eviction


def test_evicting_everything_leaves_an_empty_pane() -> None:
    class EvictAll(Evictor[Any, Any]):
        def evict_before(self, elements: list[Any], size: int, window: Any, ctx: Any) -> None:
            elements.clear()

        def evict_after(self, elements: list[Any], size: int, window: Any, ctx: Any) -> None:
            return None

    h = WindowOperatorHarness(
        GlobalWindows.create(),
        reduce=lambda a, b: a + b,
        key_selector=lambda v: 0,
        trigger=CountTrigger.of(2),
        evictor=EvictAll(),
    )
    h.process_element(1, 0)
    h.process_element(2, 0)
    # the function still runs, on nothing: a reduce of nothing is None (Flink emits null)
    assert records(h) == [(None, LONG_MAX)]
    assert window_contents(h) == {}


class Average(AggregateFunction[int, tuple[int, int], float]):
    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: int, accumulator: tuple[int, int]) -> tuple[int, int]:
        return (accumulator[0] + value, accumulator[1] + 1)

    def get_result(self, accumulator: tuple[int, int]) -> float:
        return accumulator[0] / accumulator[1] if accumulator[1] else float("nan")

    def merge(self, acc_a: tuple[int, int], acc_b: tuple[int, int]) -> tuple[int, int]:
        return (acc_a[0] + acc_b[0], acc_a[1] + acc_b[1])


def test_aggregates_over_the_evicted_pane() -> None:
    h = WindowOperatorHarness(
        GlobalWindows.create(),
        aggregate=Average(),
        key_selector=lambda v: 0,
        trigger=CountTrigger.of(3),
        evictor=CountEvictor.of(2),
    )
    for value in (1, 2, 3, 10, 20, 30):
        h.process_element(value, 0)
    assert records(h) == [((2 + 3) / 2, LONG_MAX), ((20 + 30) / 2, LONG_MAX)]


def test_evicting_session_windows_merge_their_elements_with_timestamps() -> None:
    h = WindowOperatorHarness(
        EventTimeSessionWindows.with_gap(15),
        lambda key, ctx, elements: [sorted(elements)],
        key_selector=lambda v: 0,
        evictor=TimeEvictor.of(20),
    )
    for value, ts in [("a", 0), ("b", 30), ("c", 15)]:  # "c" bridges [0, 15) and [30, 45)
        h.process_element(value, ts)
    contents = window_contents(h)
    assert len(contents) == 1
    assert sorted(next(iter(contents.values()))) == [("a", 0), ("b", 30), ("c", 15)]
    h.process_watermark(44)
    assert records(h) == [(["b", "c"], 44)]  # 0 <= 30 - 20: "a" is evicted
