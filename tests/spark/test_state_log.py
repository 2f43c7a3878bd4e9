"""On Spark a keyed step writes to the state store what a micro-batch changed, not what its shards hold, and
reports what it did in each micro-batch's progress (``details["metrics"]``)."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import KeyedProcessFunction, ListSink, StreamEnvironment
from panes.state import MapStateDescriptor
from panes.watermarks import WatermarkStrategy
from panes.windowing import ProcessWindowFunction, TumblingEventTimeWindows

KEYS = 2_000
HOUR = 3_600_000


class Contents(ProcessWindowFunction[Any, Any, Any, Any]):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield (key, context.window().start, sorted(e["v"] for e in elements))


def run(spark: Any, typed: bool) -> tuple[dict[str, Any], list[Any]]:
    from panes.functions import Aggregates, Count, Sum
    from panes.spark import SparkRunner
    from panes.windowing import WindowRow

    # batch 1 opens a pane for every key; batch 2 touches one key; the windows close at the end of input
    batches = [
        [{"k": f"k{k}", "ts": 1_000 + k, "v": k} for k in range(KEYS)],
        [{"k": "k7", "ts": 5_000, "v": 1}],
    ]
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    source = env.from_micro_batches(batches, type_info="k STRING, ts BIGINT, v BIGINT" if typed else None)
    windowed = (
        source.assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
        )
        .key_by("k")
        .window(TumblingEventTimeWindows.of(HOUR))
    )
    if typed:
        results = windowed.aggregate(Aggregates(n=Count(), total=Sum("v")), WindowRow())
    else:
        results = windowed.process(Contents())
    sink = ListSink()
    results.sink_to(sink)
    details = env.execute("state log").details
    return details["metrics"], sink.values


@pytest.mark.parametrize("typed", [False, True], ids=["Python window function", "columnar"])
def test_a_micro_batch_writes_the_state_it_changed_not_the_state_it_holds(spark: Any, typed: bool) -> None:
    metrics, results = run(spark, typed)
    assert len(results) == KEYS
    name = "Window(Aggregate)" if typed else "Window(Process)"
    per_step = [batch[name] for batch in metrics["per_batch"] if name in batch]
    first, second = per_step[0], per_step[1]
    assert first["records_in"] == KEYS and second["records_in"] == 1
    assert first["open_panes"] == KEYS and second["open_panes"] == 0  # changes of the open panes
    assert first["state_bytes"] > 0
    # the second micro-batch touched one pane of one shard: it logs that pane, not the shard's state
    assert 0 < second["state_bytes_written"] * 50 < first["state_bytes_written"], (first, second)
    totals = metrics["steps"][name]
    assert totals["open_panes"] == 0 and totals["records_out"] == KEYS


class Remember(KeyedProcessFunction[Any, Any, Any]):
    """Keeps every value of its key in map state, by value; emits the map's size."""

    def open(self, runtime_context: Any) -> None:
        self.seen = runtime_context.get_map_state(MapStateDescriptor("seen"))

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.seen.put(value["v"], value["ts"])
        yield len(list(self.seen.keys()))


def test_a_change_to_a_keys_map_state_writes_that_entry_not_the_map(spark: Any) -> None:
    from panes.spark import SparkRunner

    batches = [[{"k": "one", "ts": v, "v": v} for v in range(KEYS)], [{"k": "one", "ts": KEYS, "v": -1}]]
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    sink = ListSink()
    env.from_micro_batches(batches).key_by("k").process(Remember()).name("remember").sink_to(sink)
    metrics = env.execute("map state log").details["metrics"]
    assert sorted(sink.values)[-1] == KEYS + 1
    first, second = (batch["remember"] for batch in metrics["per_batch"] if batch.get("remember", {}).get("records_in"))
    assert (first["records_in"], second["records_in"]) == (KEYS, 1)
    # one key's map of KEYS entries: the second micro-batch logs the one entry it put (and the log record's
    # own few hundred bytes), not the map
    assert 0 < second["state_bytes_written"] * 20 < first["state_bytes_written"], (first, second)
