"""The timeline's data comes from the real window operator on the local runner: a scenario with known early,
on-time and late firings, late and dropped elements (``tests/timeline/scenario.py``).

Expected firings follow Flink's ``ContinuousEventTimeTrigger`` (``onElement`` fires at once when
``window.maxTimestamp() <= watermark``, ``onEventTime`` fires at ``maxTimestamp`` and at each interval fire
time) and ``WindowOperator`` (``isWindowLate``: ``maxTimestamp + allowedLateness <= watermark``, cleanup timer at
``maxTimestamp + allowedLateness``); their timing follows Beam's ``PaneInfoTracker.describePane``.
"""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import StreamEnvironment
from panes.elements import StreamRecord, Watermark
from panes.local import LocalRunner
from panes.time import LONG_MAX, LONG_MIN
from panes.timeline import ElementFate, StepRecorder, StepTimeline, record_timeline
from panes.windowing import (
    CountEvictor,
    CountTrigger,
    EventTimeSessionWindows,
    GlobalWindow,
    GlobalWindows,
    PaneTiming,
    TimeWindow,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowObserver,
    pane_timing,
)
from panes.windowing.aligned import AlignedWindowOperator
from panes.windowing.internal_functions import process_spec
from panes.windowing.operator import WindowOperator
from tests.timeline import scenario

EARLY, ON_TIME, LATE = PaneTiming.EARLY, PaneTiming.ON_TIME, PaneTiming.LATE


def record(side_output: bool = True, **options: Any) -> tuple[StepTimeline, list[Any], list[Any] | None]:
    sinks: list[Any] = []
    timeline = record_timeline(lambda env: sinks.extend(scenario.build(env, side_output)), **options)
    assert len(timeline.steps) == 1
    results, late = sinks
    return timeline.steps[0], results.values, None if late is None else late.values


def test_firings_have_their_pane_timing() -> None:
    step, _, _ = record()
    w0, w10 = TimeWindow(0, 10), TimeWindow(10, 20)
    assert [(f.position, f.key, f.window, f.timing, f.pane_index, f.time) for f in step.firings] == [
        (2, "a", w0, EARLY, 0, 4),  # watermark 5 passes the interval time 4
        (3, "a", w0, EARLY, 1, 8),  # watermark 12 passes 8 ...
        (3, "a", w0, ON_TIME, 2, 9),  # ... and the window's end, 9
        (5, "a", w0, LATE, 3, 12),  # an element within the allowed lateness fires the window at once
        (6, "a", w0, LATE, 4, 12),
        (6, "b", w10, EARLY, 0, 12),  # b's interval timer at 12 was registered once the watermark was at 12
        (6, "b", w10, EARLY, 1, 16),  # the watermark jump 12 -> 20 passes 16, then b's end 19
        (6, "b", w10, ON_TIME, 2, 19),
        (8, "a", w10, LATE, 0, 20),  # a first pane, of a window whose end the watermark had passed: late
    ]
    assert step.timings() == {EARLY: 4, ON_TIME: 2, LATE: 3}


def test_each_recorded_firing_is_a_pane_the_operator_emitted() -> None:
    step, results, _ = record()
    # the window function emits (key, window start, elements, watermark then) once per pane
    assert [(f.key, f.window.start, f.watermark) for f in step.firings] == [(k, s, w) for k, s, _, w in results]


def test_elements_their_windows_watermark_and_fate() -> None:
    step, _, late = record()
    w0, w10 = TimeWindow(0, 10), TimeWindow(10, 20)
    assert [(e.position, e.key, e.timestamp, e.watermark, e.windows, e.fate) for e in step.elements] == [
        (1, "a", 1, LONG_MIN, [w0], ElementFate.IN_WINDOW),
        (2, "a", 3, LONG_MIN, [w0], ElementFate.IN_WINDOW),
        (3, "a", 6, 5, [w0], ElementFate.IN_WINDOW),
        (4, "b", 11, 12, [w10], ElementFate.IN_WINDOW),
        (5, "a", 7, 12, [w0], ElementFate.IN_WINDOW),
        (6, "a", 2, 12, [w0], ElementFate.IN_WINDOW),
        (7, "a", 4, 20, [], ElementFate.LATE),  # [0, 10) was cleaned up at 14
        (8, "a", 15, 20, [w10], ElementFate.IN_WINDOW),
    ]
    assert late == [("a", 4, None)]  # what the operator sent to the late-data side output
    assert [(c.position, c.key, c.window) for c in step.cleanups] == [(6, "a", w0), (8, "b", w10), (8, "a", w10)]
    assert [(p.position, p.watermark) for p in step.watermarks] == [(2, 5), (3, 12), (6, 20), (8, LONG_MAX)]


def test_without_a_late_data_output_the_late_element_is_dropped() -> None:
    step, results, _ = record(side_output=False)
    assert [e.position for e in step.elements if e.fate is ElementFate.DROPPED] == [7]
    assert step.count(ElementFate.LATE) == 0
    assert len(results) == len(step.firings) == 9


def test_keys_are_sampled_first_come_or_by_name() -> None:
    step, _, _ = record(max_keys=1)
    assert step.keys == ["a"]
    assert {e.key for e in step.elements} == {"a"} and {f.key for f in step.firings} == {"a"}
    assert step.total_elements == 8  # every element is counted in the processing order
    by_name, _, _ = record(keys=["b"])
    assert by_name.keys == ["b"]
    assert [(f.time, f.timing) for f in by_name.firings] == [(12, EARLY), (16, EARLY), (19, ON_TIME)]
    # the watermark is the step's, recorded whatever the keys
    assert [p.watermark for p in by_name.watermarks] == [5, 12, 20, LONG_MAX]


def test_recording_stops_after_max_elements() -> None:
    step, results, _ = record(max_elements=3)
    assert step.truncated and step.total_elements == 8
    assert [e.position for e in step.elements] == [1, 2, 3]
    assert [f.position for f in step.firings] == [2, 3, 3]
    assert len(results) == 9  # what the operator does is not affected
    assert step.recorded_elements == 3
    pytest.importorskip("matplotlib")
    from panes.timeline.figure import build_figure

    figure = build_figure([step], "truncated")
    panel = figure.subfigs[0]
    assert "recording stopped after 3 of 8 elements" in panel._suptitle.get_text()
    order_axis = panel.axes[1]
    assert order_axis.get_xlim()[1] <= 4  # the processing-order axis ends where the recording stopped


def test_session_merges_carry_the_pane_timing() -> None:
    def build(env: StreamEnvironment) -> None:
        data = [("s", 1, None), ("s", 20, None), ("s", 10, 30), ("s", 29, 40), ("s", 55, None)]
        (
            env.from_collection(data)
            .assign_timestamps_and_watermarks(
                scenario.WatermarkStrategy.for_generator(scenario.ElementWatermarks).with_timestamp_assigner(
                    lambda e, _: e[1]
                )
            )
            .key_by(lambda e: e[0])
            .window(EventTimeSessionWindows.with_gap(10))
            .allowed_lateness(20)
            .process(lambda key, ctx, elements: [len(list(elements))])
            .add_sink(lambda _: None)
        )

    step = record_timeline(build).steps[0]
    # 10 bridges [1, 11) and [20, 30) into [1, 30), which the watermark 30 fires on time; 29 extends it to
    # [1, 39), which the watermark 40 fires again: a later pane of the same session, so late (a merged window
    # continues the timing of the windows it absorbs); 55 opens [55, 65), on time at the end of input
    assert [(m.position, m.result, set(m.merged)) for m in step.merges] == [
        (3, TimeWindow(1, 30), {TimeWindow(1, 11), TimeWindow(20, 30)}),
        (4, TimeWindow(1, 39), {TimeWindow(1, 30)}),
    ]
    assert [(f.position, f.window, f.timing, f.pane_index) for f in step.firings] == [
        (3, TimeWindow(1, 30), ON_TIME, 0),
        (4, TimeWindow(1, 39), LATE, 1),
        (5, TimeWindow(55, 65), ON_TIME, 0),
    ]


@pytest.mark.parametrize(
    ("max_timestamp", "time", "before", "previous", "expected"),
    [
        (9, 4, 4, None, EARLY),  # the watermark has not reached the window's end
        (9, 8, 5, EARLY, EARLY),
        (9, 9, 5, EARLY, ON_TIME),  # the advance 5 -> 9 passes the end
        (9, 12, 5, None, ON_TIME),
        (9, 12, 12, ON_TIME, LATE),  # after the on-time pane
        (9, 12, 12, None, LATE),  # the end was passed before this advance
        (9, 9, 9, None, LATE),
        (9, 4, 4, LATE, LATE),  # never early again
        (LONG_MAX, LONG_MAX, 100, EARLY, ON_TIME),  # a global window at the end of input
    ],
)
def test_pane_timing(
    max_timestamp: int, time: int, before: int, previous: PaneTiming | None, expected: PaneTiming
) -> None:
    assert pane_timing(max_timestamp, time, before, previous) is expected


class Calls(WindowObserver):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def element(self, key: Any, value: Any, timestamp: int | None, watermark: int, processing_time: int) -> None:
        self.calls.append("element")

    def watermark(self, previous: int, watermark: int) -> None:
        self.calls.append(f"watermark {previous}->{watermark}")

    def fired(self, key: Any, window: Any, time: int, time_before: int, watermark: int, processing_time: int) -> None:
        self.calls.append(f"fired {window.start} at {time} from {time_before}")


def operator() -> WindowOperator:
    op = WindowOperator(TumblingEventTimeWindows.of(10), process_spec(lambda k, c, e: [k]), lambda v: v)
    op.open()
    return op


def test_an_observer_can_be_set_and_removed() -> None:
    op = operator()
    calls = Calls()
    op.set_observer(calls)
    op.process_record(StreamRecord("k", 3))
    op.process_watermark(Watermark(9))
    op.set_observer(None)
    assert "process_watermark" not in vars(op)  # the unobserved path is the class's again
    assert set(vars(op)) == set(vars(operator()))  # and the instance has the attributes of one never observed
    op.process_record(StreamRecord("k", 13))
    op.process_watermark(Watermark(19))
    assert calls.calls == ["element", f"watermark {LONG_MIN}->9", f"fired 0 at 9 from {LONG_MIN}"]
    with pytest.raises(TypeError, match="WindowObserver"):
        op.set_observer(object())  # type: ignore[arg-type]


def test_the_aligned_operator_refuses_an_observer() -> None:
    aligned = AlignedWindowOperator(TumblingEventTimeWindows.of(10), process_spec(lambda k, c, e: [k]), lambda v: v)
    with pytest.raises(TypeError, match="cannot be observed"):
        aligned.set_observer(Calls())


def test_recorder_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="max_keys"):
        StepRecorder("w", max_keys=0)
    with pytest.raises(ValueError, match="max_elements"):
        StepRecorder("w", max_elements=0)


def test_a_job_without_window_steps_is_refused() -> None:
    with pytest.raises(ValueError, match="no window step"):
        record_timeline(lambda env: env.from_collection([1, 2]).map(lambda v: v).add_sink(lambda _: None))


def test_the_operator_hook_sees_every_operator_instance() -> None:
    seen: list[tuple[str, int, str]] = []
    env = StreamEnvironment(
        LocalRunner(operator_hook=lambda t, i, op: seen.append((t.name, i, type(op).__name__))), parallelism=2
    )
    scenario.build(env)
    env.execute()
    windows = [(name, index) for name, index, kind in seen if kind == "WindowOperator"]
    assert sorted(windows) == [("Window(Process)", 0), ("Window(Process)", 1)]
    assert len(seen) > len(windows)  # the other operators too (the timestamp assigner)


def test_processing_time_windows_close_on_the_processing_time() -> None:
    def build(env: StreamEnvironment) -> None:
        (
            env.from_collection(list(range(7)), batch_size=1)
            .key_by(lambda v: "k")
            .window(TumblingProcessingTimeWindows.of(1_000))
            .process(lambda key, ctx, elements: [sum(elements)])
            .add_sink(lambda _: None)
        )

    step = record_timeline(build).steps[0]
    # the stepping clock, one element per micro-batch: element n (from 1) is processed at 200 * (n - 1) ms,
    # then the clock moves on 200 ms
    assert [(e.timestamp, e.processing_time, e.windows) for e in step.elements] == [
        (None, 200 * i, [TimeWindow(0, 1_000) if i < 5 else TimeWindow(1_000, 2_000)]) for i in range(7)
    ]
    assert not step.event_time and [p.time for p in step.processing_times] == [200 * i for i in range(1, 8)]
    # the clock jumps from 800 to 1000 after element 5: the timer at 999 fires [0, 1000) on time (the timers
    # still pending at the end of a bounded input do not fire on the local runner)
    assert [(f.position, f.window, f.timing, f.time) for f in step.firings] == [(5, TimeWindow(0, 1_000), ON_TIME, 999)]


def test_count_windows_with_an_evictor_fire_early_panes_of_the_global_window() -> None:
    def build(env: StreamEnvironment) -> None:
        (
            env.from_collection([("k", i) for i in range(7)])
            .key_by(lambda v: v[0])
            .window(GlobalWindows.create())
            .trigger(CountTrigger.of(3))
            .evictor(CountEvictor.of(2))
            .process(lambda key, ctx, elements: [len(list(elements))])
            .add_sink(lambda _: None)
        )

    step = record_timeline(build).steps[0]
    # every third element fires the pane; a global window never ends, so its panes are early
    assert [(f.position, f.window, f.timing, f.pane_index) for f in step.firings] == [
        (3, GlobalWindow(), EARLY, 0),
        (6, GlobalWindow(), EARLY, 1),
    ]
    assert all(e.fate is ElementFate.IN_WINDOW and e.windows == [GlobalWindow()] for e in step.elements)


def skewed(env: StreamEnvironment) -> None:
    """Two keys, 'slow' 1000 ms behind 'fast', each in order, per-key windows of 100 ms (bound 0, lag 5000)."""
    from panes.watermarks import PerKeyWatermarks, WatermarkStrategy

    rows = [row for i in range(10) for row in (("fast", 1000 + 30 * i), ("slow", 30 * i))]
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(0).with_timestamp_assigner(lambda row, _: row[1])
    (
        env.from_collection(rows)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda row: row[0])
        .window(TumblingEventTimeWindows.of(100))
        .watermark_per_key(PerKeyWatermarks.for_bounded_out_of_orderness(0).with_max_lag(5000))
        .process(lambda key, context, rows: [(key, len(list(rows)))])
        .print()
    )


def test_with_event_time_per_key_each_sampled_key_has_its_watermark_line() -> None:
    """After each element of a key its watermark is its largest timestamp - 1 (bound 0), whatever the other key's;
    each firing records the key's watermark too (here its end-of-input firings at +inf)."""
    (step,) = record_timeline(skewed).steps
    assert step.per_key
    for key, offset in (("fast", 1000), ("slow", 0)):
        line = [p.watermark for p in step.key_watermarks if p.key == key]
        moves = [w for i, w in enumerate(line) if i == 0 or w != line[i - 1]]  # a firing repeats the time it saw
        assert moves == [offset + 30 * i - 1 for i in range(10)] + [LONG_MAX], key
        fired_at = [f.watermark for f in step.firings_of(key)]
        # [0, 100) fires after the element at 120, [100, 200) after the one at 210, [200, 300) at the end of input
        assert fired_at == [offset + 119, offset + 209, LONG_MAX], key
