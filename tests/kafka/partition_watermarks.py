"""The scenarios of the watermark-per-partition tests (issue 40), shared by the local runner's and Spark's: a topic of
two partitions, records counted per tumbling window of their Kafka timestamps. What the windows should hold is worked
out from definitions: Flink's ``KafkaSource`` watermark (a generator per partition, the minimum over the partitions
that are not idle, a partition without a record at ``LONG_MIN``: :func:`watermark`, :func:`fired`), which the local
runner makes, and the same rule at micro-batch granularity (:func:`per_partition`), which the Spark runner makes.
:func:`one_watermark`, Spark's own one watermark over all partitions, is what the Spark runner gave before it
tracked partitions: the tests check that the scenarios tell the two apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from panes.common import SimpleStringSchema
from panes.connectors.kafka import KafkaOffsetsInitializer, KafkaSource
from panes.datastream import OutputTag
from panes.datastream.sinks import ListSink
from panes.time import LONG_MIN
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows
from tests.kafka.conftest import produce

SIZE = 2_000
"""The windows' size (ms)."""

BOUND = 100
"""The strategy's out-of-orderness bound (ms)."""

IDLE_TIMEOUT = 1_000
"""The idleness timeout of the local runner's idleness scenarios (ms of processing time)."""

SHORT_IDLE_TIMEOUT = 1
"""The idleness timeout of the Spark runner's idleness scenario (ms): shorter than the time between two micro-batches,
so a partition is idle at its second micro-batch in a row without records (``per_partition``)."""

Records = list[tuple[int, int]]
"""``(partition, Kafka timestamp)`` in the order written."""

LEADING: Records = [(0, t) for t in range(1_000, 13_000, 500)]
"""Partition 0, ahead."""

LAGGING: Records = [(1, t) for t in range(1_000, 9_000, 500)]
"""Partition 1, whose records are far behind partition 0's."""

QUIET_EARLY: Records = [(1, 1_000), (0, 1_000), (1, 2_500), (0, 2_500), (1, 4_500), (0, 4_500)]
"""Both partitions' first records (their watermark fires the first two windows); partition 1 gets nothing more."""

LEADING_ON: Records = [(0, t) for t in range(5_000, 20_000, 500)]
"""Partition 0 alone, later."""

LEADING_LATER: Records = [(0, t) for t in range(20_000, 26_000, 500)]
"""Partition 0 alone, after :data:`LEADING_ON`."""


def write(bootstrap: str, topic: str, records: Records) -> None:
    """Write ``records`` (value ``p<partition>-<timestamp>``) and wait for the acknowledgements."""
    produce(
        bootstrap,
        topic,
        [{"value": f"p{p}-{t}".encode(), "partition": p, "timestamp": t} for p, t in records],
    )


def kafka_source(bootstrap: str, topic: str) -> KafkaSource:
    """An unbounded source of ``topic`` from its start."""
    return (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(topic)
        .set_value_only_deserializer(SimpleStringSchema())
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .build()
    )


def strategy(idleness: bool, timeout: int = IDLE_TIMEOUT) -> WatermarkStrategy:
    chosen = WatermarkStrategy.for_bounded_out_of_orderness(BOUND)
    return chosen.with_idleness(timeout) if idleness else chosen


def count_windows(
    env: Any, source: KafkaSource, watermarks: WatermarkStrategy, twice: bool = False
) -> tuple[ListSink, ListSink]:
    """Records counted per tumbling window with the strategy given to ``from_source`` (:func:`count_stream`)."""
    return count_stream(env.from_source(source, watermarks, "kafka"), twice)


def count_stream(stream: Any, twice: bool = False) -> tuple[ListSink, ListSink]:
    """The elements of ``stream`` (timestamped) counted per tumbling window: the windows' ``(start, count)`` and the
    late elements (values). With ``twice``, the counts go through a second keyed window step of the same size before
    the sink (summed there: the same windows, one step further from the source)."""
    late: OutputTag[Any] = OutputTag("late")
    counts = (
        stream.map(lambda value: (value, 1))
        .key_by(lambda pair: 0)
        .window(TumblingEventTimeWindows.of(SIZE))
        .side_output_late_data(late)
        .process(_count)
    )
    out, late_out = ListSink(), ListSink()
    results = counts
    if twice:
        results = counts.key_by(lambda window: 0).window(TumblingEventTimeWindows.of(SIZE)).process(_sum)
    results.sink_to(out)
    counts.get_side_output(late).sink_to(late_out)
    return out, late_out


def _count(key: Any, context: Any, elements: Any) -> Any:
    yield (context.window().start, sum(1 for _ in elements))


def _sum(key: Any, context: Any, counts: Any) -> Any:
    yield (context.window().start, sum(count for _, count in counts))


def watermark(records: Records, idle: set[int]) -> int:
    """The source's watermark once every record is read: the minimum over the partitions not in ``idle`` of
    ``max timestamp - BOUND - 1``."""
    highest: dict[int, int] = {}
    for partition, timestamp in records:
        highest[partition] = max(highest.get(partition, LONG_MIN), timestamp)
    return min(top - BOUND - 1 for partition, top in highest.items() if partition not in idle)


def fired(records: Records, upto: int) -> list[tuple[int, int]]:
    """The windows a watermark at ``upto`` fired, each with every record of it (a partition's records ascend, so
    none is late when the watermark is the minimum over the partitions)."""
    starts = sorted({t - t % SIZE for _, t in records})
    return [(s, sum(1 for _, t in records if s <= t < s + SIZE)) for s in starts if s + SIZE - 1 <= upto]


Run = tuple[list[tuple[int, int]], int]
"""What one micro-batch gave: the windows it fired (start, count) and how many records were late."""


def one_watermark(runs: list[Records]) -> list[Run]:
    """Spark's own answer when each of ``runs`` is one micro-batch: one watermark over all partitions, the largest
    ``timestamp - BOUND - 1`` of any record so far, moved after each micro-batch."""
    after, current = [], LONG_MIN
    for records in runs:
        current = max(current, max(t for _, t in records) - BOUND - 1)
        after.append(current)
    return by_run(runs, after)


def per_partition(runs: list[Records], partitions: int, short_idleness: bool = False) -> list[Run]:
    """Flink's rule at micro-batch granularity, each of ``runs`` one micro-batch: after it, each partition's watermark
    is its largest ``timestamp - BOUND - 1`` so far (``LONG_MIN`` before its first record), the watermark their
    minimum over the partitions not idle, never going back. With ``short_idleness`` (:data:`SHORT_IDLE_TIMEOUT`) a
    partition is idle at its second micro-batch in a row without records: Flink's idleness timer starts counting at
    the first periodic emit without activity and finds the input idle at a later one, more than the timeout after."""
    highest = dict.fromkeys(range(partitions), LONG_MIN)
    quiet = dict.fromkeys(range(partitions), 0)
    after, current = [], LONG_MIN
    for records in runs:
        active = {p for p, _ in records}
        for partition, timestamp in records:
            highest[partition] = max(highest[partition], timestamp - BOUND - 1)
        for partition in quiet:
            quiet[partition] = 0 if partition in active else quiet[partition] + 1
        counted = [w for p, w in highest.items() if not (short_idleness and quiet[p] >= 2)]
        if counted:
            current = max(current, min(counted))
        after.append(current)
    return by_run(runs, after)


def by_run(runs: list[Records], after: list[int]) -> list[Run]:
    """Per micro-batch (each of ``runs``): its records processed at the watermark the micro-batches before it made (a
    record whose window's last millisecond that watermark reached is late), then the watermark moved to ``after``
    of it, firing the windows it reached."""
    current = LONG_MIN
    pending: dict[int, int] = {}
    found = []
    for records, moved in zip(runs, after, strict=True):
        late = 0
        for _, timestamp in records:
            start = timestamp - timestamp % SIZE
            if start + SIZE - 1 <= current:
                late += 1
            else:
                pending[start] = pending.get(start, 0) + 1
        current = moved
        due = sorted((start, count) for start, count in pending.items() if start + SIZE - 1 <= current)
        for start, _ in due:
            del pending[start]
        found.append((due, late))
    return found


def spark_runs(
    bootstrap: str,
    topic: str,
    phases: list[Records],
    spark: Any,
    checkpoint: Path,
    idleness: bool = False,
    twice: bool = False,
) -> list[tuple[Any, int]]:
    """Write each phase's records, then run the job over what arrived (restarting from ``checkpoint``): each
    run's windows and how many records were late (``twice``: the windows of a second window step after the first,
    ``partition_watermarks.count_windows``)."""
    from panes.datastream import StreamExecutionEnvironment
    from panes.spark import SparkRunner

    found = []
    for records in phases:
        write(bootstrap, topic, records)
        runner = SparkRunner(spark, checkpoint_location=str(checkpoint), trigger="available_now")
        env = StreamExecutionEnvironment.get_execution_environment(runner)
        chosen = strategy(idleness, SHORT_IDLE_TIMEOUT)
        out, late = count_windows(env, kafka_source(bootstrap, topic), chosen, twice)
        env.execute()
        found.append((sorted(out.values), len(late.values)))
    return found
