"""``ContinuousEventTimeTrigger`` and ``ContinuousProcessingTimeTrigger`` (Flink's
``ContinuousEventTimeTriggerTest``, ``ContinuousProcessingTimeTriggerTest`` and the continuous scenarios of
``WindowOperatorTest``).

Both keep the next fire time in a min-reducing ``"fire-time"`` state: the first element sets it to the
next multiple of the interval after its time (element timestamp, or processing time), each firing moves
it one interval on, never beyond the window's max timestamp.
"""

from __future__ import annotations

from typing import Any

import pytest

from panes.testing import WindowOperatorHarness
from panes.time import LONG_MAX
from panes.windowing import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    EventTimeSessionWindows,
    GlobalWindows,
    ProcessingTimeSessionWindows,
    TimeWindow,
    TriggerResult,
    TumblingProcessingTimeWindows,
)
from tests.core.support import first, records
from tests.core.trigger_harness import TriggerTestHarness

W100, W200 = TimeWindow(0, 100), TimeWindow(100, 200)
HOUR = 3_600_000


# -- ContinuousEventTimeTrigger ----------------------------------------------------------------------------------


def test_continuous_event_time_trigger_fires_every_interval_and_at_the_window_end() -> None:
    h = TriggerTestHarness(ContinuousEventTimeTrigger.of(10))
    assert h.process_element(1, W100, timestamp=5) is TriggerResult.CONTINUE  # next fire: 10
    assert h.process_element(1, W100, timestamp=37) is TriggerResult.CONTINUE  # fire time already set
    assert h.process_element(1, W200, timestamp=105) is TriggerResult.CONTINUE  # next fire: 110
    assert h.num_state_entries() == 2
    assert h.num_event_time_timers(W100) == 2  # the fire time and the window's max timestamp
    assert h.num_event_time_timers(W200) == 2

    assert h.advance_watermark(10) == [(W100, TriggerResult.FIRE)]
    # a watermark that jumps several intervals fires once per interval (the next fire time is due at once)
    assert h.advance_watermark(35) == [(W100, TriggerResult.FIRE), (W100, TriggerResult.FIRE)]
    # the last fire time is capped at the max timestamp 99, where it coincides with the end-of-window timer
    fired = h.advance_watermark(99)
    assert fired == [(W100, TriggerResult.FIRE)] * 7  # fire times 40, 50, ..., 90, then 99
    assert h.num_event_time_timers(W100) == 0
    assert h.num_event_time_timers(W200) == 2


def test_continuous_event_time_trigger_aligns_fire_times_to_the_interval() -> None:
    h = TriggerTestHarness(ContinuousEventTimeTrigger.of(HOUR))
    window = TimeWindow(10_000_000, 20_000_000)
    h.process_element(1, window, timestamp=10_000_000)
    # 10_000_000 - (10_000_000 % 3_600_000) + 3_600_000
    expected = 10_000_000 - 2_800_000 + HOUR
    assert sorted(t.timestamp for t in h.timers.event_time_timers) == [expected, window.max_timestamp()]

    # negative timestamps use Java's remainder (sign of the dividend): -5 - (-5 % 10) + 10 = 10
    h = TriggerTestHarness(ContinuousEventTimeTrigger.of(10))
    h.process_element(1, TimeWindow(-100, 100), timestamp=-5)
    assert sorted(t.timestamp for t in h.timers.event_time_timers) == [10, 99]


def test_continuous_event_time_trigger_fires_at_once_for_late_windows_without_state_or_timers() -> None:
    h = TriggerTestHarness(ContinuousEventTimeTrigger.of(HOUR))
    h.advance_watermark(2)
    assert h.process_element(1, TimeWindow(0, 2), timestamp=0) is TriggerResult.FIRE
    assert h.num_state_entries() == 0
    assert h.num_event_time_timers() == 0
    # a timer arriving without fire-time state (a cleanup timer) is harmless
    assert h.invoke_on_event_time(20, TimeWindow(0, 2)) is TriggerResult.CONTINUE


def test_continuous_event_time_trigger_clear_drops_the_fire_time_but_not_the_end_timer() -> None:
    h = TriggerTestHarness(ContinuousEventTimeTrigger.of(HOUR))
    a, b = TimeWindow(0, 10_000_000), TimeWindow(10_000_000, 20_000_000)
    h.process_element(1, a, timestamp=0)
    h.process_element(1, b, timestamp=10_000_000)
    assert h.num_state_entries() == 2
    assert h.num_event_time_timers() == 4

    h.clear_trigger_state(b)
    assert h.num_state_entries() == 1
    assert h.num_event_time_timers(a) == 2
    assert h.num_event_time_timers(b) == 1  # the end-of-window timer stays
    h.clear_trigger_state(a)
    assert h.num_state_entries() == 0
    assert h.num_event_time_timers() == 2


def test_continuous_event_time_trigger_merging_takes_the_earliest_fire_time() -> None:
    assert ContinuousEventTimeTrigger.of(10).can_merge()
    h = TriggerTestHarness(ContinuousEventTimeTrigger.of(10))
    h.process_element(1, W100, timestamp=5)  # fire time 10
    h.process_element(1, W200, timestamp=150)  # fire time 160
    merged = TimeWindow(0, 200)
    h.merge_windows(merged, [W100, W200])

    assert h.num_state_entries() == 1
    assert h.num_state_entries(merged) == 1
    assert h.backend.get_partitioned_state(merged, ContinuousEventTimeTrigger.of(10)._state).get() == 10
    # merged windows' timers are not deleted (their fire-time state moved to the merged window)
    assert h.num_event_time_timers() == 5
    assert h.num_event_time_timers(merged) == 1

    fired = h.advance_watermark(10)
    assert (merged, TriggerResult.FIRE) in fired
    assert (W100, TriggerResult.CONTINUE) in fired  # the old window's timer finds no fire time


def test_continuous_event_time_trigger_ignores_processing_time() -> None:
    assert ContinuousEventTimeTrigger.of(10).on_processing_time(10, W100, None) is TriggerResult.CONTINUE  # type: ignore[arg-type]


def test_continuous_event_time_trigger_on_global_windows() -> None:
    """Flink's ``testContinuousWatermarkTrigger``: the global window fires every interval of event time."""
    h = WindowOperatorHarness(
        GlobalWindows.create(),
        reduce=lambda a, b: (a[0], a[1] + b[1]),
        key_selector=first,
        trigger=ContinuousEventTimeTrigger.of(3000),
    )
    h.process_element(("key1", 1), 0)  # key1's first fire time: 3000
    for ts in (3000, 3999):  # key2's first fire time: 6000
        h.process_element(("key2", 1), ts)
    for ts in (20, 999):
        h.process_element(("key1", 1), ts)
    for ts in (1998, 1999, 1000):
        h.process_element(("key2", 1), ts)

    for watermark in (1000, 2000):
        h.process_watermark(watermark)
    assert records(h) == []
    h.process_watermark(3000)
    assert records(h) == [(("key1", 3), LONG_MAX)]
    h.process_watermark(4000)
    h.process_watermark(5000)
    assert len(records(h)) == 1
    h.process_watermark(6000)
    assert sorted(records(h)[1:]) == [(("key1", 3), LONG_MAX), (("key2", 5), LONG_MAX)]
    # the global window never ends: this goes on every 3000
    h.process_watermark(9000)
    assert sorted(records(h)[3:]) == [(("key1", 3), LONG_MAX), (("key2", 5), LONG_MAX)]


def test_continuous_event_time_trigger_with_merging_sessions() -> None:
    """Flink's ``testSessionWindowsWithContinuousEventTimeTrigger``."""
    out: list[tuple[str, int, int, int]] = []

    def session_sum(key: Any, ctx: Any, elements: Any) -> list[Any]:
        out.append((key, sum(v for _, v in elements), ctx.window().start, ctx.window().end))
        return []

    def harness() -> WindowOperatorHarness:
        return WindowOperatorHarness(
            EventTimeSessionWindows.with_gap(3000),
            session_sum,
            key_selector=first,
            trigger=ContinuousEventTimeTrigger.of(2000),
        )

    h = harness()
    h.process_element(("key1", 1), 1500)  # fire time 2000
    h.process_element(("key2", 1), 0)  # fire time 2000
    h.process_element(("key2", 3), 2500)
    h.process_element(("key2", 2), 1000)  # key2: one session [0, 5500)
    h.process_watermark(2500)
    assert sorted(out) == [("key1", 1, 1500, 4500), ("key2", 6, 0, 5500)]  # next fire times: 4000

    h.process_element(("key2", 5), 4000)
    h.process_watermark(3000)
    assert len(out) == 2
    restored = harness()
    restored.restore(h.snapshot())
    restored.process_element(("key1", 2), 4000)
    restored.process_element(("key2", 4), 3500)
    restored.process_watermark(4000)
    assert sorted(out[2:]) == [("key1", 3, 1500, 7000), ("key2", 15, 0, 7000)]


# -- ContinuousProcessingTimeTrigger ------------------------------------------------------------------------------


def _sum_with_window(key: Any, ctx: Any, elements: Any) -> list[Any]:
    return [(ctx.window(), sum(elements))]


def test_continuous_processing_time_trigger_fires_every_interval_and_at_the_window_end() -> None:
    trigger = ContinuousProcessingTimeTrigger.of(5)
    assert trigger.can_merge()
    h = WindowOperatorHarness(
        TumblingProcessingTimeWindows.of(10), _sum_with_window, key_selector=lambda v: 0, trigger=trigger
    )
    h.set_processing_time(0)
    h.process_element(1)  # window [0, 10), fire time 5
    h.set_processing_time(2)
    h.process_element(2)
    h.set_processing_time(5)
    assert records(h) == [((TimeWindow(0, 10), 3), 9)]
    h.set_processing_time(7)
    h.process_element(3)
    h.set_processing_time(9)  # the next fire time is capped at the max timestamp 9
    assert records(h)[1:] == [((TimeWindow(0, 10), 6), 9)]
    h.set_processing_time(10)
    h.process_element(3)  # window [10, 20), fire time 15
    h.set_processing_time(15)
    assert records(h)[2:] == [((TimeWindow(10, 20), 3), 19)]
    h.set_processing_time(18)
    h.process_element(3)
    h.set_processing_time(20)
    assert records(h)[3:] == [((TimeWindow(10, 20), 6), 19)]


def test_continuous_processing_time_trigger_fires_at_the_window_end_once_and_then_no_more() -> None:
    """Flink 2.3.0 (read from its ``ContinuousProcessingTimeTrigger``, and run by
    ``tools/flink_oracle/ContinuousProcessingTimeProbe.java``): the timer at the max timestamp fires and leaves
    the stored fire time as it is, so it registers no next timer (which would be due at once, for ever) and a
    later element of the still open event-time window starts no new fire time."""
    h = TriggerTestHarness(ContinuousProcessingTimeTrigger.of(5))
    window = TimeWindow(0, 10)
    h.advance_processing_time(0)
    h.process_element(1, window)  # fire time min(0 + 5, 9) = 5
    assert h.advance_processing_time(5) == [(window, TriggerResult.FIRE)]  # next: min(10, 9) = 9
    assert h.advance_processing_time(10) == [(window, TriggerResult.FIRE)]
    assert h.num_processing_time_timers() == 0
    assert h.num_state_entries() == 1  # the fire time 9, kept until the window is cleared
    h.process_element(1, window)
    assert h.advance_processing_time(100) == []
    assert h.num_processing_time_timers() == 0


def test_continuous_processing_time_trigger_with_merging_sessions() -> None:
    h = WindowOperatorHarness(
        ProcessingTimeSessionWindows.with_gap(10),
        _sum_with_window,
        key_selector=lambda v: 0,
        trigger=ContinuousProcessingTimeTrigger.of(5),
    )
    h.set_processing_time(0)
    h.process_element(1)  # [0, 10), fire time 5
    h.set_processing_time(2)
    h.process_element(2)  # [2, 12) merges into [0, 12); the merged window keeps fire time 5
    merged = TimeWindow(0, 12)
    h.set_processing_time(5)
    assert records(h) == [((merged, 3), 11)]
    h.set_processing_time(9)
    assert len(records(h)) == 1
    h.set_processing_time(10)
    assert records(h)[1:] == [((merged, 3), 11)]
    h.set_processing_time(15)  # the fire time capped at 11 and the cleanup coincide: one last firing
    assert records(h)[2:] == [((merged, 3), 11)]
    h.set_processing_time(100)
    assert len(records(h)) == 3
    assert h.window_operator.backend.is_empty()


def test_continuous_processing_time_trigger_ignores_event_time_and_clear_deletes_its_timer() -> None:
    h = TriggerTestHarness(ContinuousProcessingTimeTrigger.of(10))
    h.advance_processing_time(3)
    assert h.process_element(1, W100) is TriggerResult.CONTINUE
    assert [t.timestamp for t in h.timers.processing_time_timers] == [10]
    assert h.invoke_on_event_time(10, W100) is TriggerResult.CONTINUE
    h.clear_trigger_state(W100)
    assert h.num_processing_time_timers() == 0
    assert h.num_state_entries() == 0


@pytest.mark.parametrize("trigger_type", [ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger])
@pytest.mark.parametrize("interval", [0, -1])
def test_continuous_triggers_need_a_positive_interval(trigger_type: Any, interval: int) -> None:
    with pytest.raises(ValueError, match="interval > 0"):
        trigger_type.of(interval)
