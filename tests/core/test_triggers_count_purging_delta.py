"""``CountTrigger``, ``PurgingTrigger`` and ``DeltaTrigger`` (Flink's ``CountTriggerTest``,
``PurgingTriggerTest`` and ``DeltaTrigger``), plus the count windows built from them."""

from __future__ import annotations

from typing import Any

import pytest

from panes.testing import WindowOperatorHarness
from panes.time import LONG_MAX
from panes.windowing import (
    CountEvictor,
    CountTrigger,
    DeltaTrigger,
    EventTimeSessionWindows,
    GlobalWindow,
    GlobalWindows,
    PurgingTrigger,
    TimeWindow,
    TriggerResult,
    count_window_parts,
)
from tests.core.support import ScriptedTrigger, first, records
from tests.core.trigger_harness import TriggerTestHarness

W02, W24, W04 = TimeWindow(0, 2), TimeWindow(2, 4), TimeWindow(0, 4)


# -- CountTrigger --------------------------------------------------------------------------------------------


def test_count_trigger_fires_every_count_elements_per_window() -> None:
    h = TriggerTestHarness(CountTrigger.of(3))
    assert h.process_element(1, W02) is TriggerResult.CONTINUE
    assert h.process_element(1, W02) is TriggerResult.CONTINUE
    assert h.process_element(1, W24) is TriggerResult.CONTINUE
    assert h.num_state_entries(W02) == 1
    assert h.num_state_entries(W24) == 1
    assert h.num_event_time_timers() == h.num_processing_time_timers() == 0

    assert h.process_element(1, W02) is TriggerResult.FIRE  # the third element of W02
    assert h.num_state_entries(W02) == 0  # the count restarts after firing
    assert h.process_element(1, W24) is TriggerResult.CONTINUE
    assert h.process_element(1, W24) is TriggerResult.FIRE

    for _ in range(2):
        assert h.process_element(1, W02) is TriggerResult.CONTINUE
    assert h.process_element(1, W02) is TriggerResult.FIRE


def test_count_trigger_ignores_time_and_clear_drops_the_count() -> None:
    h = TriggerTestHarness(CountTrigger.of(3))
    h.process_element(1, W02)
    h.process_element(1, W24)
    assert h.invoke_on_event_time(1, W02) is TriggerResult.CONTINUE
    assert CountTrigger.of(1).on_processing_time(1, W02, None) is TriggerResult.CONTINUE  # type: ignore[arg-type]

    h.clear_trigger_state(W24)
    assert h.num_state_entries() == 1
    h.clear_trigger_state(W02)
    assert h.num_state_entries() == 0


def test_count_trigger_merging_sums_the_counts() -> None:
    assert CountTrigger.of(3).can_merge()
    h = TriggerTestHarness(CountTrigger.of(3))
    h.process_element(1, W02)
    h.process_element(1, W24)
    h.merge_windows(W04, [W02, W24])
    assert h.num_state_entries() == 1
    assert h.num_state_entries(W04) == 1
    assert h.process_element(1, W04) is TriggerResult.FIRE  # 1 + 1 merged, + 1
    assert h.num_state_entries() == 0


def test_count_trigger_of_one_fires_on_every_element() -> None:
    h = TriggerTestHarness(CountTrigger.of(1))
    assert [h.process_element(i, W02) for i in range(3)] == [TriggerResult.FIRE] * 3


# -- PurgingTrigger --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nested", "purging"),
    [
        (TriggerResult.CONTINUE, TriggerResult.CONTINUE),
        (TriggerResult.FIRE, TriggerResult.FIRE_AND_PURGE),
        (TriggerResult.PURGE, TriggerResult.PURGE),
        (TriggerResult.FIRE_AND_PURGE, TriggerResult.FIRE_AND_PURGE),
    ],
)
def test_purging_trigger_turns_every_fire_into_fire_and_purge(nested: TriggerResult, purging: TriggerResult) -> None:
    inner = ScriptedTrigger()
    inner.element_result = inner.event_time_result = inner.processing_time_result = nested
    trigger = PurgingTrigger.of(inner)
    ctx: Any = None
    assert trigger.on_element(1, 0, W02, ctx) is purging
    assert trigger.on_event_time(1, W02, ctx) is purging
    assert trigger.on_processing_time(1, W02, ctx) is purging


def test_purging_trigger_forwards_merge_and_clear() -> None:
    inner = ScriptedTrigger(can_merge=True)
    trigger = PurgingTrigger.of(inner)
    assert trigger.can_merge()
    assert not PurgingTrigger.of(ScriptedTrigger(can_merge=False)).can_merge()
    h = TriggerTestHarness(trigger)
    h.merge_windows(W04, [W02, W24])
    assert inner.calls.on_merge == [W04]
    assert inner.calls.clear == [W02, W24]

    # state and timers of the nested trigger are the nested trigger's (here: CountTrigger's count)
    h = TriggerTestHarness(PurgingTrigger.of(CountTrigger.of(2)))
    assert h.process_element(1, W02) is TriggerResult.CONTINUE
    assert h.process_element(1, W02) is TriggerResult.FIRE_AND_PURGE
    assert h.num_state_entries() == 0


def test_purging_trigger_rejects_a_non_trigger() -> None:
    with pytest.raises(TypeError):
        PurgingTrigger.of(lambda: None)  # type: ignore[arg-type]


# -- DeltaTrigger ------------------------------------------------------------------------------------------------


def test_delta_trigger_fires_when_the_delta_to_the_last_fired_element_exceeds_the_threshold() -> None:
    h = TriggerTestHarness(DeltaTrigger.of(2.0, lambda old, new: new - old))
    assert h.process_element(10, W02) is TriggerResult.CONTINUE  # the first element is only remembered
    assert h.num_state_entries(W02) == 1
    assert h.process_element(12, W02) is TriggerResult.CONTINUE  # 12 - 10 = 2 is not > 2
    assert h.process_element(13, W02) is TriggerResult.FIRE  # 13 - 10 = 3 > 2; 13 is the new reference
    assert h.process_element(15, W02) is TriggerResult.CONTINUE  # 15 - 13 = 2
    assert h.process_element(16, W02) is TriggerResult.FIRE
    assert h.process_element(100, W24) is TriggerResult.CONTINUE  # windows do not share the reference
    assert h.num_state_entries() == 2
    assert h.num_event_time_timers() == h.num_processing_time_timers() == 0

    h.clear_trigger_state(W02)
    assert h.num_state_entries() == 1
    assert h.process_element(0, W02) is TriggerResult.CONTINUE  # reference forgotten


def test_delta_trigger_does_not_merge_and_ignores_time() -> None:
    trigger = DeltaTrigger.of(1.0, lambda old, new: new - old)
    assert not trigger.can_merge()
    assert trigger.on_event_time(1, W02, None) is TriggerResult.CONTINUE  # type: ignore[arg-type]
    assert trigger.on_processing_time(1, W02, None) is TriggerResult.CONTINUE  # type: ignore[arg-type]


# -- count windows ---------------------------------------------------------------------------------------------


def test_count_window_is_global_windows_with_a_purging_count_trigger() -> None:
    assigner, trigger, evictor = count_window_parts(4)
    assert isinstance(assigner, GlobalWindows)
    assert isinstance(trigger, PurgingTrigger)
    assert isinstance(trigger.nested_trigger, CountTrigger)
    assert trigger.nested_trigger.count == 4
    assert evictor is None

    # Flink's WindowOperatorTest.testCountTrigger: sums per key, every 4 elements, timestamp LONG_MAX
    h = WindowOperatorHarness(assigner, reduce=lambda a, b: (a[0], a[1] + b[1]), key_selector=first, trigger=trigger)
    for key, ts in [("key2", 3000), ("key2", 3999), ("key1", 20), ("key1", 0), ("key1", 999), ("key2", 1998)]:
        h.process_element((key, 1), ts)
    assert records(h) == []
    h.process_element(("key2", 1), 1999)
    assert records(h) == [(("key2", 4), LONG_MAX)]
    h.process_element(("key2", 1), 1000)
    h.process_element(("key1", 1), 10999)
    assert records(h) == [(("key2", 4), LONG_MAX), (("key1", 4), LONG_MAX)]


def test_sliding_count_window_is_a_count_trigger_of_slide_and_a_count_evictor_of_size() -> None:
    assigner, trigger, evictor = count_window_parts(4, 2)
    assert isinstance(assigner, GlobalWindows)
    assert isinstance(trigger, CountTrigger)
    assert trigger.count == 2
    assert isinstance(evictor, CountEvictor)
    assert evictor.max_count == 4
    assert not evictor.do_evict_after

    # every 2 elements, the sum of the last (at most) 4
    h = WindowOperatorHarness(
        assigner, reduce=lambda a, b: a + b, key_selector=lambda v: 0, trigger=trigger, evictor=evictor
    )
    for value in range(1, 9):
        h.process_element(value, 0)
    sums = [1 + 2, 1 + 2 + 3 + 4, 3 + 4 + 5 + 6, 5 + 6 + 7 + 8]
    assert records(h) == [(s, GlobalWindow().max_timestamp()) for s in sums]


def test_count_triggers_merge_with_sessions() -> None:
    """Flink's ``testSessionWindowsWithCountTrigger``: merged sessions add up their counts."""
    sums: list[tuple[str, int, int, int]] = []

    def session_sum(key: Any, ctx: Any, elements: Any) -> list[Any]:
        window = ctx.window()
        sums.append((key, sum(v for _, v in elements), window.start, window.end))
        return []

    h = WindowOperatorHarness(
        EventTimeSessionWindows.with_gap(3000),
        session_sum,
        key_selector=first,
        trigger=PurgingTrigger.of(CountTrigger.of(4)),
    )
    for value, ts in [(1, 0), (2, 1000), (3, 2500), (4, 3500)]:
        h.process_element(("key2", value), ts)
    for value, ts in [(1, 10), (2, 1000)]:
        h.process_element(("key1", value), ts)
    assert sums == [("key2", 10, 0, 6500)]

    snapshot = h.snapshot()
    h = WindowOperatorHarness(
        EventTimeSessionWindows.with_gap(3000),
        session_sum,
        key_selector=first,
        trigger=PurgingTrigger.of(CountTrigger.of(4)),
    )
    h.restore(snapshot)
    h.process_element(("key1", 3), 2500)  # session [10, 5500) has 3 elements
    for value, ts in [(1, 6000), (2, 6500), (3, 7000)]:  # session [6000, 10000) has 3 elements
        h.process_element(("key1", value), ts)
    assert sums == [("key2", 10, 0, 6500)]
    # 4500 bridges the two sessions: 3 + 3 + 1 elements >= 4 fires the merged session
    h.process_element(("key1", 10), 4500)
    assert sums == [("key2", 10, 0, 6500), ("key1", 1 + 2 + 3 + 1 + 2 + 3 + 10, 10, 10000)]
