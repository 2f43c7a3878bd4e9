"""The Spark runner's micro-batch semantics, stated once in process (``MicroBatchExecutor``), and on Spark
where the model has no real-Spark twin elsewhere.

With every event of a conformance scenario in its own micro-batch, watermarks fall where Flink's did and
the panes equal Flink's (the emission order across shards is not Flink's; everything else is; the same
scenarios run on Spark in ``test_conformance_both_runners``).
"""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import ListSink, StreamEnvironment
from panes.testing.scenario import PANE_FIELDS, Scenario, collect_result, comparable
from tests.conftest import CONFORMANCE
from tests.scenario_api import input_elements, scenario_pipeline
from tests.spark.microbatch_model import MicroBatchExecutor

SCENARIOS = Scenario.load_all(CONFORMANCE)
WITHOUT_EMISSION_ORDER = [f for f in PANE_FIELDS if f != "emit_seq"]


def run_micro_batches(scenario: Scenario, num_shards: int) -> dict[str, Any]:
    env = StreamEnvironment("local")
    source = env.from_collection([])
    sink = ListSink()
    scenario_pipeline(env, source, scenario).sink_to(sink)
    executor = MicroBatchExecutor(env.plan(), num_shards=num_shards)
    source_id = source.transformation.id
    executor.run([{source_id: [element]} for element in input_elements(scenario)])
    sink_id = env.plan().sinks[0].id
    return collect_result(executor.sink_values(sink_id))


@pytest.mark.parametrize("num_shards", [1, 3])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_conformance_example_one_event_per_micro_batch(scenario: Scenario, num_shards: int) -> None:
    assert scenario.expected is not None
    got = comparable(run_micro_batches(scenario, num_shards), WITHOUT_EMISSION_ORDER)
    assert got == comparable(scenario.expected, WITHOUT_EMISSION_ORDER)


@pytest.mark.spark
def test_records_whose_key_cannot_be_read_go_to_the_error_output_of_the_keyed_step(spark: Any) -> None:
    from panes.datastream import OutputTag
    from panes.errors import ErrorRecord
    from panes.spark import SparkRunner
    from panes.windowing import GlobalWindows

    errors: OutputTag[Any] = OutputTag("errors")
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    source = env.from_micro_batches([[{"k": "a"}, {"x": 1}, {"k": "a"}]])
    counts = (
        source.key_by("k")
        .window(GlobalWindows.create_with_end_of_stream_trigger())
        .side_output_errors(errors)
        .process(lambda key, ctx, rows: [(key, len(list(rows)))])
    )
    main, bad = ListSink(), ListSink()
    counts.sink_to(main)
    counts.get_side_output(errors).sink_to(bad)
    env.execute()
    assert main.values == [("a", 2)]
    assert [type(f) for f in bad.values] == [ErrorRecord] and bad.values[0].value == {"x": 1}
