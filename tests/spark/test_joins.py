"""Window join, co-group and interval joins on Spark: one streaming job over the shared scenarios of
``tests/join_scenarios.py`` (late firings, dropped late elements, one-sided co-groups, late-data outputs,
cleanup), which must give the same records as the local runner and as the scenarios' Flink-derived
expectations.

The scenarios end their micro-batches right after each watermark they carry, so every element meets the
watermark it meets element by element; records are compared as multisets (Spark does not promise the order
across keys).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from panes.datastream import ListSink, StreamEnvironment
from panes.local import LocalRunner
from panes.spark import SparkRunner
from tests import join_scenarios as scenarios

pytestmark = pytest.mark.spark


def run_all(env: StreamEnvironment) -> dict[str, Counter[Any]]:
    stream = scenarios.source(env, scenarios.ALL_EVENTS)
    late = scenarios.interval_join_with_late_outputs(stream)
    outputs = {
        "join": scenarios.window_join(stream),
        "co_group": scenarios.window_co_group(stream),
        "late": late,
        "left_late": late.get_side_output(scenarios.LEFT_LATE),
        "right_late": late.get_side_output(scenarios.RIGHT_LATE),
        "cleanup": scenarios.interval_join_with_cleanup(stream),
    }
    sinks = {name: ListSink() for name in outputs}
    for name, output in outputs.items():
        output.sink_to(sinks[name])
    env.execute()
    return {name: Counter((r.value, r.timestamp) for r in sink.records) for name, sink in sinks.items()}


def test_joins_on_spark_give_the_local_runners_and_flinks_results(spark: Any) -> None:
    on_spark = run_all(StreamEnvironment(SparkRunner(spark, num_shards=2)))
    on_local = run_all(StreamEnvironment(LocalRunner(clock="stepping")))
    expected = {
        "join": Counter(scenarios.WINDOW_JOIN_EXPECTED),
        "co_group": Counter(scenarios.WINDOW_CO_GROUP_EXPECTED),
        "late": Counter(scenarios.INTERVAL_LATE_EXPECTED),
        "left_late": Counter(scenarios.INTERVAL_LEFT_LATE_EXPECTED),
        "right_late": Counter(scenarios.INTERVAL_RIGHT_LATE_EXPECTED),
        "cleanup": Counter(scenarios.INTERVAL_CLEANUP_EXPECTED),
    }
    assert on_local == expected
    assert on_spark == expected
