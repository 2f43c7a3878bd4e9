"""``EventTimeTrigger`` and ``ProcessingTimeTrigger`` (Flink's ``EventTimeTriggerTest`` /
``ProcessingTimeTriggerTest``), driven through the trigger harness."""

from __future__ import annotations

from panes.windowing import EventTimeTrigger, ProcessingTimeTrigger, TimeWindow, TriggerResult
from tests.core.trigger_harness import TriggerTestHarness

W02, W24, W04 = TimeWindow(0, 2), TimeWindow(2, 4), TimeWindow(0, 4)


# -- EventTimeTrigger --------------------------------------------------------------------------------------------


def test_event_time_trigger_registers_one_timer_per_window_at_its_max_timestamp_and_fires_on_it() -> None:
    h = TriggerTestHarness(EventTimeTrigger.create())
    for window in (W02, W02, W02, W24, W24):
        assert h.process_element(1, window) is TriggerResult.CONTINUE

    assert h.num_state_entries() == 0  # no state, just timers
    assert h.num_processing_time_timers() == 0
    assert h.num_event_time_timers() == 2  # the same (window, max timestamp) timer is registered once
    assert h.num_event_time_timers(W02) == 1
    assert h.num_event_time_timers(W24) == 1

    assert h.advance_watermark(2) == [(W02, TriggerResult.FIRE)]  # max timestamp 1 <= 2
    assert h.num_event_time_timers(W02) == 0
    assert h.num_event_time_timers(W24) == 1

    assert h.advance_watermark(4) == [(W24, TriggerResult.FIRE)]
    assert h.num_event_time_timers() == 0


def test_event_time_trigger_fires_at_once_for_an_element_of_a_window_the_watermark_passed() -> None:
    h = TriggerTestHarness(EventTimeTrigger.create())
    h.advance_watermark(2)
    assert h.process_element(1, W02) is TriggerResult.FIRE
    assert h.num_state_entries() == 0
    assert h.num_event_time_timers() == 0  # and no timer: that would fire a second time

    # the watermark equal to the max timestamp counts as passed (1 <= 1)
    h = TriggerTestHarness(EventTimeTrigger.create())
    h.advance_watermark(1)
    assert h.process_element(1, W02) is TriggerResult.FIRE
    assert h.process_element(1, TimeWindow(0, 3)) is TriggerResult.CONTINUE  # max timestamp 2 > 1
    assert h.num_event_time_timers() == 1


def test_event_time_trigger_ignores_other_timers_and_processing_time() -> None:
    h = TriggerTestHarness(EventTimeTrigger.create())
    assert h.invoke_on_event_time(20, W02) is TriggerResult.CONTINUE  # e.g. a cleanup timer after lateness
    assert h.invoke_on_event_time(1, W02) is TriggerResult.FIRE
    assert EventTimeTrigger().on_processing_time(1, W02, None) is TriggerResult.CONTINUE  # type: ignore[arg-type]


def test_event_time_trigger_clear_deletes_only_its_windows_timer() -> None:
    h = TriggerTestHarness(EventTimeTrigger.create())
    h.process_element(1, W02)
    h.process_element(1, W24)
    assert h.num_event_time_timers() == 2

    h.clear_trigger_state(W24)
    assert h.num_event_time_timers(W02) == 1
    assert h.num_event_time_timers(W24) == 0
    h.clear_trigger_state(W02)
    assert h.num_event_time_timers() == 0
    assert h.num_state_entries() == 0


def test_event_time_trigger_merging_registers_the_merged_windows_timer() -> None:
    assert EventTimeTrigger.create().can_merge()
    h = TriggerTestHarness(EventTimeTrigger.create())
    h.process_element(1, W02)
    h.process_element(1, W24)
    h.merge_windows(W04, [W02, W24])

    assert h.num_state_entries() == 0
    assert h.num_event_time_timers() == 1
    assert h.num_event_time_timers(W04) == 1
    assert h.advance_watermark(4) == [(W04, TriggerResult.FIRE)]
    assert h.num_event_time_timers() == 0


def test_event_time_trigger_merging_late_windows_registers_no_timer() -> None:
    # otherwise the merged window would fire twice: on the element (already late) and on the timer
    h = TriggerTestHarness(EventTimeTrigger.create())
    h.process_element(1, W02)
    h.process_element(1, W24)
    h.advance_watermark(10)
    assert h.num_event_time_timers() == 0
    h.merge_windows(W04, [W02, W24])
    assert h.num_event_time_timers() == 0


# -- ProcessingTimeTrigger ----------------------------------------------------------------------------------------


def test_processing_time_trigger_registers_one_timer_per_window_and_fires_on_it() -> None:
    h = TriggerTestHarness(ProcessingTimeTrigger.create())
    for window in (W02, W02, W02, W24, W24):
        assert h.process_element(1, window) is TriggerResult.CONTINUE

    assert h.num_state_entries() == 0
    assert h.num_event_time_timers() == 0
    assert h.num_processing_time_timers() == 2
    assert h.num_processing_time_timers(W02) == 1

    assert h.advance_processing_time(2) == [(W02, TriggerResult.FIRE)]
    assert h.num_processing_time_timers(W24) == 1
    assert h.advance_processing_time(4) == [(W24, TriggerResult.FIRE)]
    assert h.num_processing_time_timers() == 0


def test_processing_time_trigger_never_fires_on_an_element_even_when_time_is_past_the_window() -> None:
    h = TriggerTestHarness(ProcessingTimeTrigger.create())
    h.advance_processing_time(10)
    assert h.process_element(1, W02) is TriggerResult.CONTINUE
    assert h.num_processing_time_timers(W02) == 1  # fires at the next advance of processing time
    assert h.advance_processing_time(11) == [(W02, TriggerResult.FIRE)]


def test_processing_time_trigger_fires_on_any_processing_timer_and_ignores_event_time() -> None:
    trigger = ProcessingTimeTrigger.create()
    assert trigger.on_processing_time(123, W02, None) is TriggerResult.FIRE  # type: ignore[arg-type]
    assert trigger.on_event_time(1, W02, None) is TriggerResult.CONTINUE  # type: ignore[arg-type]


def test_processing_time_trigger_clear_and_merge() -> None:
    assert ProcessingTimeTrigger.create().can_merge()
    h = TriggerTestHarness(ProcessingTimeTrigger.create())
    h.process_element(1, W02)
    h.process_element(1, W24)
    h.clear_trigger_state(W24)
    assert h.num_processing_time_timers(W24) == 0
    assert h.num_processing_time_timers(W02) == 1

    h.process_element(1, W24)
    h.merge_windows(W04, [W02, W24])
    assert h.num_processing_time_timers() == 1
    assert h.num_processing_time_timers(W04) == 1
    assert h.advance_processing_time(4) == [(W04, TriggerResult.FIRE)]

    # a merged window whose end processing time already passed gets no timer
    h = TriggerTestHarness(ProcessingTimeTrigger.create())
    h.process_element(1, W02)
    h.process_element(1, W24)
    h.advance_processing_time(10)
    h.merge_windows(W04, [W02, W24])
    assert h.num_processing_time_timers() == 0
