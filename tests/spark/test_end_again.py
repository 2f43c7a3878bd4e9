"""A finite job stopped after its end-of-input micro-batch committed, before Spark planned its last one (the one
without input that fires what the end of input's watermark closes), gets that firing on its restart
(``panes.spark.end_again``): its micro-batch sources deliver their end of input once more, and the restarted query
fires there what the lost micro-batch would have. Read from files and through panes' data source alike.

The stop is made by rolling a finished run's checkpoint back to where a kill between the two micro-batches leaves
it (``commits/N`` written; ``offsets/N + 1``, ``commits/N + 1`` and the state store's version of ``N + 1`` not):
``tests/spark/test_crash_points.py`` kills a job's process there (``-m faults``)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from panes.datastream import KeyedProcessFunction, ListSink, StreamEnvironment
from panes.local import LocalRunner
from panes.spark import SparkRunner
from panes.spark.crash_hook import VARIABLE
from panes.spark.end_again import FOLDER
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows

pytestmark = pytest.mark.spark

LISTS = [
    [{"k": "a", "ts": 1_000}, {"k": "b", "ts": 1_500}],
    [{"k": "a", "ts": 2_500}],
    [{"k": "b", "ts": 2_600}, {"k": "a", "ts": 2_700}],
]
UNREACHED_HOOK = "between:999:/nonexistent/panes-marker"
"""A crash hook at a point of the data source no job here reaches: the job reads through the data source."""


DETAILS: dict[str, Any] = {}
"""The details of the last :func:`run`'s result."""


class AtTheEnd(KeyedProcessFunction):
    """Reports each key's elements on an event-time timer that only the end of input's watermark reaches."""

    def process_element(self, value: Any, ctx: Any) -> Any:
        ctx.timer_service().register_event_time_timer(10**12)
        yield from ()

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield ("timer", ctx.get_current_key(), timestamp)


def run(env: StreamEnvironment, end_of_input: bool = True) -> Counter[Any]:
    """The job's results on ``env``, as a multiset (the run's details in :data:`DETAILS`)."""
    stream = env.from_micro_batches(LISTS, end_of_input=end_of_input).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    )
    sink = ListSink()
    keyed = stream.key_by("k")
    keyed.window(TumblingEventTimeWindows.of(1_000)).process(
        lambda key, ctx, rows: [("window", key, ctx.window().start, len(list(rows)))]
    ).sink_to(sink)
    keyed.process(AtTheEnd()).sink_to(sink)
    DETAILS.clear()
    DETAILS.update(env.execute().details)
    return Counter(sink.values)


def roll_back_the_last_micro_batch(checkpoint: Path) -> int:
    """Leave ``checkpoint`` as a kill right before Spark planned its last micro-batch leaves it; that batch's id."""
    last = max(int(name) for name in os.listdir(checkpoint / "commits") if name.isdigit())
    for log in ("offsets", "commits"):
        for name in (str(last), f".{last}.crc"):
            (checkpoint / log / name).unlink(missing_ok=True)
    for folder, _, names in os.walk(checkpoint / "state"):
        for name in names:
            if name.lstrip(".").split(".")[0] == str(last + 1):  # the state store's version after batch `last`
                os.unlink(os.path.join(folder, name))
    return last


@pytest.mark.parametrize("reading", ["files", "data source"])
def test_a_restart_after_the_end_of_input_committed_fires_what_the_last_micro_batch_fires(
    spark: Any, tmp_path: Path, monkeypatch: Any, reading: str
) -> None:
    if reading == "data source":
        monkeypatch.setenv(VARIABLE, UNREACHED_HOOK)
    everything = run(StreamEnvironment(LocalRunner()))
    # the lists without their end: the local runner reads them all and stops (its limit is never reached)
    before_the_end = run(StreamEnvironment(LocalRunner(max_records=10**6)), end_of_input=False)
    at_the_end = everything - before_the_end  # what the end of input's watermark fires
    assert at_the_end and sum(at_the_end.values()) == everything.total() - before_the_end.total()

    checkpoint = tmp_path / "checkpoint"
    spark_runner = {"num_shards": 2, "checkpoint_location": str(checkpoint)}
    assert run(StreamEnvironment(SparkRunner(spark, **spark_runner))) == everything
    last = roll_back_the_last_micro_batch(checkpoint)

    assert run(StreamEnvironment(SparkRunner(spark, **spark_runner))) == at_the_end
    assert os.listdir(checkpoint / FOLDER) == [str(last)]  # the micro-batch that delivered the end again
    # a run after it: nothing is left to fire, and the end of input is not delivered a third time; Spark's trigger
    # that found nothing to read (its progress names the next micro-batch) is no micro-batch
    assert run(StreamEnvironment(SparkRunner(spark, **spark_runner))) == Counter()
    assert DETAILS["batches"] == 0 and DETAILS["progress"] == [], DETAILS["progress"]
    assert os.listdir(checkpoint / FOLDER) == [str(last)]
    assert max(int(name) for name in os.listdir(checkpoint / "commits") if name.isdigit()) == last
