"""The two-input scenarios (``tests/two_input_scenarios.py``), whose expected output Flink 2.3.0 produced, on the
Spark runner (a real local SparkSession, two micro-batch sources, one event per micro-batch, one query per
scenario: a query has one watermark, which independent pipelines would share): each key's records in Flink's
order (keys live in shards, so records of different keys may interleave otherwise), and each broadcast element
once per shard with the watermark it saw in Flink."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import ListSink, StreamEnvironment
from panes.testing.scenario import Scenario
from tests.timer_scenarios import BROADCAST_RECORDS as BROADCAST
from tests.timer_scenarios import by_key, runtime_mode
from tests.two_input_scenarios import load_all, micro_batches, pipeline, ties_in_arrival_order

pytestmark = pytest.mark.spark

# the joins of tests/join_scenarios.py, which tests/spark/test_joins.py runs on Spark in one job (reading their
# events and Flink's output from these files)
IN_THE_JOINS_JOB = {
    "04_interval_join_late_data_on_both_sides",
    "05_interval_join_cleanup_before_the_partner",
    "06_window_join_fires_again_within_the_allowed_lateness",
    "07_window_co_group_drops_late_elements",
}
SCENARIOS = [s for s in load_all() if s.name not in IN_THE_JOINS_JOB]
SHARDS = 2


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_a_two_input_scenario_on_spark(scenario: Scenario, spark: Any) -> None:
    from panes.spark import SparkRunner

    assert scenario.expected is not None
    env = StreamEnvironment(SparkRunner(spark, num_shards=SHARDS), runtime_mode=runtime_mode(scenario))
    sink = ListSink()
    first, second = (env.from_micro_batches(micro_batches(scenario, side)) for side in (1, 2))
    pipeline(first, second, scenario).sink_to(sink)
    env.execute(f"two inputs {scenario.name}")
    # in BATCH mode, among equal timestamps: arrival order (Flink: its sorted inputs' order; STREAMING: no change)
    records, expected = by_key(sink.values), by_key(ties_in_arrival_order(scenario.expected["output"]))
    # every keyed instance (a shard, as a parallel instance in Flink) gets every broadcast element
    broadcast = expected.pop(BROADCAST, [])
    assert sorted(map(repr, records.pop(BROADCAST, []))) == sorted(map(repr, broadcast * SHARDS))
    assert records == expected
