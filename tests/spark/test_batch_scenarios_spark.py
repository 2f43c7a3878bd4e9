"""The BATCH-mode window scenarios (``tests/batch_scenarios.py``) on the Spark runner (a real local SparkSession,
three shards): Flink's windows, in timestamp order, ties in arrival order."""

from __future__ import annotations

from typing import Any

import pytest

from panes.testing.scenario import Scenario
from tests.batch_scenarios import SCENARIOS, check_against_flink, run_in_batch_mode

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_a_batch_scenario_on_spark(scenario: Scenario, spark: Any) -> None:
    from panes.spark import SparkRunner

    check_against_flink(scenario, run_in_batch_mode(scenario, SparkRunner(spark, num_shards=3)), per_pane_order=False)
