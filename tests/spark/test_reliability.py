"""Bad records and failures on the Spark runner follow the local runner's rules: a null or missing key is a bad
record of the keyed step (on the record path and on the columnar keying path alike), a missing input path
fails the job when it starts, a user function that raises sends its element to the step's error output or
fails the job with a ``UserFunctionError`` naming the step (and the key and window). The tests marked
``spark`` use a real local SparkSession; the others run the functions Spark runs in process."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from panes.datastream import ListSink, OutputTag, StreamEnvironment
from panes.errors import BadRecordError, ErrorRecord, UserFunctionError
from panes.functions import Count
from panes.spark.failures import carried
from panes.spark.fused import Chain, chain_function
from panes.spark.layout import ChannelCodes, Layout, read_records, unpack
from panes.spark.linear import linearize
from panes.watermarks import WatermarkStrategy
from panes.windowing import GlobalWindows, TumblingEventTimeWindows
from panes.windowing.windows import TimeWindow
from tests.spark.microbatch_model import MicroBatchExecutor

ERRORS: OutputTag[Any] = OutputTag("errors")
ROWS: list[Any] = [{"k": "a", "ts": 1}, {"k": None, "ts": 2}, {"k": "b", "ts": 3}, {"k": "a", "ts": 4}]


def per_key(stream: Any, errors: bool = True) -> Any:
    windowed = stream.key_by("k").window(GlobalWindows.create_with_end_of_stream_trigger())
    if errors:
        windowed = windowed.side_output_errors(ERRORS)
    return windowed.process(lambda key, ctx, rows: [(key, len(list(rows)))])


def test_a_null_key_goes_to_the_error_output_of_the_keyed_step_in_micro_batches() -> None:
    env = StreamEnvironment("local")
    source = env.from_collection([])
    counts = per_key(source)
    main, bad = ListSink(), ListSink()
    counts.sink_to(main)
    counts.get_side_output(ERRORS).sink_to(bad)
    executor = MicroBatchExecutor(env.plan(), num_shards=2)
    executor.run([{source.transformation.id: ROWS[:2]}, {source.transformation.id: ROWS[2:]}])
    plan = env.plan()
    assert sorted(executor.sink_values(plan.sinks[0].id)) == [("a", 2), ("b", 1)]
    [failure] = executor.sink_values(plan.sinks[1].id)
    assert isinstance(failure, ErrorRecord) and failure.value == {"k": None, "ts": 2}
    assert "key_by('k')" in failure.reason and "None" in failure.reason


@pytest.mark.spark
def test_a_null_key_without_an_error_output_fails_in_micro_batches(spark: Any) -> None:
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    per_key(env.from_micro_batches([ROWS]), errors=False).sink_to(ListSink())
    with pytest.raises(BadRecordError, match=r"key_by\('k'\).*None.*null keys"):
        env.execute()


def keyed_chain(errors: bool) -> tuple[Any, ChannelCodes, Layout, Any]:
    """The fused call that shards a typed source by ``key_by("k")`` before a columnar window count."""
    env = StreamEnvironment("local")
    source = env.from_collection([], type_info="k STRING, ts BIGINT")
    windowed = source.key_by("k").window(TumblingEventTimeWindows.of(10))
    if errors:
        windowed = windowed.side_output_errors(ERRORS)
    counts = windowed.aggregate(Count())
    counts.print()
    if errors:
        counts.get_side_output(ERRORS).print()
    steps = linearize(env.plan())
    codes = ChannelCodes.of_steps(steps)
    (keyed,) = [s for s in steps if s.kind == "keyed"]
    chain = Chain(keyed=keyed, source=(source.transformation.id, None))
    channels = [(source.transformation.id, None)] + ([(counts.transformation.id, ERRORS.tag_id)] if errors else [])
    return chain, codes, Layout(codes, channels), counts


def test_null_keys_in_a_key_column_are_bad_records_on_the_columnar_keying_path() -> None:
    chain, codes, layout, counts = keyed_chain(errors=True)
    frame = pa.RecordBatch.from_pydict({"k": ["a", None, "b"], "ts": [1, 2, 3]})
    (out,) = chain_function(chain, codes, layout, 2, 128)(iter([frame]))
    rows = [
        record
        for payload in out.column("payload").to_pylist()
        for batch in unpack(payload)
        for record in read_records(batch, codes, np.ones(batch.num_rows, dtype=bool))
    ]
    errors = [r.value for r in rows if r.channel == (counts.transformation.id, ERRORS.tag_id)]
    assert sorted(r.value["k"] for r in rows if r.channel == chain.source) == ["a", "b"]
    [failure] = errors
    assert isinstance(failure, ErrorRecord) and failure.value == {"k": None, "ts": 2}
    assert "key_by('k')" in failure.reason


def test_null_keys_in_a_key_column_without_an_error_output_fail_the_call() -> None:
    chain, codes, layout, _ = keyed_chain(errors=False)
    frame = pa.RecordBatch.from_pydict({"k": ["a", None], "ts": [1, 2]})
    with pytest.raises(Exception) as failure:  # a worker function: it leaves the error for the driver to raise
        list(chain_function(chain, codes, layout, 2, 128)(iter([frame])))
    original = carried(failure.value)
    assert isinstance(original, BadRecordError) and re.search(r"key_by\('k'\).*None", str(original))


@pytest.mark.spark
def test_null_keys_of_a_dataframe_are_bad_records_on_spark_as_on_the_local_runner(spark: Any) -> None:
    from panes.local import LocalRunner
    from panes.spark import SparkRunner

    frame = spark.createDataFrame([("a", 1), (None, 2), ("b", 3), ("a", 4)], "k STRING, ts BIGINT")
    results = {}
    for name, env in (
        ("spark", StreamEnvironment(SparkRunner(spark, num_shards=2))),
        ("local", StreamEnvironment(LocalRunner())),
    ):
        source = env.from_dataframe(frame) if name == "spark" else env.from_collection(frame_rows(frame))
        counts = per_key(source)
        main, bad = ListSink(), ListSink()
        counts.sink_to(main)
        counts.get_side_output(ERRORS).sink_to(bad)
        env.execute()
        results[name] = sorted(main.values), [(f.value, f.error_type) for f in bad.values]
    assert results["spark"] == results["local"]
    assert results["spark"] == ([("a", 2), ("b", 1)], [({"k": None, "ts": 2}, "BadRecordError")])


@pytest.mark.spark
def test_null_keys_in_micro_batches_reach_the_error_output_on_spark(spark: Any) -> None:
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    counts = per_key(env.from_micro_batches([ROWS[:2], ROWS[2:]]))
    main, bad = ListSink(), ListSink()
    counts.sink_to(main)
    counts.get_side_output(ERRORS).sink_to(bad)
    env.execute()
    assert sorted(main.values) == [("a", 2), ("b", 1)]
    [failure] = bad.values
    assert isinstance(failure, ErrorRecord) and failure.value == {"k": None, "ts": 2}
    assert failure.error_type == "BadRecordError" and "key_by('k')" in failure.reason


def frame_rows(frame: Any) -> list[dict[str, Any]]:
    return [row.asDict() for row in frame.collect()]


@pytest.mark.spark
def test_a_null_key_without_an_error_output_fails_the_spark_job_naming_the_field(spark: Any) -> None:
    from panes.spark import SparkRunner

    frame = spark.createDataFrame([("a", 1), (None, 2)], "k STRING, ts BIGINT")
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    per_key(env.from_dataframe(frame), errors=False).sink_to(ListSink())
    with pytest.raises(BadRecordError, match=r"key_by\('k'\).*None.*null keys"):
        env.execute()


@pytest.mark.spark
@pytest.mark.parametrize("streaming", [False, True])
def test_a_missing_input_path_fails_at_execute_naming_the_path_as_on_the_local_runner(
    spark: Any, tmp_path: Path, streaming: bool
) -> None:
    from panes.local import LocalRunner
    from panes.spark import SparkRunner

    missing = tmp_path / "no-such-dir"
    for env in (
        StreamEnvironment(SparkRunner(spark, trigger="available_now")),
        StreamEnvironment(LocalRunner(max_records=10)),
    ):
        env.from_files(str(missing), format="json", schema="k STRING, ts BIGINT", streaming=streaming).sink_to(
            ListSink()
        )
        with pytest.raises(FileNotFoundError, match=f"{missing}.*does not exist"):
            env.execute()


BY_TS = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")


def count_unless_b(key: str, ctx: Any, rows: Any) -> Any:
    if key == "b":
        raise ValueError("no count for b")
    return [(key, ctx.window().start, len(list(rows)))]


def failing_job(env: StreamEnvironment, source: Any, errors: bool = True) -> tuple[ListSink, ListSink, ListSink]:
    """A map failing on ``ts == 2`` and a window function failing for key ``b``, with error outputs."""
    mapped = source.map(lambda row: {**row, "inverse": 1 / (row["ts"] - 2)})
    if errors:
        mapped = mapped.side_output_errors(ERRORS)
    windowed = mapped.assign_timestamps_and_watermarks(BY_TS).key_by("k").window(TumblingEventTimeWindows.of(10))
    if errors:
        windowed = windowed.side_output_errors(ERRORS)
    counts = windowed.process(count_unless_b)
    main, bad_map, bad_window = ListSink(), ListSink(), ListSink()
    counts.sink_to(main)
    if errors:
        mapped.get_side_output(ERRORS).sink_to(bad_map)
        counts.get_side_output(ERRORS).sink_to(bad_window)
    return main, bad_map, bad_window


FAILING_ROWS = [{"k": "a", "ts": 1}, {"k": "b", "ts": 2}, {"k": "b", "ts": 3}, {"k": "a", "ts": 4}]


def test_failing_user_functions_go_to_their_steps_error_outputs_in_micro_batches() -> None:
    env = StreamEnvironment("local")
    source = env.from_collection([])
    sinks = failing_job(env, source)
    executor = MicroBatchExecutor(env.plan(), num_shards=2)
    executor.run([{source.transformation.id: FAILING_ROWS}])
    main, bad_map, bad_window = (executor.sink_values(sink.id) for sink in env.plan().sinks)
    assert main == [("a", 0, 2)]
    [map_failure] = bad_map
    assert (map_failure.value, map_failure.error_type, map_failure.key) == (FAILING_ROWS[1], "ZeroDivisionError", None)
    assert map_failure.operator.startswith("Map")
    [window_failure] = bad_window
    assert (window_failure.key, window_failure.window, window_failure.value) == ("b", TimeWindow(0, 10), None)
    assert window_failure.reason == "ValueError: no count for b" and window_failure.timestamp == 9
    assert len(sinks) == 3


@pytest.mark.spark
def test_without_error_outputs_a_failing_function_fails_naming_the_step_key_and_window(spark: Any) -> None:
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    failing_job(env, env.from_micro_batches([FAILING_ROWS]), errors=False)
    with pytest.raises(UserFunctionError, match=r"^Map \(shard \d+/\d+\) failed: ZeroDivisionError") as failure:
        env.execute()
    assert isinstance(failure.value.__cause__, ZeroDivisionError)
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    failing_job(env, env.from_micro_batches([FAILING_ROWS]).filter(lambda row: row["ts"] != 2), errors=False)
    with pytest.raises(UserFunctionError, match=r"failed for key 'b' in window TimeWindow\(start=0, end=10\)"):
        env.execute()


@pytest.mark.spark
def test_failing_user_functions_are_routed_on_spark_as_on_the_local_runner(spark: Any) -> None:
    from panes.local import LocalRunner
    from panes.spark import SparkRunner

    results = {}
    for name, env in (
        ("spark", StreamEnvironment(SparkRunner(spark, num_shards=2))),
        ("local", StreamEnvironment(LocalRunner())),
    ):
        main, bad_map, bad_window = failing_job(env, env.from_micro_batches([FAILING_ROWS]))
        env.execute()
        results[name] = (
            sorted(main.values),
            [(f.value, f.error_type, f.reason) for f in bad_map.values],
            [(f.key, f.window, f.error_type, f.reason, f.timestamp) for f in bad_window.values],
        )
    assert results["spark"] == results["local"]
    assert results["spark"][2] == [("b", TimeWindow(0, 10), "ValueError", "ValueError: no count for b", 9)]


@pytest.mark.spark
def test_a_failing_function_without_an_error_output_fails_the_spark_job_naming_the_step(spark: Any) -> None:
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    env.from_micro_batches([FAILING_ROWS]).map(lambda row: 1 / (row["ts"] - 2)).name("Inverse").sink_to(ListSink())
    with pytest.raises(UserFunctionError, match=r"Inverse \(shard \d+/\d+\) failed: ZeroDivisionError"):
        env.execute()
