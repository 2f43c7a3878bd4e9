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
only to operators it accepts. Built-in ``Aggregates`` add to their panes with a function compiled for their parts
(``panes.functions.compiled_aggregates``), on the state's table.

:func:`install_timer_pass` gives such an operator a leaner pass over its exact timer heap when the watermark
moves: the same timers in the same order, each firing and cleaning up its pane as the operator's ``_on_timer``
does (the trigger's decision is ``EventTimeTrigger``'s, worked out inline). Firing such a pane adds no timer and
removes none still queued, so the pass polls every due timer first, in one loop (``TimerHeap.poll_all_due``: the
order and the array that polling one by one gives), then fires them in that order. Panes of built-in aggregates
(then a ``WindowRow`` without pane columns, or no window function) fire in a loop of their own: the accumulator
read from the state's table, the row made by one compiled function and handed to the local runner's sender of
the window's main output (counted, conformed and routed as the operator's output does it); any other window
function goes through the operator's emitter, made once per window and time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from panes.elements import StreamRecord
from panes.functions.aggregates import Aggregates
from panes.functions.compiled_aggregates import compiled_aggregates
from panes.operators.keys import extract_key
from panes.state.backend import HeapAggregatingState, HeapReducingState
from panes.time import LONG_MAX, LONG_MIN, java_add, java_rem
from panes.timers.heap import InternalTimer
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
    (the local runner's ``Router.main_sender``); with it, the panes of built-in aggregates fire in a loop of their
    own (:func:`_pane_rows`)."""
    service = operator.timer_service
    heap = service.event_time_timers
    guard = service.guard
    lateness = operator.allowed_lateness
    rows = _pane_rows(operator, send)
    fire = _fire_rows(operator, rows) if rows is not None else _fire_panes(operator)

    def timer_pass(time: int) -> None:
        # InternalTimerService._fire_due. The due timers are polled first, at once: firing a pane adds no timer
        # and removes none still queued (the trigger is EventTimeTrigger, whose clear deletes the timer at the
        # window's end, polled already; the window function has no timers), so the heap each firing sees is the
        # one polling one by one gives, but for the due timers not yet fired, which nothing here looks up (the
        # pane info's _fires_again counts the window's other timers: the end's fired, the cleanup's is not
        # counted). For the same reason the loop guard, which counts registrations, has nothing to count.
        try:
            timers = heap.poll_all_due(time)
            if timers:
                fire(timers, _Ends(lateness))
        finally:
            guard.end_pass()

    service.event_time_pass = timer_pass


class _Ends(dict[Any, tuple[int, int]]):
    """A window's max timestamp and cleanup time (``max_timestamp + allowed lateness``), worked out once per
    window in a pass."""

    def __init__(self, lateness: int) -> None:
        super().__init__()
        self.lateness = lateness

    def __missing__(self, window: Any) -> tuple[int, int]:
        end = window.max_timestamp()
        found = self[window] = (end, cleanup_time(end, self.lateness))
        return found


def _fire_panes(operator: WindowOperator) -> Callable[[list[InternalTimer], _Ends], None]:
    """What fires polled timers as ``WindowOperator._on_timer`` does for event-time timers, with
    ``EventTimeTrigger``'s decision worked out inline; the emitter of a window's panes is made once per window and
    time, as it depends on nothing else."""
    backend = operator.backend
    context = operator.trigger_context
    state = operator.window_state
    read = operator._read_contents
    pane_state = operator._pane_state
    function = operator.spec.function
    clears = not function.clears_nothing()
    process_context = operator.process_context
    attributes = operator.__dict__
    timer_failed = operator._timer_failed

    def fire(timers: list[InternalTimer], ends: _Ends) -> None:
        emitters: dict[tuple[Any, int], Any] = {}
        for timer in timers:
            key = timer.key
            window = timer.namespace
            at = timer.timestamp
            backend.current_key = key
            context.key = key
            context.window = window
            state._namespace = window
            max_timestamp, cleanup = ends[window]
            attributes["_firing_time"] = at
            attributes["_cleaning"] = at == cleanup
            try:
                if at == max_timestamp:  # EventTimeTrigger.on_event_time: FIRE
                    contents = read()
                    if contents is not None:
                        emit = emitters.get((window, at))
                        if emit is None:
                            emit = emitters[(window, at)] = operator._pane_emitter(window)
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
                    # EventTimeTrigger.clear deletes the timer at the window's end: due (at or before this cleanup),
                    # so polled already, and nothing to delete
                    if clears:
                        process_context._window = window
                        function.clear(process_context)
                attributes.pop("_firing_time", None)
                attributes.pop("_cleaning", None)

    return fire


def _fire_rows(operator: WindowOperator, rows: Any) -> Callable[[list[InternalTimer], _Ends], None]:
    """:func:`_fire_panes` for panes of built-in aggregates in the heap backend, whose results ``rows`` emits
    (:func:`_pane_rows`): a pane's accumulator read from the state's table and its state dropped there (what
    the states' ``get_internal`` and ``clear`` do with the pane's key current), what is the same for the panes of
    one window and time (its ends, its pane info, the firing time the pane info reads) worked out once for them,
    and the key and namespaces the last pane leaves current set once at the end."""
    backend = operator.backend
    context = operator.trigger_context
    state = operator.window_state
    pane_state = operator._pane_state
    function = operator.spec.function
    clears = not function.clears_nothing()
    process_context = operator.process_context
    attributes = operator.__dict__
    timer_failed = operator._timer_failed
    pane_info = operator._pane_info

    def fire(timers: list[InternalTimer], ends: _Ends) -> None:
        table, changes = state._table, state._changes
        pane_table, pane_changes = pane_state._table, pane_state._changes
        get = table.get
        last_window: Any = None
        last_at: Any = None
        pane: Any = None
        max_timestamp = cleanup = 0
        cleaning = False
        window: Any = None
        try:
            for timer in timers:
                key = timer.key
                window = timer.namespace
                at = timer.timestamp
                backend.current_key = key
                context.key = key
                context.window = window
                if at != last_at or window is not last_window:  # ties of one window come together
                    if window is not last_window:
                        max_timestamp, cleanup = ends[window]
                        last_window = window
                    last_at = at
                    cleaning = at == cleanup
                    attributes["_firing_time"] = at
                    attributes["_cleaning"] = cleaning
                    pane = pane_info(window) if at == max_timestamp else None
                slot = (key, window)
                try:
                    if pane is not None:  # EventTimeTrigger.on_event_time: FIRE
                        accumulator = get(slot)
                        if accumulator is not None:
                            rows(key, window, accumulator, max_timestamp, pane)
                except TimerLoopError:
                    raise
                except Exception as error:
                    timer_failed(timer, error, True)
                finally:
                    if cleaning:  # WindowOperator._clear_all_state (see _fire_panes)
                        if table.pop(slot, None) is not None and changes is not None:
                            changes.replaced(slot)
                        if pane_table and pane_table.pop(slot, None) is not None and pane_changes is not None:
                            pane_changes.replaced(slot)
                        if clears:
                            process_context._window = window
                            function.clear(process_context)
        finally:
            attributes.pop("_firing_time", None)
            attributes.pop("_cleaning", None)
            state._namespace = window
            if cleaning:
                pane_state._namespace = window

    return fire


def _pane_rows(operator: WindowOperator, send: Callable[[Any, int], None] | None) -> Any:
    """What emits a pane of built-in aggregates (``Aggregates`` incrementally in the heap backend, then a
    ``WindowRow`` without pane columns, or nothing), given its key, window, accumulator, timestamp and pane info:
    the result read (``get_result``; ``None`` emits nothing), the firing recorded in the pane info, and the value
    the window function yields sent with ``send``. ``None`` for any other window function or state, or without
    ``send`` (the operator's own emitter runs then). A result emitted as it is that is a tuple goes through the
    operator's collector (which sends an ``(OutputTag, value)`` pair to that side output)."""
    spec = operator.spec
    aggregate = spec.aggregate
    function = spec.process_function
    if (
        send is None
        or type(aggregate) is not Aggregates
        or type(operator.window_state) is not HeapAggregatingState
        or type(operator._pane_state) is not HeapReducingState
        or type(spec.function) is not _SingleValueFunction
        or operator.accumulation != "accumulating"
    ):
        return None
    compiled = compiled_aggregates(aggregate)
    result_of = compiled.result
    if type(function) is PassThroughWindowFunction:
        collector = operator.collector

        def passed(key: Any, window: Any, accumulator: Any, timestamp: int, pane: Any) -> None:
            result = result_of(accumulator)
            if result is None:
                return
            pane()
            if type(result) is tuple:  # perhaps (OutputTag, value): TimestampedCollector's rule
                collector.timestamp = timestamp
                collector.collect(result)
            else:
                send(result, timestamp)

        return passed
    if type(function) is not WindowRow or function.pane is not None:
        return None
    row = function.row
    if (
        aggregate.scalar
        or function.key is None
        or function.start is None
        or function.end is None
        or set(aggregate.parts) & {function.key, function.start, function.end}
    ):
        # WindowRow.row's general case (a scalar result, a column left out, or a clash it reports per pane)
        def shaped(key: Any, window: Any, accumulator: Any, timestamp: int, pane: Any) -> None:
            result = result_of(accumulator)
            if result is None:
                return
            pane()
            send(row(key, window.start, window.end, result), timestamp)

        return shaped
    names = (function.key, function.start, function.end)
    make = compiled.row(names)  # WindowRow.row of the dict result, whose names differ from the first three

    def spread(key: Any, window: Any, accumulator: Any, timestamp: int, pane: Any) -> None:
        pane()  # the result is a dict (not None) that reading cannot fail to give: record the firing first
        send(make(key, window.start, window.end, accumulator), timestamp)

    if compiled.result_cannot_fail:
        return spread

    def spread_after_result(key: Any, window: Any, accumulator: Any, timestamp: int, pane: Any) -> None:
        result = result_of(accumulator)
        pane()
        value = {names[0]: key, names[1]: window.start, names[2]: window.end}
        value.update(result)
        send(value, timestamp)

    return spread_after_result


_Windows = list[tuple[TimeWindow, int, int]]


def _windows_of(operator: WindowOperator, values: Sequence[Any], timestamps: Sequence[int | None]) -> Any:
    """What gives element ``i``'s windows with their max timestamps and cleanup times, or ``None`` when the
    element must go through the operator itself (no timestamp, or a window that has ended at the watermark)."""
    assigner = operator.assigner
    watermark = operator.timer_service.current_watermark
    lateness = operator.allowed_lateness

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
        by_start: dict[int, _Windows | None] = {}
        for start in set(starts):
            found = entry(TimeWindow.of_size(start, size))
            by_start[start] = None if found is None else [found]
        listed = [by_start[start] for start in starts]
        if LONG_MIN in present:  # no timestamp: the operator's own path
            for index, timestamp in enumerate(present):
                if timestamp == LONG_MIN:
                    listed[index] = None
        return listed.__getitem__  # one list of one window per window, shared by its elements

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
