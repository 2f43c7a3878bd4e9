"""A ``reduce`` function and a Python ``AggregateFunction`` over a typed stream on the columnar shard host, without
Spark: the rows a shard returns are the element host's (``RecordHost``) as multisets per micro-batch, with and
without a window function after them, results conformed to the declared output type, side outputs and late data on
their channels, restored from its log mid-stream and rescaled."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from panes.datastream import DataStream, StreamEnvironment
from panes.datastream.windowed import WindowedStream
from panes.errors import UserFunctionError
from panes.functions.base import AggregateFunction
from panes.operators.rescaling import Owner
from panes.spark.layout import ChannelCodes, Layout
from panes.spark.linear import linearize
from panes.spark.shard import ShardDefinition, shard_host
from panes.spark.shard.columnar_host import ColumnarHost
from panes.spark.shard.record_host import RecordHost
from panes.state import ValueStateDescriptor
from panes.time import LONG_MAX
from panes.watermarks import WatermarkStrategy
from panes.windowing import ProcessWindowFunction, TumblingEventTimeWindows
from tests.spark.test_columnar_process_host import BATCHES, LATE, SIDE, outputs, rows

OUTPUT = "k STRING, end BIGINT, n INT, total BIGINT"


def summed(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The benchmark's reduce: a count and a sum over dicts."""
    return {"k": a["k"], "n": a.get("n", 1) + b.get("n", 1), "v": a["v"] + b["v"]}


def with_end(key: Any, window: Any, results: Any) -> Any:
    """A plain window function, as the benchmark's."""
    for result in results:
        yield {"k": key, "end": window.end, "n": result.get("n", 1), "total": result["v"]}


class CountSum(AggregateFunction[Any, list[int], Any]):
    """A list accumulator changed in place by ``add``."""

    def create_accumulator(self) -> list[int]:
        return [0, 0]

    def add(self, value: Any, accumulator: list[int]) -> list[int]:
        accumulator[0] += 1
        accumulator[1] += value["v"]
        return accumulator

    def get_result(self, accumulator: list[int]) -> Any:
        return {"n": accumulator[0], "v": accumulator[1]}

    def merge(self, a: list[int], b: list[int]) -> list[int]:
        return [a[0] + b[0], a[1] + b[1]]


SEEN = ValueStateDescriptor("seen")


class Stateful(ProcessWindowFunction[Any, Any, Any, Any]):
    """After the aggregate: per-window state, pane info, a side output and ``clear``."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        (result,) = elements
        seen = context.window_state().get_state(SEEN)
        seen.update((seen.value() or 0) + 1)
        info = context.pane()
        context.output(SIDE, (key, info.index, info.timing.value, info.is_last, seen.value()))
        yield {"k": key, "end": context.window().end, "n": result["n"], "total": result["v"]}

    def clear(self, context: Any) -> None:
        context.output(SIDE, ("cleared", context.window().end, context.window_state().get_state(SEEN).value()))


JOBS: dict[str, Callable[[WindowedStream], DataStream]] = {
    "reduce": lambda w: w.reduce(summed),
    "reduce, plain function": lambda w: w.reduce(summed, with_end, output_type=OUTPUT),
    "aggregate, plain function": lambda w: w.aggregate(CountSum(), with_end, output_type=OUTPUT),
    "aggregate, ProcessWindowFunction": lambda w: w.aggregate(CountSum(), Stateful(), output_type=OUTPUT),
}


def step(job: str | Callable[[WindowedStream], DataStream]) -> tuple[ShardDefinition, Layout, Any]:
    env = StreamEnvironment("local")
    source = env.from_collection([], type_info="k STRING, ts BIGINT, v BIGINT")
    stamped = source.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    )
    windowed = stamped.key_by("k").window(TumblingEventTimeWindows.of(10)).allowed_lateness(6)
    results = (JOBS[job] if isinstance(job, str) else job)(windowed.side_output_late_data(LATE))
    results.print()
    results.get_side_output(SIDE).print()
    results.get_side_output(LATE).print()
    steps = linearize(env.plan())
    codes = ChannelCodes.of_steps(steps)
    (keyed,) = [s for s in steps if s.kind == "keyed"]
    layout = Layout(codes, codes.code)
    return ShardDefinition("folded", keyed, codes, layout, 1, 128), layout, stamped


def run(host: Any, layout: Layout, stream: Any, start: int = 0, stop: int = len(BATCHES)) -> list[Counter[str]]:
    per_batch = []
    seq = 1 + sum(len(b[0]) for b in BATCHES[:start])
    for elements, watermark in BATCHES[start:stop]:
        per_batch.append(outputs(host.run(rows(layout, stream, elements, seq), watermark, 100 + seq), layout.codes))
        seq += len(elements)
    if stop == len(BATCHES):
        per_batch.append(outputs(host.run([], LONG_MAX, 999), layout.codes))
    return per_batch


@pytest.mark.parametrize("job", list(JOBS))
def test_the_columnar_host_returns_the_element_hosts_rows(job: str) -> None:
    definition, layout, stream = step(job)
    columnar = shard_host(definition, 0)
    assert isinstance(columnar, ColumnarHost)
    expected = run(RecordHost(definition, 0), layout, stream)
    assert run(columnar, layout, stream) == expected
    flat = sum(expected, Counter())
    assert any("'late'" in row for row in flat)
    if job == "reduce":
        assert "(None, {'k': 'a', 'ts': None, 'v': 8}, 9)" in flat  # fired again by the late element 7 (input type)
    elif job == "aggregate, ProcessWindowFunction":
        assert "('sizes', ('a', 1, 'late', False, 2), 9)" in flat  # the late firing's pane info and state
        assert any("'cleared'" in row for row in flat)
    else:
        assert "(None, {'k': 'a', 'end': 10, 'n': 2, 'total': 8}, 9)" in flat


@pytest.mark.parametrize("job", list(JOBS))
def test_restored_from_its_log_and_rescaled_the_columnar_host_goes_on_as_the_element_host(job: str) -> None:
    definition, layout, stream = step(job)
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


def test_a_failing_reduce_function_fails_the_step_naming_it_its_key_and_window() -> None:
    definition, layout, stream = step(lambda w: w.reduce(lambda a, b: {**a, "v": a["v"] // (b["v"] - 7)}))
    for host in (RecordHost(definition, 0), shard_host(definition, 0)):
        with pytest.raises(UserFunctionError) as raised:
            run(host, layout, stream)
        assert (raised.value.key, raised.value.window.start, raised.value.window.end) == ("a", 0, 10)
        assert raised.value.operator is not None and "Window(Reduce)" in raised.value.operator
