"""Step metrics on Spark (``docs/metrics.md``): the job of ``tests/metrics_jobs.py`` counts on Spark what it
counts on the local runner, bounded (Observations) and streaming (each micro-batch's observed metrics)."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import StreamEnvironment
from tests.metrics_jobs import ROWS, build, check


@pytest.mark.parametrize("micro_batches", [False, True], ids=["bounded", "streaming"])
def test_every_kind_of_step_counts_on_spark_what_it_counts_locally(spark: Any, micro_batches: bool) -> None:
    from panes.spark import SparkRunner

    batches: list[Any] = []
    env = StreamEnvironment(SparkRunner(spark, num_shards=2, on_progress=batches.append))
    sinks = build(env, micro_batches)
    result = env.execute("metrics")
    check(result, sinks)
    if micro_batches:
        # a batch's results are what the main sink received: not what the steps before it passed on, nor
        # the error side output
        assert batches and sum(batch.results for batch in batches) == len(sinks[0].values)
        # rows in are the source's records: not its end-of-input sentinel
        assert sum(batch.input_rows for batch in batches) == len(ROWS)
        # the keyed steps keep their state in Spark's state store, and say how much
        assert result.metrics["remember"].state_bytes > 0
        per_batch = result.details["metrics"]["per_batch"]
        assert sum(batch.get("positive", {}).get("records_in", 0) for batch in per_batch) == 6
