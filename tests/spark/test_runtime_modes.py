"""Runtime execution modes on Spark: the shared cases of ``tests/runtime_mode_cases.py`` give what the local
runner and Flink give. Several cases share one job (one environment, one sink each) to keep Spark's runs few;
the shard count (3) is more than one, so sorted input and per-subtask function instances are exercised."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import ListSink, RuntimeExecutionMode, StreamEnvironment
from panes.spark import SparkRunner
from tests.runtime_mode_cases import BATCH, CASES, EXPECTED, STREAMING, comparable


def run_together(spark: Any, mode: RuntimeExecutionMode, names: list[str]) -> tuple[dict[str, ListSink], str]:
    env = StreamEnvironment(SparkRunner(spark, num_shards=3), runtime_mode=mode)
    sinks = {name: CASES[name](env) for name in names}
    return sinks, env.execute(mode.value).details["mode"]


def test_batch_cases_on_spark(spark: Any) -> None:
    names = [name for name, expected in EXPECTED.items() if BATCH in expected and name != "keyed_co_process"]
    sinks, mode = run_together(spark, BATCH, names)
    assert mode == "batch"
    for name in names:
        assert comparable(sinks[name].values) == comparable(EXPECTED[name][BATCH]), name


def test_streaming_cases_on_spark_with_environment_parallelism_one(spark: Any) -> None:
    # keyed_co_process sets the environment's parallelism to 1: every keyed step has one shard, so one instance
    # of each function (before, each of num_shards shards held its own and the timer was registered once per shard);
    # (late_element_in_a_window reads micro-batches: a streaming query of its own, below)
    names = ["keyed_co_process", "end_of_stream_count_evictor", "reduce_with_state"]
    sinks, mode = run_together(spark, STREAMING, names)
    assert mode == "bounded"
    for name in names:
        assert comparable(sinks[name].values) == comparable(EXPECTED[name][STREAMING]), name


def test_late_elements_in_streaming_on_spark(spark: Any) -> None:
    sinks, mode = run_together(spark, STREAMING, ["late_element_in_a_window"])
    assert mode == "streaming"
    expected = EXPECTED["late_element_in_a_window"][STREAMING]
    assert comparable(sinks["late_element_in_a_window"].values) == comparable(expected)


def test_batch_refuses_a_streaming_source_on_spark(spark: Any) -> None:
    env = StreamEnvironment(SparkRunner(spark, num_shards=3), runtime_mode=RuntimeExecutionMode.BATCH)
    env.from_micro_batches([[1], [2]], end_of_input=False).sink_to(ListSink())
    with pytest.raises(ValueError, match="BATCH needs bounded sources"):
        env.execute()
