"""``ProcessingTimeoutTrigger`` (Flink's ``ProcessingTimeoutTriggerTest``).

The harness's processing time starts at ``LONG_MIN``, as Flink's ``TriggerTestHarness``; the timeout is
``processing time of the first element + timeout``.
"""

from __future__ import annotations

import pytest

from panes.errors import UnsupportedOperationError
from panes.testing import WindowOperatorHarness
from panes.time import LONG_MIN
from panes.windowing import (
    CountTrigger,
    EventTimeSessionWindows,
    EventTimeTrigger,
    ProcessingTimeoutTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    TimeWindow,
    TriggerResult,
)
from tests.core.support import ScriptedTrigger
from tests.core.trigger_harness import TriggerTestHarness

W = TimeWindow(0, 2)


def test_timeout_fires_once_after_the_first_element_and_clears_everything() -> None:
    h = TriggerTestHarness(ProcessingTimeoutTrigger.of(CountTrigger.of(3), 50, False, True))
    assert h.process_element(1, W) is TriggerResult.CONTINUE
    assert h.process_element(1, W) is TriggerResult.CONTINUE
    assert h.num_state_entries() == 2  # the timeout and the nested count
    assert h.num_processing_time_timers() == 1
    assert h.num_event_time_timers() == 0

    assert h.advance_processing_time(LONG_MIN + 40) == []
    assert h.advance_processing_time(LONG_MIN + 50) == [(W, TriggerResult.FIRE)]
    assert h.num_state_entries() == 0
    assert h.num_processing_time_timers() == 0

    # the nested trigger still works, and its firing clears the timeout
    assert h.process_element(1, W) is TriggerResult.CONTINUE
    assert h.process_element(1, W) is TriggerResult.CONTINUE
    assert h.process_element(1, W) is TriggerResult.FIRE
    assert h.num_state_entries() == 0
    assert h.num_processing_time_timers() == 0


def test_timeout_restarts_with_each_element_when_reset_is_on() -> None:
    h = TriggerTestHarness(ProcessingTimeoutTrigger.of(CountTrigger.of(3), 50, True, True))
    assert h.advance_processing_time(0) == []
    assert h.process_element(1, W) is TriggerResult.CONTINUE  # timeout at 50
    assert h.advance_processing_time(10) == []
    assert h.process_element(1, W) is TriggerResult.CONTINUE  # timeout moves to 60
    assert h.num_state_entries() == 2
    assert h.num_processing_time_timers() == 1

    assert h.advance_processing_time(50) == []
    assert h.advance_processing_time(60) == [(W, TriggerResult.FIRE)]
    assert h.num_state_entries() == 0
    assert h.num_processing_time_timers() == 0


def test_timeout_without_clear_keeps_the_state_of_both_triggers() -> None:
    h = TriggerTestHarness(ProcessingTimeoutTrigger.of(CountTrigger.of(3), 50, False, False))
    h.process_element(1, W)
    h.process_element(1, W)
    assert h.advance_processing_time(LONG_MIN + 50) == [(W, TriggerResult.FIRE)]
    assert h.num_state_entries() == 2
    assert h.num_processing_time_timers() == 0
    # the nested count kept its two elements: the third fires it (and that firing clears everything)
    assert h.process_element(1, W) is TriggerResult.FIRE
    assert h.num_state_entries() == 0


def test_timeout_purges_when_the_nested_trigger_purges() -> None:
    h = TriggerTestHarness(
        ProcessingTimeoutTrigger.of(PurgingTrigger.of(ProcessingTimeTrigger.create()), 50, False, False)
    )
    assert h.process_element(1, W) is TriggerResult.CONTINUE
    assert h.process_element(1, W) is TriggerResult.CONTINUE
    assert h.num_state_entries() == 1  # the timeout only
    assert h.num_processing_time_timers() == 2  # the timeout and the nested trigger's window-end timer

    assert h.advance_processing_time(LONG_MIN + 50) == [(W, TriggerResult.FIRE_AND_PURGE)]
    assert h.num_state_entries() == 1
    assert h.num_processing_time_timers() == 1


@pytest.mark.parametrize(
    ("nested", "result"),
    [
        (TriggerResult.CONTINUE, TriggerResult.FIRE),
        (TriggerResult.FIRE, TriggerResult.FIRE),
        (TriggerResult.PURGE, TriggerResult.FIRE_AND_PURGE),
        (TriggerResult.FIRE_AND_PURGE, TriggerResult.FIRE_AND_PURGE),
    ],
)
def test_every_timer_of_the_window_is_a_firing(nested: TriggerResult, result: TriggerResult) -> None:
    inner = ScriptedTrigger()
    inner.event_time_result = inner.processing_time_result = nested
    h = TriggerTestHarness(ProcessingTimeoutTrigger.of(inner, 50))
    assert h.invoke_on_event_time(1, W) is result
    assert h.invoke_on_processing_time(1, W) is result


def test_nested_firing_on_element_is_passed_through_and_clears_the_timeout() -> None:
    h = TriggerTestHarness(ProcessingTimeoutTrigger.of(EventTimeTrigger.create(), 50))
    h.advance_watermark(5)
    assert h.process_element(1, W) is TriggerResult.FIRE  # late for EventTimeTrigger
    assert h.num_processing_time_timers() == 0
    assert h.num_state_entries() == 0


def test_the_timeout_trigger_cannot_merge() -> None:
    trigger = ProcessingTimeoutTrigger.of(EventTimeTrigger.create(), 50)
    assert not trigger.can_merge()
    with pytest.raises(UnsupportedOperationError):
        WindowOperatorHarness(
            EventTimeSessionWindows.with_gap(10), lambda k, c, e: [], key_selector=lambda v: v, trigger=trigger
        )
