"""Allowed lateness, late data and window cleanup (the lateness scenarios of Flink's ``WindowOperatorTest``).

A window is late once ``max_timestamp + allowed_lateness <= watermark`` (its cleanup time); an element
is late when every window it belongs to is late and ``timestamp + allowed_lateness <= watermark``.
Late elements go to the late-data side output with their own timestamp, or are counted as dropped.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from panes.elements import StreamRecord, Watermark
from panes.state.descriptors import ListStateDescriptor
from panes.tags import OutputTag
from panes.testing import WindowOperatorHarness
from panes.time import LONG_MAX
from panes.windowing import (
    EventTimeSessionWindows,
    EventTimeTrigger,
    PurgingTrigger,
    SlidingEventTimeWindows,
    TimeWindow,
    Trigger,
    TriggerContext,
    TriggerResult,
    TumblingEventTimeWindows,
)
from panes.windowing.internal_functions import as_window_function, reduce_spec
from panes.windowing.triggers.base import OnMergeContext
from tests.core.support import by_watermark, first, num_event_time_timers, num_keyed_state_entries, records

LATE: OutputTag[Any] = OutputTag("late-output")
Pair = tuple[str, int]


def sum_pairs(a: Pair, b: Pair) -> Pair:
    return (b[0], a[1] + b[1])


def late(h: WindowOperatorHarness) -> list[tuple[Any, int | None]]:
    return [(r.value, r.timestamp) for r in h.get_side_output(LATE)]


def one(h: WindowOperatorHarness, value: int, ts: int) -> None:
    h.process_element(("key2", value), ts)


def test_allowed_lateness_with_a_purging_trigger() -> None:
    h = WindowOperatorHarness(
        TumblingEventTimeWindows.of(2000),
        reduce=sum_pairs,
        key_selector=first,
        trigger=PurgingTrigger.of(EventTimeTrigger.create()),
        allowed_lateness=500,
        late_data_tag=LATE,
    )
    one(h, 1, 500)
    h.process_watermark(1500)
    one(h, 1, 1300)
    h.process_watermark(2300)  # [0, 2000) fires (and purges); it lives on until 1999 + 500
    one(h, 1, 1997)  # late for the trigger, but within the lateness: a firing of just this element
    h.process_watermark(6000)  # the cleanup at 2499 has passed
    one(h, 1, 1998)  # now too late
    h.process_watermark(7000)
    assert h.get_output() == [
        Watermark(1500),
        StreamRecord(("key2", 2), 1999),
        Watermark(2300),
        StreamRecord(("key2", 1), 1999),
        Watermark(6000),
        Watermark(7000),
    ]
    assert late(h) == [(("key2", 1), 1998)]
    assert h.num_late_records_dropped == 0


def test_cleanup_time_saturates_at_long_max_instead_of_wrapping_around() -> None:
    h = WindowOperatorHarness(
        TumblingEventTimeWindows.of(1000), reduce=sum_pairs, key_selector=first, allowed_lateness=2000
    )
    timestamp = LONG_MAX - 1750
    window = TimeWindow(timestamp - timestamp % 1000, timestamp - timestamp % 1000 + 1000)
    assert window.max_timestamp() == LONG_MAX - 808
    one(h, 1, timestamp)
    # max timestamp + lateness would wrap to a very negative time; the operator sets no cleanup timer at
    # all (only the trigger's timer at the window end is there)
    assert num_event_time_timers(h) == 1
    h.process_watermark(LONG_MAX - 1500)  # a wrapped-around cleanup timer would have fired here
    assert num_keyed_state_entries(h) == 1
    h.process_watermark(window.max_timestamp())
    assert h.get_output() == [
        Watermark(LONG_MAX - 1500),
        StreamRecord(("key2", 1), window.max_timestamp()),
        Watermark(window.max_timestamp()),
    ]


def test_late_side_output_with_tumbling_windows_and_no_lateness() -> None:
    h = WindowOperatorHarness(
        TumblingEventTimeWindows.of(2000), reduce=sum_pairs, key_selector=first, late_data_tag=LATE
    )
    one(h, 1, 1000)
    h.process_watermark(1985)
    one(h, 1, 1980)  # 1999 > 1985: on time
    h.process_watermark(1999)
    one(h, 1, 1998)  # 1999 <= 1999: the window is gone
    one(h, 1, 2001)
    h.process_watermark(2999)
    h.process_watermark(3999)
    assert h.get_output() == [
        Watermark(1985),
        StreamRecord(("key2", 2), 1999),
        Watermark(1999),
        Watermark(2999),
        StreamRecord(("key2", 1), 3999),
        Watermark(3999),
    ]
    assert late(h) == [(("key2", 1), 1998)]


def test_an_element_is_late_only_when_all_its_sliding_windows_are_late() -> None:
    h = WindowOperatorHarness(
        SlidingEventTimeWindows.of(3000, 1000), reduce=sum_pairs, key_selector=first, late_data_tag=LATE
    )
    one(h, 1, 1000)
    h.process_watermark(1999)
    one(h, 1, 2000)
    h.process_watermark(3000)
    h.process_element(("key1", 1), 3001)
    # 2400 belongs to [0, 3000) (late: dropped for that window), [1000, 4000) and [2000, 5000) (kept)
    one(h, 1, 2400)
    one(h, 1, 2400)
    h.process_element(("key1", 1), 3001)
    one(h, 1, 3900)
    h.process_watermark(6000)
    h.process_element(("key1", 1), 3001)  # every window of 3001 ends by 5999: late
    h.process_watermark(25000)
    assert by_watermark(h) == [
        ([(("key2", 1), 1999)], 1999),
        ([(("key2", 2), 2999)], 3000),
        (
            sorted(
                [
                    (("key2", 5), 3999),  # 1000, 2000, 2400, 2400, 3900
                    (("key1", 2), 3999),
                    (("key2", 4), 4999),  # 2000, 2400, 2400, 3900
                    (("key1", 2), 4999),
                    (("key2", 1), 5999),  # 3900
                    (("key1", 2), 5999),
                ],
                key=repr,
            ),
            6000,
        ),
        ([], 25000),
    ]
    assert late(h) == [(("key1", 1), 3001)]


# -- sessions and lateness ----------------------------------------------------------------------------------------

SESSION_PREFIX = [  # (value, timestamp) or watermark
    (1, 1000),
    1999,
    (1, 2000),
    4998,
    (1, 4500),  # joins [1000, 5000): that session still ends after the watermark
    (1, 8500),  # a new session
    7400,
    (1, 7000),  # bridges the two sessions: [1000, 11500)
    11501,
    (1, 11600),  # a new session
    14600,
]


def _session_harness(lateness: int, purging: bool) -> WindowOperatorHarness:
    def each_value(key: str, window: TimeWindow, values: Iterable[Pair]) -> list[Any]:
        return [(f"{key}-{v}", window.start, window.end) for _, v in values]

    trigger = PurgingTrigger.of(EventTimeTrigger.create()) if purging else EventTimeTrigger.create()
    return WindowOperatorHarness(
        EventTimeSessionWindows.with_gap(3000),
        reduce_spec(sum_pairs, as_window_function(each_value)),
        key_selector=first,
        trigger=trigger,
        allowed_lateness=lateness,
        late_data_tag=LATE,
    )


def _run(h: WindowOperatorHarness, steps: list[Any]) -> None:
    for step in steps:
        if isinstance(step, tuple):
            one(h, *step)
        else:
            h.process_watermark(step)


PREFIX_OUTPUT = [
    ([], 1999),
    ([], 4998),
    ([], 7400),
    ([(("key2-5", 1000, 11500), 11499)], 11501),
    ([(("key2-1", 11600, 14600), 14599)], 14600),
]


@pytest.mark.parametrize("purging", [True, False], ids=["purging", "accumulating"])
def test_sessions_without_lateness_send_elements_of_finished_sessions_to_the_side_output(purging: bool) -> None:
    h = _session_harness(0, purging)
    # [11600, 14600) was cleaned up at 14599: 10000 and 10100 cannot join it, and their own sessions
    # ([10000, 13000), [10100, 13100)) are already late; they do not merge with each other either
    _run(h, [*SESSION_PREFIX, (1, 10000), (1, 10100), (1, 14500), 20000, 100000])
    assert by_watermark(h) == [
        *PREFIX_OUTPUT,
        ([(("key2-1", 14500, 17500), 17499)], 20000),
        ([], 100000),
    ]
    assert late(h) == [(("key2", 1), 10000), (("key2", 1), 10100)]


def test_small_lateness_keeps_a_fired_session_open_for_merging_purging() -> None:
    h = _session_harness(10, purging=True)
    # [11600, 14600) is kept until 14599 + 10: 10000 merges into it, [10000, 14600) is already past the
    # watermark and fires at once, with only the new element (the earlier ones were purged)
    _run(h, [*SESSION_PREFIX, (1, 10000)])
    assert by_watermark(h)[-1] == ([(("key2-1", 10000, 14600), 14599)], None)
    _run(h, [(1, 14500), 20000, 100000])
    # 14500 extends the still-open session to [10000, 17500), whose pane holds only 14500
    assert by_watermark(h)[5:] == [
        ([(("key2-1", 10000, 14600), 14599), (("key2-1", 10000, 17500), 17499)], 20000),
        ([], 100000),
    ]
    assert late(h) == []


def test_small_lateness_keeps_a_fired_session_open_for_merging_accumulating() -> None:
    h = _session_harness(10, purging=False)
    _run(h, [*SESSION_PREFIX, (1, 10000)])
    # accumulating: the immediate firing sees the session's earlier element too
    assert by_watermark(h)[-1] == ([(("key2-2", 10000, 14600), 14599)], None)
    _run(h, [(1, 14500), 20000, 100000])
    assert by_watermark(h)[5:] == [
        ([(("key2-2", 10000, 14600), 14599), (("key2-3", 10000, 17500), 17499)], 20000),
        ([], 100000),
    ]
    assert late(h) == []


@pytest.mark.parametrize(
    ("purging", "bridged", "extended"), [(True, 1, 1), (False, 7, 8)], ids=["purging", "accumulating"]
)
def test_huge_lateness_lets_a_late_element_bridge_two_fired_sessions(
    purging: bool, bridged: int, extended: int
) -> None:
    h = _session_harness(10000, purging)
    # 10000 bridges [1000, 11500) and [11600, 14600), both fired but kept for the lateness
    _run(h, [*SESSION_PREFIX, (1, 10000)])
    assert by_watermark(h)[-1] == ([((f"key2-{bridged}", 1000, 14600), 14599)], None)
    _run(h, [(1, 14500), 20000, 100000])
    assert by_watermark(h)[5:] == [
        ([((f"key2-{bridged}", 1000, 14600), 14599), ((f"key2-{extended}", 1000, 17500), 17499)], 20000),
        ([], 100000),
    ]
    assert late(h) == []


def test_late_elements_without_a_side_output_are_counted() -> None:
    h = WindowOperatorHarness(EventTimeSessionWindows.with_gap(10), reduce=sum_pairs, key_selector=first)
    one(h, 1, 0)
    h.process_watermark(100)
    one(h, 1, 5)
    one(h, 1, 95)  # [95, 105) is not late: a new session
    assert h.num_late_records_dropped == 1
    h.process_watermark(200)
    assert records(h) == [(("key2", 1), 9), (("key2", 1), 104)]


# -- cleanup -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", ["list", "reduce"])
def test_cleanup_after_firing_emits_nothing_more_for_tumbling_windows(spec: str) -> None:
    kwargs: dict[str, Any] = {"reduce": sum_pairs} if spec == "reduce" else {"function": lambda k, c, e: list(e)}
    h = WindowOperatorHarness(TumblingEventTimeWindows.of(2000), key_selector=first, allowed_lateness=1, **kwargs)
    one(h, 1, 1000)
    for wm in (1599, 1999, 2000, 5000):
        h.process_watermark(wm)
    assert h.get_output() == [
        Watermark(1599),
        StreamRecord(("key2", 1), 1999),  # fired at the end of the window
        Watermark(1999),
        Watermark(2000),  # the cleanup timer: the trigger does not fire again
        Watermark(5000),
    ]
    assert num_keyed_state_entries(h) == 0
    assert num_event_time_timers(h) == 0


@pytest.mark.parametrize("spec", ["list", "reduce"])
def test_cleanup_after_firing_emits_nothing_more_for_sessions(spec: str) -> None:
    kwargs: dict[str, Any] = {"reduce": sum_pairs} if spec == "reduce" else {"function": lambda k, c, e: list(e)}
    h = WindowOperatorHarness(EventTimeSessionWindows.with_gap(3000), key_selector=first, allowed_lateness=10, **kwargs)
    one(h, 1, 1000)
    h.process_watermark(4998)
    h.process_watermark(14600)
    assert h.get_output() == [StreamRecord(("key2", 1), 3999), Watermark(4998), Watermark(14600)]
    assert num_keyed_state_entries(h) == 0


class FireAndPurgeAtEndAndAtCleanup(Trigger[Any, TimeWindow]):
    """Flink's ``EventTimeTriggerAccumGC``: fires and purges at the window end and at the cleanup time."""

    def __init__(self, lateness: int) -> None:
        self.lateness = lateness

    def on_element(self, element: Any, timestamp: int, window: TimeWindow, ctx: TriggerContext) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: TimeWindow, ctx: TriggerContext) -> TriggerResult:
        if time in (window.max_timestamp(), window.max_timestamp() + self.lateness):
            return TriggerResult.FIRE_AND_PURGE
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: TimeWindow, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: TimeWindow, ctx: TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: TimeWindow, ctx: OnMergeContext) -> None:
        ctx.register_event_time_timer(window.max_timestamp())


def test_a_firing_on_an_empty_pane_emits_nothing() -> None:
    def got(key: str, window: TimeWindow, values: Iterable[Pair]) -> list[str]:
        return ["GOT: " + ",".join(f"({k},{v})" for k, v in values)]

    h = WindowOperatorHarness(
        TumblingEventTimeWindows.of(2000),
        as_window_function(got),
        key_selector=first,
        trigger=FireAndPurgeAtEndAndAtCleanup(100),
        allowed_lateness=100,
    )
    one(h, 1, 1000)
    for wm in (1599, 1999, 2100, 5000):
        h.process_watermark(wm)
    assert h.get_output() == [
        Watermark(1599),
        StreamRecord("GOT: (key2,1)", 1999),
        Watermark(1999),  # fired and purged
        Watermark(2100),  # fires again at cleanup, but the pane is empty: the function is not called
        Watermark(5000),
    ]


class FireEverything(Trigger[Any, TimeWindow]):
    def on_element(self, element: Any, timestamp: int, window: TimeWindow, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE

    def on_event_time(self, time: int, window: TimeWindow, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE

    def on_processing_time(self, time: int, window: TimeWindow, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE

    def clear(self, window: TimeWindow, ctx: TriggerContext) -> None:
        return None


def test_window_contents_stay_until_the_cleanup_time_and_are_visible_as_per_window_state() -> None:
    h = WindowOperatorHarness(
        TumblingEventTimeWindows.of(2000),
        lambda k, c, e: [],  # emits nothing
        key_selector=first,
        trigger=FireEverything(),
        allowed_lateness=1,
    )
    h.process_element(("test_key", 1), 1000)
    contents = ListStateDescriptor("window-contents")

    def pane() -> list[Any]:
        state = h.window_operator.process_context.window_state().get_list_state(contents)
        return list(state.get())

    assert pane() == [("test_key", 1)]
    for wm in (1599, 1699, 1799, 1999):
        h.process_watermark(wm)
        assert pane() == [("test_key", 1)]
    h.process_watermark(2000)  # 1999 + lateness 1: cleanup
    assert pane() == []
    h.process_watermark(5000)
    assert pane() == []
    assert h.get_output() == [Watermark(wm) for wm in (1599, 1699, 1799, 1999, 2000, 5000)]
