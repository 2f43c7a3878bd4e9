"""A job failing on Spark raises what it raises on the local runner: the same exception type and message,
with Spark's exception kept as the cause."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from panes.datastream import StreamEnvironment
from panes.datastream.sinks import ListSink
from panes.errors import BadRecordError, UserFunctionError
from panes.local import LocalRunner
from panes.spark import SparkRunner
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows


class CheckoutRefused(Exception):
    """A user's own exception type, raised by a user function."""


def refuse_page_b(value: dict[str, Any]) -> dict[str, Any]:
    if value["page"] == "/b":
        raise CheckoutRefused(f"page {value['page']} refused")
    return value


BATCHES = [[{"page": "/a", "ts": 1_000}, {"page": "/b", "ts": 1_500}], [{"page": "/a", "ts": 2_500}]]


def window_without_timestamps(env: StreamEnvironment) -> None:
    # an event-time window over elements that never got a timestamp: a bad record in the window step
    (
        env.from_micro_batches(BATCHES)
        .key_by("page")
        .window(TumblingEventTimeWindows.of(1_000))
        .reduce(lambda a, b: b)
        .sink_to(ListSink())
    )


def bounded_window_without_timestamps(env: StreamEnvironment) -> None:
    # a collection runs as one Spark batch job: its failure is a PythonException, not a query's
    env.from_collection([e for batch in BATCHES for e in batch]).key_by("page").window(
        TumblingEventTimeWindows.of(1_000)
    ).reduce(lambda a, b: b).sink_to(ListSink())


def failing_user_map(env: StreamEnvironment) -> None:
    (
        env.from_micro_batches(BATCHES)
        .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts"))
        .map(refuse_page_b)
        .key_by("page")
        .window(TumblingEventTimeWindows.of(1_000))
        .reduce(lambda a, b: b)
        .sink_to(ListSink())
    )


def drifting_file_sink(folder: Path) -> Callable[[StreamEnvironment], None]:
    def build(env: StreamEnvironment) -> None:
        env.from_micro_batches([[{"a": 1}], [{"a": 1.5}]]).sink_to_files(str(folder))

    return build


def failures(spark: Any, build: Callable[[StreamEnvironment], None], expected: type[BaseException]) -> dict[str, Any]:
    raised = {}
    for name, runner in (("local", LocalRunner(clock="stepping")), ("spark", SparkRunner(spark, num_shards=2))):
        env = StreamEnvironment(runner)
        build(env)
        with pytest.raises(expected) as failure:
            env.execute()
        raised[name] = failure.value
    return raised


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (window_without_timestamps, BadRecordError),
        (bounded_window_without_timestamps, BadRecordError),
        (failing_user_map, UserFunctionError),
    ],
    ids=["bad-record-in-a-keyed-step", "bad-record-in-a-bounded-job", "user-function-in-a-fused-step"],
)
def test_a_failing_job_raises_the_same_exception_on_both_runners(spark: Any, build: Any, expected: type) -> None:
    raised = failures(spark, build, expected)
    local, on_spark = raised["local"], raised["spark"]
    assert type(on_spark) is type(local)
    # panes' message first, not Spark's (a step's instance is named per runner: "(1/1)" or "(shard 0/1)")
    assert str(on_spark).splitlines()[0].split(" failed")[-1] == str(local).splitlines()[0].split(" failed")[-1]
    assert str(on_spark).splitlines()[1:] == str(local).splitlines()[1:]
    if isinstance(on_spark, UserFunctionError):
        # the user's exception is the cause on both runners; Spark's exception is kept as the context
        assert type(on_spark.__cause__) is type(local.__cause__) is CheckoutRefused
        kept = on_spark.__context__
    else:
        kept = on_spark.__cause__
    assert kept is not None and "panes-error[" in str(kept)  # Spark's exception, kept


def test_a_value_refused_by_a_file_sink_raises_the_same_exception_on_both_runners(spark: Any, tmp_path: Path) -> None:
    raised = {}
    for name, runner in (("local", LocalRunner(clock="stepping")), ("spark", SparkRunner(spark, num_shards=2))):
        env = StreamEnvironment(runner)
        drifting_file_sink(tmp_path / name)(env)
        with pytest.raises(BadRecordError) as failure:
            env.execute()
        raised[name] = failure.value
    assert type(raised["spark"]) is type(raised["local"])
    assert str(raised["spark"]).replace(str(tmp_path / "spark"), "") == str(raised["local"]).replace(
        str(tmp_path / "local"), ""
    )
    assert "does not fit the sink's schema" in str(raised["spark"]).splitlines()[0]


class NeedsTwoArguments(Exception):
    def __init__(self, key: str, window: int) -> None:
        super().__init__(f"key {key} in window {window}")
        self.key = key


def test_an_exception_travels_with_its_type_arguments_and_attributes_without_its_constructor() -> None:
    from panes.spark.failures import carried, carrying

    @carrying
    def fail() -> None:
        raise NeedsTwoArguments("a", 10)

    with pytest.raises(Exception) as failure:
        fail()
    # what Spark does with it: the worker's traceback becomes text inside its own exception
    spark_error = RuntimeError("Job aborted; Python worker said:\n" + str(failure.value))
    original = carried(spark_error)
    assert isinstance(original, NeedsTwoArguments)
    assert str(original) == "key a in window 10" and original.key == "a"
    assert carried(RuntimeError("no marker here")) is None
