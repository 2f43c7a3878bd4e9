"""The keyed-timer scenarios (``tests/timer_scenarios.py``), whose expected output Flink 2.3.0 produced, on the
Spark runner (a real local SparkSession, one event per micro-batch): each key's records in Flink's order (keys
live in shards, so records of different keys may interleave otherwise)."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import ListSink, StreamEnvironment
from panes.testing.scenario import Scenario
from tests.timer_scenarios import by_key, elements, load_all, pipeline, runtime_mode

pytestmark = pytest.mark.spark

SCENARIOS = load_all()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_a_timer_scenario_on_spark(scenario: Scenario, spark: Any) -> None:
    from panes.spark import SparkRunner

    assert scenario.expected is not None
    env = StreamEnvironment(SparkRunner(spark, num_shards=2), runtime_mode=runtime_mode(scenario))
    sink = ListSink()
    pipeline(env.from_micro_batches([[element] for element in elements(scenario)]), scenario).sink_to(sink)
    env.execute(f"timers {scenario.name}")
    assert by_key(sink.values) == by_key(scenario.expected["output"])
