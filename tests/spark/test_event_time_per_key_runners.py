"""Event time per key (``watermark_per_key``) through the public API on both runners: the scenarios of
``tests/scenarios/per_key`` on the local runner and on the Spark runner (a real local SparkSession, micro-batches
cut where the stream's watermark moves, or one per event at its processing time for quiet keys, as the conformance
suite cuts them), and a keyed process function's timers per key on Spark (``tests/scenarios/per_key/timers``)."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import ListSink, StreamEnvironment
from panes.testing.scenario import PANE_FIELDS, Scenario, comparable, emission_order_per_key
from tests.conftest import DERIVED_SCENARIOS
from tests.spark.test_conformance_both_runners import run

SCENARIOS = Scenario.load_all(DERIVED_SCENARIOS / "per_key")
assert SCENARIOS, "no per-key scenario"
# Spark shards keys: panes of one key leave in their order, but the sink sees shards' rows in no promised order
WITHOUT_EMISSION_ORDER = [f for f in PANE_FIELDS if f != "emit_seq"]


CASES = [pytest.param(s, "local", id=f"{s.name}-local") for s in SCENARIOS] + [
    pytest.param(s, "spark", id=f"{s.name}-spark", marks=pytest.mark.spark) for s in SCENARIOS
]


@pytest.mark.parametrize(("scenario", "runner_name"), CASES)
def test_each_key_gets_what_flink_gives_for_its_elements_alone(
    scenario: Scenario, runner_name: str, request: pytest.FixtureRequest
) -> None:
    spark = request.getfixturevalue("spark") if runner_name == "spark" else None
    assert scenario.expected is not None
    fields = PANE_FIELDS if runner_name == "local" else WITHOUT_EMISSION_ORDER
    got = comparable(emission_order_per_key(run(scenario, runner_name, spark)), fields)
    assert got == comparable(emission_order_per_key(scenario.expected), fields)


TIMER_SCENARIOS = Scenario.load_all(DERIVED_SCENARIOS / "per_key" / "timers")


@pytest.mark.spark
@pytest.mark.parametrize("scenario", TIMER_SCENARIOS, ids=[s.name for s in TIMER_SCENARIOS])
def test_a_keyed_process_function_s_timers_fire_by_each_key_s_time_on_spark(scenario: Scenario, spark: Any) -> None:
    """``KeyedStream.watermark_per_key`` on Spark (one event per micro-batch): each key's records are Flink's for
    that key's elements alone, as on the harness and the local runner (``tests/core/test_event_time_per_key.py``)."""
    from panes.spark import SparkRunner
    from tests.timer_scenarios import by_key, elements, pipeline

    assert scenario.expected is not None
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    sink = ListSink()
    pipeline(env.from_micro_batches([[element] for element in elements(scenario)]), scenario).sink_to(sink)
    env.execute(f"per-key timers {scenario.name}")
    assert by_key(sink.values) == by_key(scenario.expected["output"])
