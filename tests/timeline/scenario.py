"""A window job with known early, on-time and late firings, late and dropped elements (shared by the tests).

Tumbling event-time windows of 10 ms, ``ContinuousEventTimeTrigger.of(4)`` (Flink's: fires at every multiple
of 4 ms of event time the watermark passes while the window is open, at the window's end, and at once for an
element of a window the watermark already passed), allowed lateness 5 ms. The watermark is punctuated: an
element ``(key, timestamp, watermark)`` is followed by that watermark when it is not ``None``.
"""

from __future__ import annotations

from typing import Any

from panes.datastream import ListSink, OutputTag, StreamEnvironment
from panes.elements import Watermark
from panes.watermarks import WatermarkStrategy
from panes.watermarks.generators import WatermarkGenerator
from panes.watermarks.output import WatermarkOutput
from panes.windowing import ContinuousEventTimeTrigger, TumblingEventTimeWindows

LATE: OutputTag[Any] = OutputTag("late")

ELEMENTS = [
    ("a", 1, None),  # 1: window [0, 10); timers at 4 (interval) and 9 (end)
    ("a", 3, 5),  # 2: watermark 5 passes 4: early pane
    ("a", 6, 12),  # 3: watermark 12 passes 8 (early) and 9 = the end (on time)
    ("b", 11, None),  # 4: window [10, 20) of b; interval timer at 12 (already passed: fires at the next watermark)
    ("a", 7, None),  # 5: within the lateness (cleanup at 14): fires at once, late
    ("a", 2, 20),  # 6: late pane again; watermark 20: cleans a's [0, 10) at 14; b fires at 12, 16, 19
    ("a", 4, None),  # 7: every window of it is past its cleanup: a late element
    ("a", 15, None),  # 8: window [10, 20) of a, first pane, but the watermark already passed 19: late
]


class ElementWatermarks(WatermarkGenerator):
    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        if event[2] is not None:
            output.emit_watermark(Watermark(event[2]))

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        pass


def build(env: StreamEnvironment, side_output: bool = True) -> tuple[ListSink, ListSink | None]:
    """The scenario's pipeline: each pane emits ``(key, window start, elements, watermark then)``."""
    windowed = (
        env.from_collection(ELEMENTS)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_generator(ElementWatermarks).with_timestamp_assigner(lambda e, _: e[1])
        )
        .key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(10))
        .trigger(ContinuousEventTimeTrigger.of(4))
        .allowed_lateness(5)
    )
    if side_output:
        windowed = windowed.side_output_late_data(LATE)
    panes = windowed.process(
        lambda key, ctx, elements: [(key, ctx.window().start, len(list(elements)), ctx.current_watermark())]
    )
    results: ListSink = ListSink()
    panes.sink_to(results)
    late: ListSink | None = None
    if side_output:
        late = ListSink()
        panes.get_side_output(LATE).sink_to(late)
    return results, late
