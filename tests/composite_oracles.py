"""Hand-written triggers, in Flink's trigger API, that do what a composite trigger of a scenario file does, and
the accumulation modes written as what a Flink user gets today.

Each trigger here has a Java twin of the same name and rule in ``tools/flink_oracle/OracleTriggers.java``, which
real Flink 2.3.0 ran to produce the expected output of the composite and discarding scenarios
(``tests/scenarios/61_*`` to ``67_*``, ``NN_name.flink.json``; the scenario's ``flink_trigger`` names the twin).
``tests/core/test_conformance_harness.py`` checks that each :class:`Oracle` here gives that same output on the
operator harness, so the Python triggers stay the Java ones' equals; the property tests
(``tests/core/test_composite_triggers.py``) check the composites against them on random streams, where Flink
does not run. The retracting scenario (``68``) has no Flink form: its expected output is this module's
``with_retractions`` of the accumulating run.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from panes.state.descriptors import ReducingStateDescriptor, ValueStateDescriptor
from panes.testing.scenario import collect_result
from panes.windowing.triggers.base import OnMergeContext, Trigger, TriggerContext, TriggerResult
from panes.windowing.triggers.event_time import EventTimeTrigger
from panes.windowing.triggers.purging import PurgingTrigger
from panes.windowing.windows import Window


def _or(a: bool, b: bool) -> bool:
    return a or b


class CountOrEndOfWindow(Trigger[Any, Window]):
    """``AnyOf(CountTrigger.of(n), EventTimeTrigger())``: fire every ``n`` elements (counting again after each
    firing), at the window's end, and for every element after it."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.count = ReducingStateDescriptor("count", operator.add)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        late = window.max_timestamp() <= ctx.get_current_watermark()
        if not late:
            ctx.register_event_time_timer(window.max_timestamp())
        count = ctx.get_partitioned_state(self.count)
        count.add(1)
        counted = count.get() >= self.n
        if counted:
            count.clear()
        return TriggerResult.FIRE if late or counted else TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        ctx.merge_partitioned_state(self.count)
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())
        ctx.get_partitioned_state(self.count).clear()


class EarlyAndLate(Trigger[Any, Window]):
    """``AfterWatermark(early=CountTrigger.of(early), late=CountTrigger.of(late))``: before the window's end, fire
    every ``early`` elements; at its end, fire (and forget the early count); after it, fire every ``late``
    elements."""

    def __init__(self, early: int, late: int) -> None:
        self.early, self.late = early, late
        self.early_count = ReducingStateDescriptor("early", operator.add)
        self.late_count = ReducingStateDescriptor("late", operator.add)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        late = window.max_timestamp() <= ctx.get_current_watermark()
        if not late:
            ctx.register_event_time_timer(window.max_timestamp())
        count = ctx.get_partitioned_state(self.late_count if late else self.early_count)
        count.add(1)
        if count.get() >= (self.late if late else self.early):
            count.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if time != window.max_timestamp():
            return TriggerResult.CONTINUE
        ctx.get_partitioned_state(self.early_count).clear()
        return TriggerResult.FIRE

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        ctx.merge_partitioned_state(self.early_count)
        ctx.merge_partitioned_state(self.late_count)
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())
        ctx.get_partitioned_state(self.early_count).clear()
        ctx.get_partitioned_state(self.late_count).clear()


class CountAndEndOfWindow(Trigger[Any, Window]):
    """``AllOf(CountTrigger.of(n), EventTimeTrigger())``: fire once both "n elements counted" (counting again
    after each n) and "the window's end passed" (at its end, and for every element after it) happened since the
    last firing."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.count = ReducingStateDescriptor("count", operator.add)
        self.counted = ReducingStateDescriptor("counted", _or)
        self.ended = ReducingStateDescriptor("ended", _or)

    def _both(self, ctx: TriggerContext) -> TriggerResult:
        counted, ended = ctx.get_partitioned_state(self.counted), ctx.get_partitioned_state(self.ended)
        if counted.get() and ended.get():
            counted.clear()
            ended.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            ctx.get_partitioned_state(self.ended).add(True)
        else:
            ctx.register_event_time_timer(window.max_timestamp())
        count = ctx.get_partitioned_state(self.count)
        count.add(1)
        if count.get() >= self.n:
            count.clear()
            ctx.get_partitioned_state(self.counted).add(True)
        return self._both(ctx)

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if time != window.max_timestamp():
            return TriggerResult.CONTINUE
        ctx.get_partitioned_state(self.ended).add(True)
        return self._both(ctx)

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        for descriptor in (self.count, self.counted, self.ended):
            ctx.merge_partitioned_state(descriptor)
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())
        for descriptor in (self.count, self.counted, self.ended):
            ctx.get_partitioned_state(descriptor).clear()


COUNTING, AT_THE_END, DONE = 0, 1, 2


class CountThenEndOfWindow(Trigger[Any, Window]):
    """``AfterEach(CountTrigger.of(n), EventTimeTrigger())``, and with ``repeat``
    ``Repeatedly(AfterEach(CountTrigger.of(n), EventTimeTrigger()))``: count elements until the n-th fires; from
    then on wait for the window's end (an element seen then registers the end's timer; one that comes after the
    end fires at once), fire there, and stop (or, with ``repeat``, count again). Windows do not merge."""

    def __init__(self, n: int, repeat: bool = False) -> None:
        self.n, self.repeat = n, repeat
        self.count = ReducingStateDescriptor("count", operator.add)
        self.phase = ValueStateDescriptor("phase")
        self.waiting = ValueStateDescriptor("waiting")
        """Whether the end's timer was registered while waiting for the end (only such a timer fires)."""

    def _finish(self, ctx: TriggerContext) -> TriggerResult:
        ctx.get_partitioned_state(self.waiting).clear()
        ctx.get_partitioned_state(self.phase).update(COUNTING if self.repeat else DONE)
        return TriggerResult.FIRE

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        phase = ctx.get_partitioned_state(self.phase).value() or COUNTING
        if phase == COUNTING:
            count = ctx.get_partitioned_state(self.count)
            count.add(1)
            if count.get() < self.n:
                return TriggerResult.CONTINUE
            count.clear()
            ctx.get_partitioned_state(self.phase).update(AT_THE_END)
            return TriggerResult.FIRE
        if phase == DONE:
            return TriggerResult.CONTINUE
        if window.max_timestamp() <= ctx.get_current_watermark():
            return self._finish(ctx)
        ctx.register_event_time_timer(window.max_timestamp())
        ctx.get_partitioned_state(self.waiting).update(True)
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        waiting = ctx.get_partitioned_state(self.waiting).value()
        if time != window.max_timestamp() or not waiting:
            return TriggerResult.CONTINUE
        return self._finish(ctx)

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())
        for descriptor in (self.count, self.phase, self.waiting):
            ctx.get_partitioned_state(descriptor).clear()


class CountUntilEndOfWindow(Trigger[Any, Window]):
    """``OrFinally(CountTrigger.of(n), EventTimeTrigger())``: fire every n elements until the window's end, fire
    there (or, for a window whose first element came after its end, at that element) and never again."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.count = ReducingStateDescriptor("count", operator.add)
        self.done = ValueStateDescriptor("done")

    def _end(self, ctx: TriggerContext) -> TriggerResult:
        ctx.get_partitioned_state(self.done).update(True)
        ctx.get_partitioned_state(self.count).clear()
        return TriggerResult.FIRE

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if ctx.get_partitioned_state(self.done).value():
            return TriggerResult.CONTINUE
        if window.max_timestamp() <= ctx.get_current_watermark():
            return self._end(ctx)
        ctx.register_event_time_timer(window.max_timestamp())
        count = ctx.get_partitioned_state(self.count)
        count.add(1)
        if count.get() >= self.n:
            count.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if time != window.max_timestamp() or ctx.get_partitioned_state(self.done).value():
            return TriggerResult.CONTINUE
        return self._end(ctx)

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())
        ctx.get_partitioned_state(self.count).clear()
        ctx.get_partitioned_state(self.done).clear()


def with_retractions(result: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """An accumulating run's panes and late elements as a retracting window emits them, written out by hand:
    every pane of a window that emitted before is preceded by its previous pane with ``retract`` true (for
    windows that are never purged before their cleanup)."""
    emitted: list[tuple[str, Any]] = []
    last: dict[tuple[Any, Any, Any], dict[str, Any]] = {}
    items = [("main", pane) for pane in result["main"]] + [("late", element) for element in result["late"]]
    for kind, item in sorted(items, key=lambda entry: entry[1]["emit_seq"]):
        if kind == "late":
            emitted.append(("late", (item["key"], item["value"], item["ts"], item["seq"])))
            continue
        window = (item["key"], item["window_start"], item["window_end"])
        if window in last:
            emitted.append(("main", {**last[window], "retract": True}))
        last[window] = {**item, "retract": False}
        emitted.append(("main", last[window]))
    return collect_result(emitted)


@dataclass(frozen=True)
class Oracle:
    """How a scenario's expected output is produced without the feature it is about: the harness with
    ``trigger`` in the ``accumulation`` mode, its result passed through ``then``; ``flink_trigger`` is the Java twin
    of ``trigger`` that real Flink ran for the stored output (the ``flink_trigger`` of its ``meta``), ``None``
    where Flink cannot run the scenario."""

    trigger: Callable[[], Trigger[Any, Any]]
    flink_trigger: str | None
    accumulation: str = "accumulating"
    then: Callable[[dict[str, Any]], dict[str, Any]] = field(default=lambda result: result)
    """What turns the harness' result into the expected one."""


ORACLES: dict[str, Oracle] = {
    "61_any_of_count_or_end_of_window": Oracle(lambda: CountOrEndOfWindow(2), "CountOrEndOfWindow(2)"),
    "62_after_watermark_early_and_late": Oracle(lambda: EarlyAndLate(2, 1), "EarlyAndLate(2, 1)"),
    "63_all_of_count_and_end_of_window": Oracle(lambda: CountAndEndOfWindow(2), "CountAndEndOfWindow(2)"),
    "64_after_each_count_then_end_of_window": Oracle(lambda: CountThenEndOfWindow(2), "CountThenEndOfWindow(2, false)"),
    "65_or_finally_count_until_end_of_window": Oracle(lambda: CountUntilEndOfWindow(2), "CountUntilEndOfWindow(2)"),
    "66_repeatedly_count_then_end_of_window": Oracle(
        lambda: CountThenEndOfWindow(2, repeat=True), "CountThenEndOfWindow(2, true)"
    ),
    # discarding is Flink's PurgingTrigger around the trigger, in Flink's (accumulating) operator
    "67_discarding_early_and_late": Oracle(
        lambda: PurgingTrigger.of(EarlyAndLate(2, 1)), "PurgingTrigger.of(EarlyAndLate(2, 1))"
    ),
    # retracting is the accumulating result with each window's previous pane taken back, by hand: no Flink form
    "68_retracting_late_firings": Oracle(EventTimeTrigger, None, then=with_retractions),
}
"""The scenario files of composite triggers and accumulation modes, the Python trigger that gives each one's
expected output on the harness, and its Java twin that gave it on real Flink."""
