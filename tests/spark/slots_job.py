"""A job whose state grows every micro-batch, for running on more task slots than the test session's two:
``python -m tests.spark.slots_job <master> <output> [shuffle partitions]`` runs it on Spark and writes its outputs
under ``<output>`` (Parquet) and the keyed steps' metrics to ``<output>/metrics.json``.

One-hour tumbling windows (count+sum, run on columns) and a keyed process function that counts each key's
elements in value state and reports them at an event-time timer (element by element): every pane and every key
stays open until the last micro-batch's event, which closes them all, so every micro-batch's calls find the state
all earlier ones left. :func:`build` makes the same job on any environment (the local runner's is the reference).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from panes.datastream import KeyedProcessFunction, StreamEnvironment
from panes.functions import Aggregates, Count, Sum
from panes.state import ValueStateDescriptor
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows, WindowRow

KEYS = 3_000
BATCHES = 5
PER_BATCH = 1_500
HOUR = 3_600_000
TYPE = "key STRING, ts BIGINT, value BIGINT"


def events(batches: int = BATCHES) -> list[list[dict[str, Any]]]:
    """``batches`` micro-batches of :data:`PER_BATCH` rows over :data:`KEYS` keys within one hour, then one row hours
    later (its watermark closes every window and fires every timer)."""
    batches = [
        [
            {"key": f"k{(b * PER_BATCH + i) * 7 % KEYS}", "ts": (b * PER_BATCH + i) * 200, "value": i % 17}
            for i in range(PER_BATCH)
        ]
        for b in range(batches)
    ]
    return [*batches, [{"key": "end", "ts": 10 * HOUR, "value": 0}]]


class Tally(KeyedProcessFunction[Any, Any, Any]):
    """Counts a key's elements; reports the count when the hour ends (an event-time timer per key)."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_event_time_timer(HOUR)
        return iter(())

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        yield {"key": ctx.get_current_key(), "elements": self.count.value()}


def build(env: StreamEnvironment, batches: int = BATCHES) -> dict[str, Any]:
    """The job over ``batches`` micro-batches (:func:`events`) on ``env``; returns its two result streams by name."""
    stamped = env.from_micro_batches(events(batches), type_info=TYPE).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    )
    windows = (
        stamped.key_by("key")
        .window(TumblingEventTimeWindows.of(HOUR))
        .aggregate(Aggregates(n=Count(), total=Sum("value")), WindowRow(key="key", start="start"))
    )
    tally = stamped.key_by(lambda row: row["key"]).process(Tally(), output_type="key STRING, elements BIGINT")
    return {"windows": windows, "tally": tally}


def rows(values: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(tuple(value.values()) for value in values)


def keepers_in_workers(spark: Any) -> bool:
    """Whether the Python workers of ``spark``'s executors host shards in keepers (``PANES_SHARD_KEEPERS``, as
    they see it)."""
    from panes.spark.keeper_client import keepers_enabled

    answers = spark.sparkContext.parallelize([0], 1).map(lambda _: keepers_enabled()).collect()
    return bool(answers[0])


def main(master: str, output: str, partitions: str | None = None, batches: str | None = None) -> None:
    from panes.spark import SparkRunner, create_session

    slots = master[len("local[") : -1] if master.startswith("local[") else "2"
    count = partitions or slots
    spark = create_session(master, config={"spark.sql.shuffle.partitions": count, "spark.default.parallelism": count})
    env = StreamEnvironment(SparkRunner(spark))
    for name, stream in build(env, int(batches or BATCHES)).items():
        stream.sink_to_files(os.path.join(output, name))
    result = env.execute("slots job")
    metrics = result.details["metrics"]["steps"]
    with open(os.path.join(output, "metrics.json"), "w") as handle:
        json.dump(metrics, handle)
    with open(os.path.join(output, "keepers.json"), "w") as handle:
        json.dump(keepers_in_workers(spark), handle)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
