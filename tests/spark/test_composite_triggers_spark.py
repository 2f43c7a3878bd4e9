"""Composite triggers through the DataStream API give the same firings on the local runner and on Spark (the
harness tests in ``tests/core/test_composite_triggers.py`` pin down the firings themselves)."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import ListSink, StreamEnvironment
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


def run(env: StreamEnvironment, name: str) -> list[Any]:
    make_trigger, assigner = TRIGGERS[name]
    out = ListSink()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    stream = env.from_micro_batches(BATCHES).assign_timestamps_and_watermarks(strategy)
    windowed = stream.key_by("k").window(assigner).trigger(make_trigger()).allowed_lateness(20)
    windowed.process(lambda key, ctx, elements: [(key, ctx.window().start, sorted(e["v"] for e in elements))]).sink_to(
        out
    )
    env.execute()
    return sorted(out.values)


@pytest.mark.parametrize("name", sorted(TRIGGERS))
def test_composite_triggers_fire_alike_on_both_runners(spark: Any, name: str) -> None:
    local = run(StreamEnvironment(LocalRunner()), name)
    assert local, "the job fires"
    assert run(StreamEnvironment(SparkRunner(spark, num_shards=2)), name) == local


def test_retracting_panes_with_pane_info_alike_on_both_runners(spark: Any) -> None:
    from panes.functions import Sum
    from panes.windowing import WindowRow

    def rows(env: StreamEnvironment) -> list[Any]:
        out = ListSink()
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
        stream = env.from_micro_batches(BATCHES, type_info="k STRING, v BIGINT, ts BIGINT")
        windowed = stream.assign_timestamps_and_watermarks(strategy).key_by("k").window(TumblingEventTimeWindows.of(10))
        windowed = windowed.trigger(AnyOf(CountTrigger.of(2), EventTimeTrigger())).allowed_lateness(20)
        windowed.retracting_fired_panes().aggregate(Sum("v"), WindowRow(pane="pane")).sink_to(out)
        env.execute()
        return sorted(out.values, key=repr)

    local = rows(StreamEnvironment(LocalRunner()))
    assert any(r["retract"] for r in local) and {r["pane_timing"] for r in local} >= {"early", "on time", "late"}
    assert rows(StreamEnvironment(SparkRunner(spark, num_shards=2))) == local
