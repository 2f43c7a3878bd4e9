"""Watermarks per split on the local runner, without a broker: a source whose reader says which split each element
comes from (``SplitsReader.split_ids``/``current_split``, as the Kafka source's does) gets a generator per split
from the strategy given to ``env.from_source``; ``assign_timestamps_and_watermarks`` keeps one generator per
instance. The expected windows are worked out from the definition: a window fires once the minimum over the
active splits of ``max timestamp - bound - 1`` reached its end, with every record of it (per split ascending
timestamps are never late then)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from panes.datastream import OutputTag, StreamExecutionEnvironment
from panes.datastream.sinks import ListSink
from panes.datastream.sources import Source, SplitsReader
from panes.elements import StreamRecord
from panes.local import LocalRunner
from panes.time import LONG_MIN
from panes.watermarks import TimestampsAndWatermarksOperator, WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows

SIZE = 2_000
"""The windows' size (ms)."""


class InterleavedSource(Source):
    """Splits read together in a fixed interleaving: ``order`` is ``(split, timestamp)`` in reading order."""

    def __init__(self, order: Sequence[tuple[str, int]], bounded: bool = True) -> None:
        self.order = list(order)
        self.bounded = bounded

    def num_splits(self) -> int:
        return 1

    def read_split(self, index: int) -> Any:
        return iter(StreamRecord({"split": s, "ts": t}, t) for s, t in self.order)

    def read_splits(self, indices: Sequence[int], position: Any = None) -> SplitsReader:
        return _Reader(self.order, position or 0)

    def is_bounded(self) -> bool:
        return self.bounded


class _Reader(SplitsReader):
    def __init__(self, order: list[tuple[str, int]], at: int) -> None:
        self._order = order
        self._at = at

    def __next__(self) -> Any:
        if self._at >= len(self._order):
            raise StopIteration
        split, timestamp = self._order[self._at]
        self._at += 1
        return StreamRecord({"split": split, "ts": timestamp}, timestamp)

    def position(self) -> Any:
        return self._at

    def split_ids(self) -> list[Hashable]:
        return sorted({split for split, _ in self._order})

    def current_split(self) -> Hashable | None:
        return self._order[self._at - 1][0] if self._at else None


def _job(order: list[tuple[str, int]], strategy: WatermarkStrategy, per_split: bool, bounded: bool = False) -> Any:
    env = StreamExecutionEnvironment.get_execution_environment("local")
    late = OutputTag("late")
    source = InterleavedSource(order, bounded)
    if per_split:
        stream = env.from_source(source, strategy, "splits")
    else:
        stream = env.from_source(source, None, "splits").assign_timestamps_and_watermarks(strategy)
    counts = (
        stream.key_by(lambda value: 0)
        .window(TumblingEventTimeWindows.of(SIZE))
        .side_output_late_data(late)
        .process(_count)
    )
    out, late_out = ListSink(), ListSink()
    counts.sink_to(out)
    counts.get_side_output(late).sink_to(late_out)
    return env, out, late_out


def _count(key: Any, context: Any, elements: Any) -> Any:
    """(window start, how many) per fired window."""
    yield (context.window().start, len(list(elements)))


def expected_windows(order: list[tuple[str, int]], bound: int, idle: set[str]) -> list[tuple[int, int]]:
    """From the definition: the watermark is the minimum over the splits that are not idle of ``max - bound - 1``;
    every window whose last millisecond it reached fires with all its records."""
    highest: dict[str, int] = {}
    for split, timestamp in order:
        highest[split] = max(highest.get(split, LONG_MIN), timestamp)
    watermark = min(top - bound - 1 for split, top in highest.items() if split not in idle)
    starts = sorted({t - t % SIZE for _, t in order})
    return [(s, sum(1 for _, t in order if s <= t < s + SIZE)) for s in starts if s + SIZE - 1 <= watermark]


def _run(env: Any, records: int) -> Any:
    job = LocalRunner(clock="stepping", advance="per_element").start(env.plan(), env.config())
    job.run(records)
    return job


LEADING = [("a", t) for t in range(0, 12_000, 500)]
LAGGING = [("b", t) for t in range(0, 8_000, 500)]


def test_a_lagging_split_holds_the_watermark_and_none_of_its_records_is_late() -> None:
    order = LEADING + LAGGING  # all of a, then all of b: b's records are far behind a's
    env, out, late = _job(order, WatermarkStrategy.for_bounded_out_of_orderness(100), per_split=True)
    job = _run(env, len(LEADING))
    assert out.values == []  # b has had no record: the watermark is still LONG_MIN
    job.run(len(LAGGING))
    job.close()
    assert sorted(out.values) == expected_windows(order, 100, set())
    assert late.values == []


def test_one_generator_per_instance_judges_the_lagging_split_late() -> None:
    """``assign_timestamps_and_watermarks`` after the source: one generator for both splits (as Flink's operator)."""
    order = LEADING + LAGGING
    env, _, late = _job(order, WatermarkStrategy.for_bounded_out_of_orderness(100), per_split=False)
    job = _run(env, len(order))
    job.close()
    assert len(late.values) == sum(1 for _, t in LAGGING if t < LEADING[-1][1] - 100)


def test_an_idle_split_stops_holding_the_watermark_back() -> None:
    early = [("b", 0), ("a", 0), ("b", 500), ("a", 500)]
    order = early + [("a", t) for t in range(1_000, 16_000, 500)]
    for idleness, idle in ((True, {"b"}), (False, set[str]())):
        strategy = WatermarkStrategy.for_bounded_out_of_orderness(0)
        if idleness:
            strategy = strategy.with_idleness(1_000)
        env, out, late = _job(order, strategy, per_split=True)
        job = _run(env, len(order))
        job.close()
        assert sorted(out.values) == expected_windows(order, 0, idle), idleness
        assert late.values == []
    assert expected_windows(order, 0, {"b"}) != expected_windows(order, 0, set())


def test_a_restored_job_keeps_each_splits_watermark() -> None:
    order = [item for pair in zip(LEADING, LAGGING, strict=False) for item in pair] + LEADING[len(LAGGING) :]
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(100)
    env, out, _ = _job(order, strategy, per_split=True)
    whole = _run(env, len(order))
    whole.close()
    uninterrupted = sorted(out.values)
    env, out, _ = _job(order, strategy, per_split=True)
    first = _run(env, 11)
    held = _split_state(first)
    assert held == {"a": (2_500 - 101, False), "b": (2_000 - 101, False)}  # 6 of a, 5 of b read
    snapshot = first.snapshot()
    first.close()
    before = list(out.values)
    out.clear()
    second = LocalRunner(clock="stepping", advance="per_element").start(env.plan(), env.config(), snapshot=snapshot)
    assert _split_state(second) == held
    second.run(len(order) - 11)
    second.close()
    assert sorted(before + out.values) == uninterrupted == expected_windows(order, 100, set())


def _split_state(job: Any) -> dict[Hashable, tuple[int, bool]]:
    """Each split's watermark and idleness in the job's per-split watermark step."""
    found = [
        instance.operator.split_watermarks
        for instance in job._all_instances()
        if isinstance(instance.operator, TimestampsAndWatermarksOperator)
    ]
    assert len(found) == 1 and found[0] is not None
    multiplexer = found[0].multiplexer
    partials = {split: multiplexer.partial(split) for split in multiplexer.splits()}
    return {split: (partial.watermark, partial.idle) for split, partial in partials.items()}
