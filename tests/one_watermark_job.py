"""Two independent pipelines in one job, each with its own watermarked source: the case where the Spark runner's
one watermark per query gives another answer than Flink (``docs/spark-runner.md``, "Several watermarked
sources"), shared by the local and the Spark test.

Stream A's elements at 10 and 20, then 200 (its watermark moves to 199 after that micro-batch), then a straggler
at 50 for the window ``[0, 100)`` that has fired: in Flink and on the local runner it is late. Stream B, in the
same job, has one element at 0 and its watermark stays at -1: on Spark the query's watermark is the minimum over
both streams, so A's window waits for the end of input and the straggler is on time.
"""

from __future__ import annotations

from typing import Any

from panes.datastream import ListSink, OutputTag, StreamEnvironment
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows

A_BATCHES = [[("a", 10), ("a", 20)], [("a", 200)], [("a", 50)], []]
B_BATCHES = [[("b", 0)], [], [], []]
LATE = OutputTag("late")

FLINK = {"windows": [(0, [10, 20]), (200, [200])], "late": [50]}
"""What Flink gives A's window, as the local runner does: the straggler late."""
ONE_WATERMARK = {"windows": [(0, [10, 20, 50]), (200, [200])], "late": []}
"""What the Spark runner gives it: held back by B, the window fires at the end of input with the straggler."""


def _pane(key: Any, context: Any, elements: Any) -> Any:
    yield (context.window().start, sorted(ts for _, ts in elements))


def build(env: StreamEnvironment) -> tuple[ListSink, ListSink]:
    stamped = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])
    a = env.from_micro_batches(A_BATCHES).assign_timestamps_and_watermarks(stamped)
    b = env.from_micro_batches(B_BATCHES).assign_timestamps_and_watermarks(stamped)
    windows = a.key_by(lambda e: e[0]).window(TumblingEventTimeWindows.of(100)).side_output_late_data(LATE)
    panes, late = ListSink(), ListSink()
    result = windows.process(_pane)
    result.sink_to(panes)
    result.get_side_output(LATE).map(lambda e: e[1]).sink_to(late)
    b.key_by(lambda e: e[0]).map(lambda e: e).sink_to(ListSink())
    return panes, late


def outcome(panes: ListSink, late: ListSink) -> dict[str, Any]:
    return {"windows": sorted(panes.values), "late": sorted(late.values)}
