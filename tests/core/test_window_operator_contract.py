"""The contract between the window operator, its assigner, its trigger and its window function.

Derived from Flink's ``WindowOperatorContractTest`` (run there for both ``WindowOperator`` and
``EvictingWindowOperator``): with a scripted assigner and trigger, which trigger result purges or fires
what, which state entries and timers exist afterwards, when ``Trigger.clear`` and the function's ``clear``
are called, how garbage-collection (cleanup) timers behave, how merging windows keep one state window,
and what is late. Every test runs on the plain and on the evicting operator (with an evictor that keeps
everything), whose contracts are the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from panes.elements import StreamRecord
from panes.errors import UnsupportedOperationError
from panes.tags import OutputTag
from panes.testing import WindowOperatorHarness
from panes.time import LONG_MAX, LONG_MIN
from panes.windowing import GlobalWindow, TimeWindow, TriggerResult, WindowContext
from panes.windowing.triggers.base import TriggerContext
from tests.core.support import (
    STRING_STATE,
    FixedAssigner,
    NoOpEvictor,
    RecordingFunction,
    ScriptedMergingAssigner,
    ScriptedTrigger,
    identity,
    num_event_time_timers,
    num_keyed_state_entries,
    num_processing_time_timers,
)


@pytest.fixture(params=[False, True], ids=["WindowOperator", "EvictingWindowOperator"])
def evicting(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@dataclass
class Setup:
    harness: WindowOperatorHarness
    trigger: ScriptedTrigger
    function: RecordingFunction


@pytest.fixture
def make(evicting: bool) -> Any:
    """``make(assigner, lateness=0, late_tag=None, trigger=None, function=None) -> Setup``; the key is the element."""

    def build(
        assigner: Any,
        lateness: int = 0,
        late_tag: OutputTag[Any] | None = None,
        trigger: ScriptedTrigger | None = None,
        function: RecordingFunction | None = None,
    ) -> Setup:
        trigger = trigger if trigger is not None else ScriptedTrigger()
        function = function if function is not None else RecordingFunction()
        harness = WindowOperatorHarness(
            assigner,
            function,
            key_selector=identity,
            trigger=trigger,
            evictor=NoOpEvictor() if evicting else None,
            allowed_lateness=lateness,
            late_data_tag=late_tag,
        )
        harness.open()
        return Setup(harness, trigger, function)

    return build


class EventTime:
    """Flink's ``EventTimeAdaptor``: time advances by watermarks, timers are event-time timers."""

    event_time = True

    @staticmethod
    def advance(harness: WindowOperatorHarness, time: int) -> None:
        harness.process_watermark(time)

    @staticmethod
    def register(ctx: TriggerContext, time: int) -> None:
        ctx.register_event_time_timer(time)

    @staticmethod
    def delete(ctx: TriggerContext, time: int) -> None:
        ctx.delete_event_time_timer(time)

    @staticmethod
    def timers(harness: WindowOperatorHarness, window: Any = None) -> int:
        return num_event_time_timers(harness, window)

    @staticmethod
    def other_timers(harness: WindowOperatorHarness) -> int:
        return num_processing_time_timers(harness)

    @staticmethod
    def set_time_result(trigger: ScriptedTrigger, result: TriggerResult) -> None:
        trigger.event_time_result = result

    @staticmethod
    def time_calls(trigger: ScriptedTrigger) -> list[tuple[int, Any]]:
        return trigger.calls.on_event_time


class ProcessingTime:
    """Flink's ``ProcessingTimeAdaptor``: time advances by the processing-time clock."""

    event_time = False

    @staticmethod
    def advance(harness: WindowOperatorHarness, time: int) -> None:
        harness.set_processing_time(time)

    @staticmethod
    def register(ctx: TriggerContext, time: int) -> None:
        ctx.register_processing_time_timer(time)

    @staticmethod
    def delete(ctx: TriggerContext, time: int) -> None:
        ctx.delete_processing_time_timer(time)

    @staticmethod
    def timers(harness: WindowOperatorHarness, window: Any = None) -> int:
        return num_processing_time_timers(harness, window)

    @staticmethod
    def other_timers(harness: WindowOperatorHarness) -> int:
        return num_event_time_timers(harness)

    @staticmethod
    def set_time_result(trigger: ScriptedTrigger, result: TriggerResult) -> None:
        trigger.processing_time_result = result

    @staticmethod
    def time_calls(trigger: ScriptedTrigger) -> list[tuple[int, Any]]:
        return trigger.calls.on_processing_time


TimeDomain = type[EventTime] | type[ProcessingTime]
DOMAINS = pytest.mark.parametrize("domain", [EventTime, ProcessingTime], ids=["event", "processing"])


def register_and_set_state(domain: TimeDomain, time: int | None, result: TriggerResult) -> Any:
    """An ``on_element`` hook: register a timer at ``time`` (the window end when ``None``), write trigger
    state ``"hello"``, answer ``result``."""

    def hook(element: Any, timestamp: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        domain.register(ctx, window.end if time is None else time)
        ctx.get_partitioned_state(STRING_STATE).update("hello")
        return result

    return hook


def panes(function: RecordingFunction) -> list[tuple[Any, Any, list[Any]]]:
    return [(p.key, p.window, p.elements) for p in function.panes]


# -- late data --------------------------------------------------------------------------------------------------


def test_no_late_side_output_when_the_assigner_gives_no_windows_and_the_element_is_not_late(make: Any) -> None:
    late = OutputTag("late")
    assigner = FixedAssigner([])
    s = make(assigner, late_tag=late)
    s.harness.process_watermark(0)
    s.harness.process_element(0, 5)

    assert assigner.calls == [(0, 5)]
    assert s.harness.get_side_output(late) == []
    assert s.harness.num_late_records_dropped == 0


def test_late_elements_go_to_the_side_output_with_their_own_timestamp(make: Any) -> None:
    late = OutputTag("late")
    assigner = FixedAssigner([TimeWindow(0, 0)])
    s = make(assigner, late_tag=late)
    s.harness.process_watermark(20)
    s.harness.process_element(0, 5)
    assert s.harness.get_side_output(late) == [StreamRecord(0, 5)]

    # an element that no window takes is late as well when timestamp + lateness <= watermark
    assigner.windows = []
    s.harness.process_element(0, 10)
    assert assigner.calls == [(0, 5), (0, 10)]
    assert s.harness.get_side_output(late) == [StreamRecord(0, 5), StreamRecord(0, 10)]
    assert s.function.panes == []


def test_late_elements_without_a_side_output_are_counted_as_dropped(make: Any) -> None:
    s = make(FixedAssigner([TimeWindow(0, 0)]))
    s.harness.process_watermark(20)
    s.harness.process_element(0, 5)
    s.harness.process_element(0, 20)  # 20 + 0 <= 20: late too
    s.harness.process_element(0, 21)  # window skipped, but the element itself is not late
    assert s.harness.num_late_records_dropped == 2
    assert num_keyed_state_entries(s.harness) == 0


def test_side_outputs_of_the_window_function_carry_the_window_max_timestamp(make: Any) -> None:
    ints: OutputTag[int] = OutputTag("int-out")
    strs: OutputTag[str] = OutputTag("str-out")
    function = RecordingFunction()

    def emit_sides(ctx: WindowContext[Any]) -> None:
        value = function.panes[-1].elements[0]
        ctx.output(ints, value)
        ctx.output(strs, str(value))

    function.on_process = emit_sides
    s = make(FixedAssigner([TimeWindow(0, 42)]), function=function)
    s.trigger.element_result = TriggerResult.FIRE
    s.harness.process_element(17, 5)

    assert s.harness.get_side_output(ints) == [StreamRecord(17, 41)]
    assert s.harness.get_side_output(strs) == [StreamRecord("17", 41)]


# -- assigner and trigger calls --------------------------------------------------------------------------------


def test_the_assigner_is_called_once_per_element(make: Any) -> None:
    assigner = FixedAssigner([TimeWindow(0, 0)])
    s = make(assigner)
    s.harness.process_element(0, 0)
    assert assigner.calls == [(0, 0)]
    s.harness.process_element(0, 0)
    assert assigner.calls == [(0, 0), (0, 0)]


def test_every_window_of_an_element_is_evaluated_in_assigner_order(make: Any) -> None:
    s = make(FixedAssigner([TimeWindow(2, 4), TimeWindow(0, 2)]))
    s.trigger.element_result = TriggerResult.FIRE
    s.harness.process_element(0, 0)
    assert panes(s.function) == [(0, TimeWindow(2, 4), [0]), (0, TimeWindow(0, 2), [0])]


def test_on_element_is_called_once_per_window(make: Any) -> None:
    s = make(FixedAssigner([TimeWindow(2, 4), TimeWindow(0, 2)]))
    s.harness.process_element(42, 1)
    assert s.trigger.calls.on_element == [(42, 1, TimeWindow(2, 4)), (42, 1, TimeWindow(0, 2))]


def test_keys_and_windows_do_not_interfere(make: Any) -> None:
    assigner = FixedAssigner([TimeWindow(0, 2)])
    s = make(assigner)
    s.harness.process_element(0, 0)
    assigner.windows = [TimeWindow(0, 1)]
    s.harness.process_element(1, 0)

    assert s.harness.extract_output_records() == []
    assert num_keyed_state_entries(s.harness) == 2  # one pane per key
    assert num_event_time_timers(s.harness) == 2  # one cleanup timer per pane

    s.trigger.element_result = TriggerResult.FIRE
    s.harness.process_element(1, 0)
    assigner.windows = [TimeWindow(0, 2)]
    s.harness.process_element(0, 0)
    assert panes(s.function) == [(1, TimeWindow(0, 1), [1, 1]), (0, TimeWindow(0, 2), [0, 0])]


def test_results_of_a_firing_carry_the_window_max_timestamp(make: Any) -> None:
    s = make(FixedAssigner([TimeWindow(0, 2)]), function=RecordingFunction(lambda k, w, e: ["Hallo", "Ciao"]))
    s.trigger.element_result = TriggerResult.FIRE
    s.harness.process_element(0, 0)
    assert panes(s.function) == [(0, TimeWindow(0, 2), [0])]
    assert [(r.value, r.timestamp) for r in s.harness.extract_output_records()] == [("Hallo", 1), ("Ciao", 1)]


@DOMAINS
def test_results_of_a_timer_firing_carry_the_window_max_timestamp(make: Any, domain: TimeDomain) -> None:
    s = make(
        FixedAssigner([TimeWindow(0, 2)], event_time=domain.event_time),
        function=RecordingFunction(lambda k, w, e: ["Hallo", "Ciao"]),
    )
    s.trigger.element_hook = register_and_set_state(domain, 1, TriggerResult.CONTINUE)
    s.harness.process_element(0, 0)
    assert s.function.panes == []
    assert s.harness.extract_output_records() == []

    domain.set_time_result(s.trigger, TriggerResult.FIRE)
    domain.advance(s.harness, 1)
    assert panes(s.function) == [(0, TimeWindow(0, 2), [0])]
    assert [(r.value, r.timestamp) for r in s.harness.extract_output_records()] == [("Hallo", 1), ("Ciao", 1)]


# -- trigger results on elements --------------------------------------------------------------------------------

TWO_WINDOWS = [TimeWindow(2, 4), TimeWindow(0, 2)]


@pytest.mark.parametrize(
    ("result", "fired", "entries"),
    [
        # CONTINUE and FIRE keep the contents; FIRE_AND_PURGE and PURGE drop them (trigger state stays)
        (TriggerResult.CONTINUE, False, 4),
        (TriggerResult.FIRE, True, 4),
        (TriggerResult.FIRE_AND_PURGE, True, 2),
        (TriggerResult.PURGE, False, 2),
    ],
)
def test_trigger_result_on_element(make: Any, result: TriggerResult, fired: bool, entries: int) -> None:
    s = make(FixedAssigner(TWO_WINDOWS))
    assert num_keyed_state_entries(s.harness) == 0
    s.trigger.element_hook = register_and_set_state(EventTime, None, result)
    s.harness.process_element(0, 0)

    expected = [(0, TimeWindow(2, 4), [0]), (0, TimeWindow(0, 2), [0])] if fired else []
    assert panes(s.function) == expected
    assert s.trigger.calls.clear == []  # clear only at cleanup time
    assert num_keyed_state_entries(s.harness) == entries
    # the trigger's timers (at the window ends 4 and 2) and the cleanup timers (3 and 1) all stay
    assert num_event_time_timers(s.harness) == 4


@DOMAINS
@pytest.mark.parametrize(
    ("result", "fired", "entries"),
    [
        (TriggerResult.CONTINUE, False, 4),
        (TriggerResult.FIRE, True, 4),
        (TriggerResult.FIRE_AND_PURGE, True, 2),
        (TriggerResult.PURGE, False, 2),
    ],
)
def test_trigger_result_on_timer(
    make: Any, domain: TimeDomain, result: TriggerResult, fired: bool, entries: int
) -> None:
    s = make(FixedAssigner([TimeWindow(2, 4), TimeWindow(4, 6)], event_time=domain.event_time))
    domain.advance(s.harness, LONG_MIN)
    s.trigger.element_hook = register_and_set_state(domain, 1, TriggerResult.CONTINUE)
    domain.set_time_result(s.trigger, result)
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 4  # contents and trigger state of two windows
    assert domain.timers(s.harness) == 4  # the trigger's timer at 1 and the cleanup timers at 3 and 5

    domain.advance(s.harness, 1)
    assert sorted(domain.time_calls(s.trigger), key=lambda c: c[1].start) == [
        (1, TimeWindow(2, 4)),
        (1, TimeWindow(4, 6)),
    ]
    expected = [(0, TimeWindow(2, 4), [0]), (0, TimeWindow(4, 6), [0])] if fired else []
    assert sorted(panes(s.function), key=lambda p: p[1].start) == expected
    assert s.trigger.calls.clear == []
    assert num_keyed_state_entries(s.harness) == entries
    assert domain.timers(s.harness) == 2  # only the cleanup timers are left


@DOMAINS
def test_a_timer_of_a_purged_window_still_reaches_the_trigger_but_nothing_is_emitted(
    make: Any, domain: TimeDomain
) -> None:
    s = make(FixedAssigner([TimeWindow(2, 4)], event_time=domain.event_time))
    domain.advance(s.harness, LONG_MIN)

    def hook(element: Any, timestamp: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        domain.register(ctx, 0)
        return TriggerResult.PURGE

    s.trigger.element_hook = hook
    domain.set_time_result(s.trigger, TriggerResult.FIRE)
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 0
    assert domain.timers(s.harness) == 2  # the trigger's timer and the cleanup timer

    domain.advance(s.harness, 0)
    # the trigger is asked (the window's state is simply empty), the function is not
    assert domain.time_calls(s.trigger) == [(0, TimeWindow(2, 4))]
    assert s.function.panes == []
    assert domain.timers(s.harness) == 1


@DOMAINS
def test_a_timer_of_a_purged_merging_window_reaches_the_trigger_but_nothing_is_emitted(
    make: Any, domain: TimeDomain
) -> None:
    s = make(ScriptedMergingAssigner([TimeWindow(2, 4)], event_time=domain.event_time))
    domain.advance(s.harness, LONG_MIN)

    def hook(element: Any, timestamp: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        domain.register(ctx, 0)
        return TriggerResult.PURGE

    s.trigger.element_hook = hook
    domain.set_time_result(s.trigger, TriggerResult.FIRE)
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 1  # just the merging window set
    assert domain.timers(s.harness) == 2

    domain.advance(s.harness, 0)
    assert domain.time_calls(s.trigger) == [(0, TimeWindow(2, 4))]
    assert s.function.panes == []
    assert domain.timers(s.harness) == 1


@DOMAINS
def test_a_timer_of_a_garbage_collected_merging_window_is_ignored(make: Any, domain: TimeDomain) -> None:
    s = make(ScriptedMergingAssigner([TimeWindow(2, 4)], event_time=domain.event_time))
    domain.advance(s.harness, LONG_MIN)
    s.trigger.element_hook = lambda e, t, w, ctx: (domain.register(ctx, 10), TriggerResult.CONTINUE)[1]
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 2  # contents and merging window set
    assert domain.timers(s.harness) == 2  # the trigger's timer (10) and the cleanup timer (3)

    domain.advance(s.harness, 4)  # cleanup at 3
    assert s.trigger.calls.clear == [TimeWindow(2, 4)]
    assert num_keyed_state_entries(s.harness) == 0
    assert domain.timers(s.harness) == 1  # our trigger did not delete its timer
    assert domain.time_calls(s.trigger) == [(3, TimeWindow(2, 4))]
    assert s.function.panes == []

    domain.advance(s.harness, 10)
    assert domain.time_calls(s.trigger) == [(3, TimeWindow(2, 4))]  # the window is gone: not called again


# -- timers ------------------------------------------------------------------------------------------------------


@DOMAINS
def test_trigger_timers_are_registered_and_deleted_per_window(make: Any, domain: TimeDomain) -> None:
    s = make(FixedAssigner([TimeWindow(0, 2)], event_time=domain.event_time))
    assert domain.timers(s.harness) == 0

    def registering(time: int) -> Any:
        return lambda e, t, w, ctx: (domain.register(ctx, time), TriggerResult.CONTINUE)[1]

    def deleting(time: int) -> Any:
        return lambda e, t, w, ctx: (domain.delete(ctx, time), TriggerResult.CONTINUE)[1]

    s.trigger.element_hook = registering(17)
    s.harness.process_element(0, 0)
    assert domain.timers(s.harness) == 2  # +1: the cleanup timer
    s.trigger.element_hook = registering(42)
    s.harness.process_element(0, 0)
    assert domain.timers(s.harness) == 3
    s.trigger.element_hook = deleting(42)
    s.harness.process_element(0, 0)
    s.trigger.element_hook = deleting(17)
    s.harness.process_element(0, 0)
    assert domain.timers(s.harness) == 1


@DOMAINS
def test_trigger_timers_fire_when_time_reaches_them(make: Any, domain: TimeDomain) -> None:
    window = TimeWindow(0, 100)
    s = make(FixedAssigner([window], event_time=domain.event_time))
    for time in (1, 17, 42):
        s.trigger.element_hook = lambda e, t, w, ctx, at=time: (domain.register(ctx, at), TriggerResult.CONTINUE)[1]
        s.harness.process_element(0, 0)
    assert domain.timers(s.harness) == 4

    domain.advance(s.harness, 1)
    assert domain.time_calls(s.trigger) == [(1, window)]
    assert domain.timers(s.harness) == 3
    domain.advance(s.harness, 15)
    assert domain.time_calls(s.trigger) == [(1, window)]
    domain.advance(s.harness, 42)
    assert domain.time_calls(s.trigger) == [(1, window), (17, window), (42, window)]
    assert domain.timers(s.harness) == 1


@DOMAINS
def test_a_deleted_timer_does_not_fire(make: Any, domain: TimeDomain) -> None:
    window = TimeWindow(0, 100)
    s = make(FixedAssigner([window], event_time=domain.event_time))
    s.trigger.element_hook = lambda e, t, w, ctx: (domain.register(ctx, 1), TriggerResult.CONTINUE)[1]
    s.harness.process_element(0, 0)
    assert domain.timers(s.harness) == 2
    s.trigger.element_hook = lambda e, t, w, ctx: (domain.delete(ctx, 1), TriggerResult.CONTINUE)[1]
    s.harness.process_element(0, 0)
    assert domain.timers(s.harness) == 1
    s.trigger.element_hook = lambda e, t, w, ctx: (domain.register(ctx, 2), TriggerResult.CONTINUE)[1]
    s.harness.process_element(0, 0)
    assert domain.timers(s.harness) == 2

    domain.advance(s.harness, 50)
    assert domain.time_calls(s.trigger) == [(2, window)]
    assert domain.timers(s.harness) == 1


# -- merging windows -----------------------------------------------------------------------------------------


def test_merge_windows_is_offered_the_in_flight_windows_plus_the_new_one(make: Any) -> None:
    assigner = ScriptedMergingAssigner([TimeWindow(2, 4), TimeWindow(0, 2)])
    s = make(assigner)
    s.harness.process_element(0, 0)
    assert assigner.offered == [[TimeWindow(2, 4)], [TimeWindow(2, 4), TimeWindow(0, 2)]]


def _merging_trigger(s: Setup, domain: TimeDomain) -> None:
    """on_element and on_merge register a timer at 0 and write trigger state; clear undoes both."""
    s.trigger.element_hook = register_and_set_state(domain, 0, TriggerResult.CONTINUE)

    def on_merge(window: Any, ctx: Any) -> None:
        domain.register(ctx, 0)
        ctx.get_partitioned_state(STRING_STATE).update("hello")

    def clear(window: Any, ctx: TriggerContext) -> None:
        domain.delete(ctx, 0)
        ctx.get_partitioned_state(STRING_STATE).clear()

    s.trigger.merge_hook = on_merge
    s.trigger.clear_hook = clear


@DOMAINS
def test_windows_are_merged_eagerly_into_one_state_window(make: Any, domain: TimeDomain) -> None:
    assigner = ScriptedMergingAssigner([TimeWindow(0, 2)], event_time=domain.event_time)
    s = make(assigner)
    domain.advance(s.harness, LONG_MIN)
    _merging_trigger(s, domain)
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 3  # contents, trigger state, merging window set
    assert domain.timers(s.harness) == 2  # the trigger's timer and the cleanup timer

    assigner.windows = [TimeWindow(2, 4)]
    assigner.merge_plan = ([TimeWindow(0, 2), TimeWindow(2, 4)], TimeWindow(0, 4))
    s.trigger.element_hook = None  # on_element does nothing now: on_merge must set up the merged window
    s.harness.process_element(0, 0)

    assert s.trigger.calls.on_merge == [TimeWindow(0, 4)]
    assert s.trigger.calls.clear == [TimeWindow(0, 2)]  # the merged-away window, not the new one
    assert num_keyed_state_entries(s.harness) == 3
    assert domain.timers(s.harness) == 2
    assert domain.timers(s.harness, TimeWindow(0, 4)) == 2  # on_merge's timer and the new cleanup timer


@DOMAINS
def test_merging_that_moves_a_window_end_behind_the_current_time_is_rejected(make: Any, domain: TimeDomain) -> None:
    lateness = 10 if domain.event_time else 0  # no allowed lateness in processing time
    assigner = ScriptedMergingAssigner([TimeWindow(0, 22)], event_time=domain.event_time)
    s = make(assigner, lateness=lateness)
    domain.advance(s.harness, 0)
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 2
    assert domain.timers(s.harness) == 1

    domain.advance(s.harness, 20)
    assert num_keyed_state_entries(s.harness) == 2
    assert domain.timers(s.harness) == 1

    # a misbehaving assigner shrinks the window; it still ends after time 20 (+ lateness): accepted
    assigner.windows = [TimeWindow(0, 25)]
    shrunk = TimeWindow(0, 20 - lateness + 2)
    assigner.merge_plan = ([TimeWindow(0, 22), TimeWindow(0, 25)], shrunk)
    s.harness.process_element(0, 0)

    # shrinking it to end exactly at time 20 (+ lateness) makes it late by merging: refused
    assigner.merge_plan = ([shrunk, TimeWindow(0, 25)], TimeWindow(0, 20 - lateness + 1))
    with pytest.raises(UnsupportedOperationError, match="cannot become earlier than the current"):
        s.harness.process_element(0, 0)


@DOMAINS
def test_merging_existing_windows_keeps_one_state_window_and_one_cleanup_timer(make: Any, domain: TimeDomain) -> None:
    assigner = ScriptedMergingAssigner([TimeWindow(0, 2)], event_time=domain.event_time)
    s = make(assigner)
    domain.advance(s.harness, LONG_MIN)
    _merging_trigger(s, domain)
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 3
    assert domain.timers(s.harness) == 2

    assigner.windows = [TimeWindow(2, 4)]  # no merge yet
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 5  # two contents, two trigger states, one window set
    assert domain.timers(s.harness) == 4

    assigner.windows = [TimeWindow(1, 3)]
    assigner.merge_plan = ([TimeWindow(0, 2), TimeWindow(2, 4), TimeWindow(1, 3)], TimeWindow(0, 4))
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 3
    assert domain.timers(s.harness) == 2
    assert s.harness.extract_output_records() == []


def test_purge_on_element_keeps_the_merging_window_set(make: Any) -> None:
    s = make(ScriptedMergingAssigner([TimeWindow(0, 2)]))
    s.trigger.element_result = TriggerResult.PURGE
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 1
    assert num_event_time_timers(s.harness) == 1  # the cleanup timer
    assert s.harness.get_output() == []


@DOMAINS
def test_purge_on_timer_keeps_the_merging_window_set(make: Any, domain: TimeDomain) -> None:
    s = make(ScriptedMergingAssigner([TimeWindow(0, 4)], event_time=domain.event_time))
    s.trigger.element_hook = lambda e, t, w, ctx: (domain.register(ctx, 1), TriggerResult.CONTINUE)[1]
    domain.set_time_result(s.trigger, TriggerResult.PURGE)
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 2
    assert domain.timers(s.harness) == 2

    domain.advance(s.harness, 1)
    assert num_keyed_state_entries(s.harness) == 1
    assert domain.timers(s.harness) == 1
    assert s.harness.extract_output_records() == []


def test_per_window_state_is_refused_for_merging_windows(make: Any) -> None:
    function = RecordingFunction()
    function.on_process = lambda ctx: ctx.window_state().get_state(STRING_STATE).update("hello")
    s = make(ScriptedMergingAssigner([TimeWindow(0, 20)]), lateness=20, function=function)
    s.trigger.element_result = TriggerResult.FIRE
    with pytest.raises(UnsupportedOperationError, match="Per-window state is not allowed when using merging windows"):
        s.harness.process_element(0, 0)


# -- garbage collection --------------------------------------------------------------------------------------


@DOMAINS
def test_no_cleanup_timer_for_the_global_window(make: Any, domain: TimeDomain) -> None:
    assert GlobalWindow().max_timestamp() == LONG_MAX
    s = make(FixedAssigner([GlobalWindow()], event_time=domain.event_time))
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 1  # just the contents
    assert num_event_time_timers(s.harness) == 0
    assert num_processing_time_timers(s.harness) == 0


def test_no_event_time_cleanup_timer_when_max_timestamp_plus_lateness_overflows(make: Any) -> None:
    s = make(FixedAssigner([TimeWindow(0, LONG_MAX - 10)]), lateness=20)
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 1
    assert num_event_time_timers(s.harness) == 0
    assert num_processing_time_timers(s.harness) == 0


def test_processing_time_cleanup_is_the_window_max_timestamp_whatever_the_lateness(make: Any) -> None:
    window = TimeWindow(0, LONG_MAX - 10)
    s = make(FixedAssigner([window], event_time=False), lateness=20)
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 1
    assert num_event_time_timers(s.harness) == 0
    assert num_processing_time_timers(s.harness) == 1
    assert s.trigger.calls.clear == []

    s.harness.set_processing_time(window.max_timestamp())
    assert s.trigger.calls.clear == [window]
    assert num_processing_time_timers(s.harness) == 0
    assert num_keyed_state_entries(s.harness) == 0


@DOMAINS
def test_the_cleanup_timer_reaches_the_trigger_and_may_fire_a_last_time(make: Any, domain: TimeDomain) -> None:
    lateness = 20 if domain.event_time else 0
    window = TimeWindow(0, 20)
    s = make(FixedAssigner([window], event_time=domain.event_time), lateness=lateness)
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 1
    assert domain.timers(s.harness) == 1
    assert domain.other_timers(s.harness) == 0
    assert s.trigger.calls.clear == []

    domain.set_time_result(s.trigger, TriggerResult.FIRE)
    domain.advance(s.harness, 19 + lateness)  # 19 is the window's max timestamp
    assert domain.time_calls(s.trigger) == [(19 + lateness, window)]
    assert panes(s.function) == [(0, window, [0])]
    assert s.trigger.calls.clear == [window]
    assert s.function.cleared == [window]
    assert domain.timers(s.harness) == 0
    assert domain.other_timers(s.harness) == 0


@DOMAINS
def test_a_trigger_timer_at_the_cleanup_time_is_the_same_timer(make: Any, domain: TimeDomain) -> None:
    window = TimeWindow(0, 20)
    s = make(FixedAssigner([window], event_time=domain.event_time))
    s.trigger.element_hook = lambda e, t, w, ctx: (domain.register(ctx, 19), TriggerResult.CONTINUE)[1]
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 1
    assert domain.timers(s.harness) == 1  # de-duplicated with the cleanup timer
    assert domain.other_timers(s.harness) == 0

    domain.advance(s.harness, 19)
    assert s.trigger.calls.clear == [window]
    assert domain.time_calls(s.trigger) == [(19, window)]
    assert domain.timers(s.harness) == 0
    assert domain.other_timers(s.harness) == 0


def _trigger_with_far_timer(s: Setup, domain: TimeDomain, result: TriggerResult) -> None:
    s.trigger.element_hook = register_and_set_state(domain, 1000, result)

    def clear(window: Any, ctx: TriggerContext) -> None:
        domain.delete(ctx, 1000)
        ctx.get_partitioned_state(STRING_STATE).clear()

    s.trigger.clear_hook = clear


@DOMAINS
@pytest.mark.parametrize(
    ("merging", "result", "entries_before"),
    [
        (False, TriggerResult.CONTINUE, 2),  # contents and trigger state
        (False, TriggerResult.PURGE, 1),  # trigger state only
        (True, TriggerResult.PURGE, 2),  # trigger state and merging window set
    ],
)
def test_cleanup_drops_every_state_and_timer_of_the_window(
    make: Any, domain: TimeDomain, merging: bool, result: TriggerResult, entries_before: int
) -> None:
    cls = ScriptedMergingAssigner if merging else FixedAssigner
    s = make(cls([TimeWindow(0, 20)], event_time=domain.event_time), lateness=20)
    _trigger_with_far_timer(s, domain, result)
    s.harness.process_element(0, 0)
    assert s.trigger.calls.clear == []
    assert num_keyed_state_entries(s.harness) == entries_before
    assert domain.timers(s.harness) == 2  # the trigger's timer and the cleanup timer
    assert domain.other_timers(s.harness) == 0

    domain.advance(s.harness, 19 + 20)
    assert s.trigger.calls.clear == [TimeWindow(0, 20)]
    assert num_keyed_state_entries(s.harness) == 0
    assert domain.timers(s.harness) == 0
    assert domain.other_timers(s.harness) == 0


@DOMAINS
def test_the_merging_window_set_is_cleared_at_cleanup(make: Any, domain: TimeDomain) -> None:
    s = make(ScriptedMergingAssigner([TimeWindow(0, 20)], event_time=domain.event_time), lateness=20)
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 2
    assert domain.timers(s.harness) == 1
    domain.advance(s.harness, 19 + 20)
    assert num_keyed_state_entries(s.harness) == 0
    assert domain.timers(s.harness) == 0


@DOMAINS
def test_per_window_state_of_the_function_is_cleared_through_its_clear(make: Any, domain: TimeDomain) -> None:
    function = RecordingFunction()
    function.on_process = lambda ctx: ctx.window_state().get_state(STRING_STATE).update("hello")
    function.on_clear = lambda ctx: ctx.window_state().get_state(STRING_STATE).clear()
    s = make(FixedAssigner([TimeWindow(0, 20)], event_time=domain.event_time), lateness=20, function=function)
    s.trigger.element_result = TriggerResult.FIRE
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 2  # contents and the function's per-window state
    assert domain.timers(s.harness) == 1

    domain.advance(s.harness, 19 + 20)
    assert function.cleared == [TimeWindow(0, 20)]
    assert num_keyed_state_entries(s.harness) == 0
    assert domain.timers(s.harness) == 0


# -- allowed lateness ------------------------------------------------------------------------------------------


def test_elements_within_the_allowed_lateness_are_processed(make: Any) -> None:
    s = make(FixedAssigner([TimeWindow(0, 2)]), lateness=20)
    s.trigger.element_result = TriggerResult.FIRE
    s.harness.process_watermark(20)  # max timestamp 1 + lateness 20 = 21 > 20: not late yet
    s.harness.process_element(0, 0)
    assert panes(s.function) == [(0, TimeWindow(0, 2), [0])]
    assert s.trigger.calls.clear == []
    assert num_keyed_state_entries(s.harness) == 1
    assert num_event_time_timers(s.harness) == 1  # the cleanup timer at 21


def test_windows_past_their_cleanup_time_are_dropped(make: Any) -> None:
    s = make(FixedAssigner([TimeWindow(0, 2)]), lateness=20)
    s.trigger.element_result = TriggerResult.FIRE
    s.harness.process_watermark(21)  # 1 + 20 <= 21
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 0
    assert num_event_time_timers(s.harness) == 0
    assert num_processing_time_timers(s.harness) == 0
    assert s.harness.extract_output_records() == []
    assert s.trigger.calls.on_element == []
    assert s.harness.num_late_records_dropped == 1


# -- snapshots and time --------------------------------------------------------------------------------------


def test_state_timers_and_merging_window_set_survive_snapshot_and_restore(evicting: bool, make: Any) -> None:
    s = make(ScriptedMergingAssigner([TimeWindow(2, 4), TimeWindow(0, 2)]))
    s.trigger.element_hook = register_and_set_state(EventTime, 0, TriggerResult.CONTINUE)
    s.trigger.event_time_result = TriggerResult.FIRE_AND_PURGE
    s.harness.process_element(0, 0)
    assert num_keyed_state_entries(s.harness) == 5  # contents and trigger state of two windows + window set
    assert num_event_time_timers(s.harness) == 4
    snapshot = s.harness.snapshot()

    trigger = ScriptedTrigger()

    def clear(window: Any, ctx: TriggerContext) -> None:
        ctx.delete_event_time_timer(0)
        ctx.get_partitioned_state(STRING_STATE).clear()

    trigger.clear_hook = clear
    trigger.event_time_hook = lambda t, w, ctx: TriggerResult.FIRE if t == 0 else TriggerResult.CONTINUE
    function = RecordingFunction()
    restored = WindowOperatorHarness(
        ScriptedMergingAssigner(),
        function,
        key_selector=identity,
        trigger=trigger,
        evictor=NoOpEvictor() if evicting else None,
    )
    restored.restore(snapshot)
    assert restored.extract_output_records() == []
    assert num_keyed_state_entries(restored) == 5
    assert num_event_time_timers(restored) == 4
    assert trigger.calls.clear == []

    restored.process_watermark(20)
    assert sorted(trigger.calls.clear, key=lambda w: w.start) == [TimeWindow(0, 2), TimeWindow(2, 4)]
    assert sorted(panes(function), key=lambda p: p[1].start) == [
        (0, TimeWindow(0, 2), [0]),
        (0, TimeWindow(2, 4), [0]),
    ]
    # the cleanup timers reach the trigger too
    assert len(trigger.calls.on_event_time) == 4
    assert trigger.calls.on_event_time.count((0, TimeWindow(0, 2))) == 1
    assert trigger.calls.on_event_time.count((0, TimeWindow(2, 4))) == 1
    assert num_keyed_state_entries(restored) == 0
    assert num_event_time_timers(restored) == 0


@DOMAINS
def test_the_function_sees_the_operators_current_time(make: Any, domain: TimeDomain) -> None:
    seen: list[int] = []
    function = RecordingFunction()

    def look(ctx: WindowContext[Any]) -> None:
        seen.append(ctx.current_watermark() if domain.event_time else ctx.current_processing_time())

    function.on_process = look
    function.on_clear = look
    s = make(FixedAssigner([TimeWindow(0, 20)], event_time=domain.event_time), lateness=20, function=function)
    s.trigger.element_result = TriggerResult.FIRE
    domain.advance(s.harness, 10)
    s.harness.process_element(0, 0)
    assert len(function.panes) == 1
    domain.advance(s.harness, 100)
    assert function.cleared == [TimeWindow(0, 20)]
    assert seen == [10, 100]


def test_nothing_is_late_for_processing_time_windows(make: Any) -> None:
    late = OutputTag("late")
    s = make(FixedAssigner([TimeWindow(0, 0)], event_time=False), late_tag=late)
    s.harness.process_watermark(20)
    s.harness.process_element(0, 5)
    assert s.harness.get_side_output(late) == []
    assert s.harness.num_late_records_dropped == 0
    assert s.trigger.calls.on_element == [(0, 5, TimeWindow(0, 0))]


def test_global_state_of_the_function_is_per_key_across_windows(make: Any) -> None:
    from panes.state.descriptors import ValueStateDescriptor

    firings = ValueStateDescriptor("firings")
    counts: list[tuple[Any, int]] = []
    function = RecordingFunction()

    def count(ctx: WindowContext[Any]) -> None:
        state = ctx.global_state().get_state(firings)
        state.update((state.value() or 0) + 1)
        counts.append((function.panes[-1].key, state.value()))

    function.on_process = count
    assigner = FixedAssigner([TimeWindow(0, 10)])
    s = make(assigner, function=function)
    s.trigger.element_result = TriggerResult.FIRE
    s.harness.process_element(1, 0)
    assigner.windows = [TimeWindow(10, 20)]
    s.harness.process_element(1, 0)
    s.harness.process_element(2, 0)
    assert counts == [(1, 1), (1, 2), (2, 1)]
