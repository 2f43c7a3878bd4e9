"""Composite triggers, pane info (also on the columnar operator) and retracting windows through the DataStream API
give the same results on the local runner and on Spark: one job, one branch per case, over one watermarked
stream (the harness tests in ``tests/core/test_composite_triggers.py``, ``test_pane_info.py`` and
``test_accumulation_modes.py`` pin down the firings themselves)."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import ListSink, StreamEnvironment
from panes.functions import Sum
from panes.local import LocalRunner
from panes.spark import SparkRunner
from panes.watermarks import WatermarkStrategy
from panes.windowing import (
    AfterEach,
    AfterWatermark,
    AnyOf,
    CountTrigger,
    EventTimeSessionWindows,
    EventTimeTrigger,
    OrFinally,
    TumblingEventTimeWindows,
    WindowRow,
)

pytestmark = pytest.mark.spark

BATCHES = [
    [{"k": "a", "v": 1, "ts": 1}, {"k": "a", "v": 2, "ts": 2}, {"k": "b", "v": 3, "ts": 4}],
    [{"k": "a", "v": 4, "ts": 12}, {"k": "b", "v": 5, "ts": 5}, {"k": "a", "v": 6, "ts": 3}],
    [{"k": "a", "v": 7, "ts": 25}, {"k": "a", "v": 8, "ts": 8}, {"k": "b", "v": 9, "ts": 30}],
]

TRIGGERS = {
    "count-or-end": (lambda: AnyOf(CountTrigger.of(2), EventTimeTrigger()), TumblingEventTimeWindows.of(10)),
    "early-on-time-late": (
        lambda: AfterWatermark(early=CountTrigger.of(2), late=CountTrigger.of(1)),
        TumblingEventTimeWindows.of(10),
    ),
    "sessions-sequence": (
        lambda: OrFinally(AfterEach(CountTrigger.of(1), CountTrigger.of(2)), EventTimeTrigger()),
        EventTimeSessionWindows.with_gap(5),
    ),
}


def run(env: StreamEnvironment) -> dict[str, list[Any]]:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    stream = env.from_micro_batches(BATCHES, type_info="k STRING, v BIGINT, ts BIGINT")
    keyed = stream.assign_timestamps_and_watermarks(strategy).key_by("k")
    outputs = {name: ListSink() for name in [*TRIGGERS, "retracting", "pane info on columns"]}
    for name, (make_trigger, assigner) in TRIGGERS.items():
        windowed = keyed.window(assigner).trigger(make_trigger()).allowed_lateness(20)
        windowed.process(
            lambda key, ctx, elements: [(key, ctx.window().start, sorted(e["v"] for e in elements))]
        ).sink_to(outputs[name])
    retracting = keyed.window(TumblingEventTimeWindows.of(10)).trigger(AnyOf(CountTrigger.of(2), EventTimeTrigger()))
    retracting.allowed_lateness(20).retracting_fired_panes().aggregate(Sum("v"), WindowRow(pane="pane")).sink_to(
        outputs["retracting"]
    )
    # the default trigger with pane columns runs on the columnar operator on Spark (panes explain says so)
    on_columns = keyed.window(TumblingEventTimeWindows.of(10)).allowed_lateness(20)
    on_columns.aggregate(Sum("v"), WindowRow(pane="pane")).sink_to(outputs["pane info on columns"])
    env.execute()
    return {name: sorted(out.values, key=repr) for name, out in outputs.items()}


def test_composite_triggers_pane_info_and_retractions_alike_on_both_runners(spark: Any) -> None:
    local = run(StreamEnvironment(LocalRunner()))
    assert all(local.values()), "every branch fires"
    assert any(r["retract"] for r in local["retracting"])
    assert {r["pane_timing"] for r in local["retracting"]} >= {"early", "on time", "late"}
    assert {r["pane_timing"] for r in local["pane info on columns"]} == {"on time", "late"}
    assert run(StreamEnvironment(SparkRunner(spark, num_shards=2))) == local
