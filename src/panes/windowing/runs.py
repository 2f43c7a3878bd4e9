"""Runs of elements at once on Flink's window operator, with the state, timers and output of element by element.

The local runner keeps Flink's emission order, so its windows run on the general
:class:`~panes.windowing.operator.WindowOperator`. Between two advances of the watermark, though, an element of
an accumulating tumbling or sliding event-time window with the default trigger only adds to its panes and
registers their timers: nothing leaves the operator. :func:`process_run` does that for a whole run of elements
(values and their timestamps, the watermark unchanged), in a tight loop over the same state and the same timer
heap, in arrival order, so the heap's array (which decides the order of firings at equal times, see
``panes.timers.heap``) is the one the element-by-element path builds. An element that does anything else (its
key cannot be read, it has no timestamp, one of its windows has ended at the current watermark: a late element
or a late firing, or its window function raises) goes through the operator's own ``process_record`` at its
place in the run, so what it emits leaves exactly where it would.

:func:`run_reason` says whether an operator can take runs (``None``) or why not; the chooser
(``panes.windowing.implementation.takes_runs``) asks it, and the local runner (``panes.local.runs``) hands runs
only to operators it accepts. :func:`install_timer_pass` gives such an operator a leaner pass over its exact timer
heap when the watermark moves: the same timers in the same order, each firing and cleaning up its pane as the
operator's ``_on_timer`` does (the trigger's decision is ``EventTimeTrigger``'s, worked out inline; the emitter
of a window's panes is made once per window and time, as it depends on nothing else).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from panes.elements import StreamRecord
from panes.functions.aggregates import Aggregates
from panes.functions.compiled_aggregates import compiled_aggregates
from panes.operators.keys import extract_key
from panes.state.backend import HeapAggregatingState
from panes.time import LONG_MAX, LONG_MIN, java_add, java_rem
from panes.timers.loops import TimerLoopError
from panes.windowing.assigners.sliding import SlidingEventTimeWindows
from panes.windowing.assigners.stagger import WindowStagger
from panes.windowing.assigners.tumbling import TumblingEventTimeWindows
from panes.windowing.internal_functions import PassThroughWindowFunction, _SingleValueFunction
from panes.windowing.operator import WindowOperator
from panes.windowing.rows import WindowRow
from panes.windowing.rules import cleanup_time
from panes.windowing.triggers.event_time import EventTimeTrigger
from panes.windowing.windows import TimeWindow


def run_reason(operator: Any) -> str | None:
    """``None`` when :func:`process_run` gives ``operator`` exactly the state, timers and output of processing
    each element in turn; otherwise why it does not (the operator then takes its elements one by one): it must be
    the general window operator (no evictor) of an accumulating tumbling or sliding event-time window with the
    default trigger, without event time per key, an observer or state time-to-live cleanups on every record."""
    if type(operator) is not WindowOperator:
        return "it is not the general window operator (an evictor, or another operator)"
    if type(operator.assigner) not in (TumblingEventTimeWindows, SlidingEventTimeWindows):
        return "its windows are not tumbling or sliding event-time windows"
    if type(operator.trigger) is not EventTimeTrigger:
        return "it has a trigger of its own"
    if operator.accumulation != "accumulating":
        return f"its panes are {operator.accumulation}"
    if operator.key_time is not None:
        return "it keeps event time per key (watermark_per_key)"
    if operator.observer is not None:
        return "an observer watches it"
    if operator.backend.record_cleanups:
        return "its state has time-to-live cleanups on every record"
    return None


def process_run(
    operator: WindowOperator, values: Sequence[Any], timestamps: Sequence[int | None], keys: Sequence[Any] | None = None
) -> None:
    """Process ``values`` (at ``timestamps``) in order as ``operator.process_record`` would, one by one, while the
    watermark does not move (``operator`` is one :func:`run_reason` accepts). ``keys``, when given, are the
    values' keys as ``extract_key`` with the operator's key selector reads them (the caller read them already);
    without them each is read here."""
    count = len(values)
    if not count:
        return
    add_timer = operator.timer_service.event_time_timers.add
    backend = operator.backend
    state = operator.window_state
    add_to_pane = _pane_adder(operator)
    selector = operator.key_selector
    assert selector is not None
    process_record = operator.process_record
    windows_of = _windows_of(operator, values, timestamps)
    counters = operator.counters
    fast = 0
    key: Any = None
    window: Any = None
    for index in range(count):
        value = values[index]
        windows = windows_of(index)
        if windows is None:
            process_record(StreamRecord(value, timestamps[index]))
            continue
        if keys is not None:
            key = keys[index]
        else:
            try:
                key = extract_key(selector, value)
            except Exception:
                process_record(StreamRecord(value, timestamps[index]))
                continue
        fast += 1
        for window, max_timestamp, cleanup in windows:
            try:
                add_to_pane(key, window, value)
            except Exception as error:
                # as ``WindowOperator._add``: the cleanup timer stays, the failure is reported with its window
                if cleanup != LONG_MAX:
                    add_timer(cleanup, key, window)
                backend.current_key = key
                state._namespace = window
                operator.trigger_context.key = key
                operator.trigger_context.window = window
                operator.report_failure(StreamRecord(value, timestamps[index]), error)
                break
            add_timer(max_timestamp, key, window)
            if cleanup not in (max_timestamp, LONG_MAX):
                add_timer(cleanup, key, window)
    counters.records_in += fast
    if fast:  # the key and window the last element left current, as processing it would
        backend.current_key = key
        state._namespace = window
        operator.trigger_context.key = key
        operator.trigger_context.window = window


def _pane_adder(operator: WindowOperator) -> Callable[[Any, Any, Any], None]:
    """What adds a value to the pane of a key and window as ``window_state.add`` does with that key current and
    that window its namespace (raising what it raises, leaving the pane as it was): for built-in ``Aggregates``
    in the heap backend, their compiled add (``panes.functions.compiled_aggregates``) on the state's table;
    else the state's own ``add``."""
    state = operator.window_state
    aggregate = operator.spec.aggregate
    if type(state) is HeapAggregatingState and type(aggregate) is Aggregates:
        compiled = compiled_aggregates(aggregate)
        table = state._table
        changes = state._changes
        add = compiled.add
        create = aggregate.create_accumulator
        initial = compiled.initial
        get = table.get

        def add_to_aggregates(key: Any, window: Any, value: Any) -> None:
            slot = (key, window)
            accumulator = get(slot)
            if accumulator is None:
                accumulator = create() if initial is None else initial
            table[slot] = add(value, accumulator)
            if changes is not None:
                changes.replaced(slot)

        return add_to_aggregates
    backend = operator.backend
    state_add = state.add

    def add_to_state(key: Any, window: Any, value: Any) -> None:
        backend.current_key = key
        state._namespace = window
        state_add(value)

    return add_to_state


def install_timer_pass(operator: WindowOperator, send: Callable[[Any, int], None] | None = None) -> None:
    """Give ``operator`` (one :func:`run_reason` accepts, open) the leaner event-time timer pass (see the module
    docstring); the operator's own pass gives the same output in the same order.

    ``send(value, timestamp)``, when given, does for a result of the main output what
    ``operator.output.collect(StreamRecord(value, timestamp))`` does (counted, conformed, routed), in fewer calls
    (the local runner's ``Router.main_sender``); it takes the results of built-in aggregates (:func:`_pane_rows`)."""
    service = operator.timer_service
    heap = service.event_time_timers
    poll_all_due = heap.poll_all_due
    guard = service.guard
    backend = operator.backend
    context = operator.trigger_context
    state = operator.window_state
    read = operator._read_contents
    pane_state = operator._pane_state
    function = operator.spec.function
    clears = not function.clears_nothing()
    process_context = operator.process_context
    lateness = operator.allowed_lateness
    attributes = operator.__dict__
    timer_failed = operator._timer_failed
    rows = _pane_rows(operator, send)
    accumulator_of = state.get_internal
    aggregate = operator.spec.aggregate
    result_of: Callable[[Any], Any] = (
        compiled_aggregates(aggregate).result if type(aggregate) is Aggregates else read  # read: unused then
    )

    def timer_pass(time: int) -> None:
        # InternalTimerService._fire_due. The due timers are polled first, at once: firing a pane adds no timer
        # and removes none still queued (the trigger is EventTimeTrigger, whose clear deletes the timer at the
        # window's end, polled already; the window function has no timers), so the heap each firing sees is the
        # one polling one by one gives, but for the due timers not yet fired, which nothing here looks up (the
        # pane info's _fires_again counts the window's other timers: the end's fired, the cleanup's is not
        # counted). For the same reason the loop guard, which counts registrations, has nothing to count.
        windows: dict[Any, tuple[int, int]] = {}
        panes: dict[tuple[Any, int], Any] = {}
        last_window: Any = None
        max_timestamp = cleanup = 0
        try:
            for timer in poll_all_due(time):
                key = timer.key
                window = timer.namespace
                at = timer.timestamp
                backend.current_key = key
                context.key = key
                context.window = window
                state._namespace = window
                if window is not last_window:  # ties of one window come together, mostly as one object
                    last_window = window
                    ends = windows.get(window)
                    if ends is None:
                        end = window.max_timestamp()
                        ends = windows[window] = (end, cleanup_time(end, lateness))
                    max_timestamp, cleanup = ends
                attributes["_firing_time"] = at
                attributes["_cleaning"] = at == cleanup
                try:
                    if at == max_timestamp:  # EventTimeTrigger.on_event_time: FIRE
                        if rows is not None:
                            accumulator = accumulator_of()
                            result = None if accumulator is None else result_of(accumulator)  # read()
                            if result is not None:
                                pane = panes.get((window, at))
                                if pane is None:
                                    pane = panes[(window, at)] = operator._pane_info(window)
                                pane()  # the firing recorded in the pane state (the row does not show it)
                                rows(key, window, result, max_timestamp)
                        else:
                            contents = read()
                            if contents is not None:
                                emit = panes.get((window, at))
                                if emit is None:
                                    emit = panes[(window, at)] = operator._pane_emitter(window)
                                emit(contents)
                except TimerLoopError:
                    raise
                except Exception as error:
                    timer_failed(timer, error, True)
                finally:
                    if at == cleanup:  # WindowOperator._clear_all_state, without an observer, retractions or merging
                        state.clear()
                        pane_state._namespace = window
                        pane_state.clear()
                        # EventTimeTrigger.clear deletes the timer at the window's end: due (at or before this
                        # cleanup), so polled already, and nothing to delete
                        if clears:
                            process_context._window = window
                            function.clear(process_context)
                    attributes.pop("_firing_time", None)
                    attributes.pop("_cleaning", None)
        finally:
            guard.end_pass()

    service.event_time_pass = timer_pass


def _pane_rows(operator: WindowOperator, send: Callable[[Any, int], None] | None) -> Any:
    """What emits the result of a pane of built-in aggregates (``Aggregates`` incrementally, then a ``WindowRow``
    without pane columns, or nothing), given its key, window, aggregate result (not ``None``) and timestamp: the
    value the window function yields, sent with ``send``; ``None`` for any other window function, or without
    ``send`` (the operator's own emitter runs then). A result emitted as it is that is a tuple goes through the
    operator's collector (which sends an ``(OutputTag, value)`` pair to that side output)."""
    spec = operator.spec
    aggregate = spec.aggregate
    function = spec.process_function
    if (
        send is None
        or type(aggregate) is not Aggregates
        or type(operator.window_state) is not HeapAggregatingState
        or type(spec.function) is not _SingleValueFunction
        or operator.accumulation != "accumulating"
    ):
        return None
    if type(function) is PassThroughWindowFunction:
        collector = operator.collector

        def passed(key: Any, window: Any, result: Any, timestamp: int) -> None:
            if type(result) is tuple:  # perhaps (OutputTag, value): TimestampedCollector's rule
                collector.timestamp = timestamp
                collector.collect(result)
            else:
                send(result, timestamp)

        return passed
    if type(function) is not WindowRow or function.pane is not None:
        return None
    row = function.row
    names = (function.key, function.start, function.end)
    if aggregate.scalar or None in names or set(aggregate.parts) & set(names):
        # WindowRow.row's general case (a scalar result, a column left out, or a clash it reports per pane)
        def shaped(key: Any, window: Any, result: Any, timestamp: int) -> None:
            send(row(key, window.start, window.end, result), timestamp)

        return shaped
    key_name, start_name, end_name = names

    def spread(key: Any, window: Any, result: Any, timestamp: int) -> None:
        # WindowRow.row for a dict result whose names differ from the key's and the window's columns
        value = {key_name: key, start_name: window.start, end_name: window.end}
        value.update(result)
        send(value, timestamp)

    return spread


_Windows = list[tuple[TimeWindow, int, int]]


def _windows_of(operator: WindowOperator, values: Sequence[Any], timestamps: Sequence[int | None]) -> Any:
    """What gives element ``i``'s windows with their max timestamps and cleanup times, or ``None`` when the
    element must go through the operator itself (no timestamp, or a window that has ended at the watermark)."""
    assigner = operator.assigner
    watermark = operator.timer_service.current_watermark
    lateness = operator.allowed_lateness
    known: dict[int, tuple[TimeWindow, int, int] | None] = {}

    def entry(window: TimeWindow) -> tuple[TimeWindow, int, int] | None:
        max_timestamp = window.max_timestamp()
        if max_timestamp <= watermark:  # late, or a late firing: the operator's own path
            return None
        return (window, max_timestamp, cleanup_time(max_timestamp, lateness))

    if type(assigner) is TumblingEventTimeWindows and (
        assigner.stagger_offset is not None or assigner.stagger is WindowStagger.ALIGNED
    ):
        size = assigner.size
        stagger = assigner.stagger_offset if assigner.stagger_offset is not None else 0
        offset = java_rem(java_add(assigner.global_offset, stagger), size)
        present = [LONG_MIN if t is None else t for t in timestamps]
        starts = TimeWindow.window_starts_with_offset(np.array(present, dtype=np.int64), offset, size).tolist()

        def tumbling(index: int) -> _Windows | None:
            if present[index] == LONG_MIN:
                return None
            start = starts[index]
            found = known.get(start, False)
            if found is False:
                found = known[start] = entry(TimeWindow.of_size(start, size))
            return None if found is None else [found]  # type: ignore[list-item]

        return tumbling

    def general(index: int) -> _Windows | None:
        timestamp = timestamps[index]
        if timestamp is None or timestamp == LONG_MIN:
            return None
        found = []
        for window in assigner.assign_windows(values[index], timestamp, operator):
            item = entry(window)
            if item is None:
                return None
            found.append(item)
        return found

    return general
