"""A ``ProcessWindowFunction`` over a typed stream on the columnar shard host, without Spark: the rows a shard
returns are the element host's (``RecordHost``) as multisets per micro-batch, results conformed to the declared
output type, side outputs and late data on their channels, restored from its log mid-stream and rescaled."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pytest

from panes.datastream import OutputTag, StreamEnvironment
from panes.errors import BadRecordError
from panes.operators.rescaling import Owner
from panes.spark.layout import ChannelCodes, Layout, Record, read_records
from panes.spark.linear import linearize
from panes.spark.shard import ShardDefinition, shard_host
from panes.spark.shard.columnar_host import ColumnarHost
from panes.spark.shard.record_host import RecordHost
from panes.state import ValueStateDescriptor
from panes.time import LONG_MAX
from panes.watermarks import WatermarkStrategy
from panes.windowing import ProcessWindowFunction, TumblingEventTimeWindows

SIDE: OutputTag[Any] = OutputTag("sizes")
LATE: OutputTag[Any] = OutputTag("late")


class Totals(ProcessWindowFunction[Any, Any, Any, Any]):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        items = list(elements)
        context.output(SIDE, (key, len(items), context.current_processing_time()))
        window = context.window()
        yield {"k": key, "end": window.end, "n": len(items), "total": sum(e["v"] for e in items)}


SEEN = ValueStateDescriptor("seen")
RUNNING = ValueStateDescriptor("running")


class StatefulTotals(ProcessWindowFunction[Any, Any, Any, Any]):
    """Per-window and per-key state, pane info and ``clear``."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        items = list(elements)
        seen = context.window_state().get_state(SEEN)
        seen.update((seen.value() or 0) + 1)
        running = context.global_state().get_state(RUNNING)
        running.update((running.value() or 0) + sum(e["v"] for e in items))
        info = context.pane()
        context.output(SIDE, (key, info.index, info.timing.value, info.is_last, seen.value(), running.value()))
        yield {"k": key, "end": context.window().end, "n": len(items), "total": running.value()}

    def clear(self, context: Any) -> None:
        context.output(SIDE, ("cleared", context.window().end, context.window_state().get_state(SEEN).value()))
        context.window_state().get_state(SEEN).clear()


FUNCTIONS = [Totals, StatefulTotals]


class Misfit(ProcessWindowFunction[Any, Any, Any, Any]):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield {"k": key, "end": "not a number", "n": 1, "total": 1}


def step(function: Any) -> tuple[ShardDefinition, Layout, Any]:
    env = StreamEnvironment("local")
    source = env.from_collection([], type_info="k STRING, ts BIGINT, v BIGINT")
    stamped = source.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    )
    windowed = stamped.key_by("k").window(TumblingEventTimeWindows.of(10)).allowed_lateness(6)
    results = windowed.side_output_late_data(LATE).process(
        function, output_type="k STRING, end BIGINT, n INT, total BIGINT"
    )
    results.print()
    results.get_side_output(SIDE).print()
    results.get_side_output(LATE).print()
    steps = linearize(env.plan())
    codes = ChannelCodes.of_steps(steps)
    (keyed,) = [s for s in steps if s.kind == "keyed"]
    layout = Layout(codes, codes.code)
    return ShardDefinition("pwf", keyed, codes, layout, 1, 128), layout, stamped


BATCHES = [
    ([("a", 1, 1), ("b", 2, 2), ("a", 12, 3)], 0),
    ([("b", 13, 4), ("c", 14, 5), ("a", 25, 6), ("a", 7, 7)], 11),  # a late but allowed element fires its pane
    ([("c", 26, 8), ("a", 31, 9), ("b", 3, 10)], 24),  # b at 3 is late: its window was cleaned up at 15
    ([("d", 33, 11), ("a", 36, 12)], 30),
]


def rows(layout: Layout, stream: Any, elements: list[tuple[str, int, int]], first: int) -> list[pa.RecordBatch]:
    channel = (stream.transformation.id, None)
    records = [Record(channel, {"k": k, "ts": t, "v": v}, t, first + i, 1) for i, (k, t, v) in enumerate(elements)]
    return [layout.encode(records)]


def outputs(out: list[pa.RecordBatch], codes: ChannelCodes) -> Counter[str]:
    """The rows a shard returned (but the forwarded watermark's), as a multiset of channel, value and time."""
    found: Counter[str] = Counter()
    for batch in out:
        channels = batch.column("ch").to_numpy(zero_copy_only=False)
        for record in read_records(batch, codes, channels >= 0):
            found[repr((record.channel[1], record.value, record.timestamp))] += 1
    return found


def run(host: Any, layout: Layout, stream: Any, start: int = 0, stop: int = len(BATCHES)) -> list[Counter[str]]:
    per_batch = []
    seq = 1 + sum(len(b[0]) for b in BATCHES[:start])
    for elements, watermark in BATCHES[start:stop]:
        per_batch.append(outputs(host.run(rows(layout, stream, elements, seq), watermark, 100 + seq), layout.codes))
        seq += len(elements)
    if stop == len(BATCHES):
        per_batch.append(outputs(host.run([], LONG_MAX, 999), layout.codes))
    return per_batch


@pytest.mark.parametrize("function", FUNCTIONS)
def test_the_columnar_host_returns_the_element_hosts_rows(function: Any) -> None:
    definition, layout, stream = step(function())
    columnar = shard_host(definition, 0)
    assert isinstance(columnar, ColumnarHost)
    expected = run(RecordHost(definition, 0), layout, stream)
    assert run(columnar, layout, stream) == expected
    flat = sum(expected, Counter())
    assert any("'sizes'" in row for row in flat) and any("'late'" in row for row in flat)
    if function is Totals:
        assert "(None, {'k': 'a', 'end': 10, 'n': 2, 'total': 8}, 9)" in flat  # fired again by the late element 7
    else:
        assert "('sizes', ('a', 1, 'late', False, 2, 9), 9)" in flat  # the late firing's pane info and state
        assert any("'cleared'" in row for row in flat)


@pytest.mark.parametrize("function", FUNCTIONS)
def test_restored_from_its_log_and_rescaled_the_columnar_host_goes_on_as_the_element_host(function: Any) -> None:
    definition, layout, stream = step(function())
    expected = run(RecordHost(definition, 0), layout, stream)
    host = shard_host(definition, 0)
    first = run(host, layout, stream, 0, 1)
    log = [host.snapshot()]
    second = run(host, layout, stream, 1, 2)
    log.append(host.changes())
    restored = shard_host(definition, 0)
    restored.restore(log[0], log[1:])
    assert [*first, *second, *run(restored, layout, stream, 2)] == expected
    parts = restored.rescale([host.snapshot()], Owner(128, 2), 2)
    opened, rest = [], Counter[str]()
    for blob in parts:
        part = shard_host(definition, 0)
        part.restore(blob)
        opened.append(part.open_panes())
        rest += outputs(part.run([], LONG_MAX, 999), layout.codes)
    assert sum(opened) == host.open_panes() > 0
    assert rest == outputs(host.run([], LONG_MAX, 999), layout.codes)  # the rescaled parts end as the whole


def test_a_result_that_does_not_fit_the_declared_type_fails_the_step_naming_it() -> None:
    definition, layout, stream = step(Misfit())
    host = shard_host(definition, 0)
    with pytest.raises(BadRecordError, match="does not fit its type"):
        run(host, layout, stream)
