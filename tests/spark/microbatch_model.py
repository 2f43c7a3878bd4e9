"""The Spark runner's semantics, executed in one process: steps over explicit micro-batches.

This is what the Spark runner computes, without Spark: the same steps (``linear``), the same hosts
(``shard.element_host``), the same sharding of keys (``keying``) and the same watermark rules (``watermarks``);
tests use it to state the micro-batch semantics once, beside tests of the same on a real SparkSession.

Watermarks, as on Spark: each timestamps step rates every row with the watermark its generator emits after
that row (periodic generators are asked after every row); after a micro-batch, a step's watermark is the
largest rating it has seen so far, and the query's watermark is the minimum over the timestamps steps that
have seen data (Spark's default ``min`` policy; steps without data are ignored, as Spark ignores them).
Rows of micro-batch ``b`` are processed at the watermark reached after batch ``b - 1``. A bounded input
ends with two empty batches: one at the last watermark, one at ``LONG_MAX``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from panes.datastream.plan import Plan, SinkTransformation
from panes.elements import StreamRecord
from panes.spark.keying import shard_rows
from panes.spark.layout import Record
from panes.spark.linear import Step, linearize
from panes.spark.shard.element_host import StepHost
from panes.spark.watermarks import rate_watermarks, timestamps_operator
from panes.time import LONG_MAX, LONG_MIN


class MicroBatchExecutor:
    """Runs ``plan`` over explicit micro-batches, sharding each keyed step into its parallelism's shards (as
    the Spark runner does), ``num_shards`` when it sets none."""

    def __init__(self, plan: Plan, num_shards: int = 4, max_parallelism: int = 128) -> None:
        self.steps = linearize(plan)
        self.num_shards = num_shards
        self.max_parallelism = max_parallelism
        self.hosts: dict[tuple[int, int], StepHost] = {}
        self.step_watermarks: dict[int, int] = {}
        self.watermark = LONG_MIN
        self.sink_rows: dict[int, list[Record]] = defaultdict(list)
        self._seq = 0
        self.now = 0

    def _host(self, step: Step, shard: int) -> StepHost:
        host = self.hosts.get((step.index, shard))
        if host is None:
            host = StepHost(step, shard, self._shards(step), self.max_parallelism)
            self.hosts[(step.index, shard)] = host
        return host

    def _shards(self, step: Step) -> int:
        return step.transformation.parallelism or self.num_shards

    def run_batch(self, sources: dict[int, Sequence[Any]], now: int | None = None) -> None:
        """One micro-batch: ``sources`` maps a source transformation id to the values it delivers now."""
        if now is not None:
            self.now = now
        rows: list[Record] = []
        ratings: dict[int, list[int]] = defaultdict(list)
        for step in self.steps:
            kind = step.kind
            if kind == "source":
                for value in sources.get(step.transformation.id, ()):
                    record = value if isinstance(value, StreamRecord) else StreamRecord(value)
                    self._seq += 1
                    channel = (step.transformation.id, None)
                    record_type = step.types.get(channel)
                    conformed = record.value if record_type is None else record_type.conform(record.value)
                    rows.append(Record(channel, conformed, record.timestamp, self._seq, 1))
                continue
            mine = [row for row in rows if row.channel in step.consumed]
            rest = [row for row in rows if row.channel not in step.consumed or row.channel in step.passthrough]
            if kind == "sink":
                assert isinstance(step.transformation, SinkTransformation)
                self.sink_rows[step.transformation.id].extend(mine)
                rows = rest
                continue
            if kind == "timestamps":
                operator = timestamps_operator(step)
                stamped, step_ratings = rate_watermarks(operator, mine, step)
                ratings[step.index].extend(step_ratings)
                rows = rest + stamped
                continue
            if kind == "stateless":
                rows = rest + self._host(step, 0).process(mine, self.watermark, self.now)
                continue
            keyed, shards = shard_rows(step, mine, self._shards(step), self.max_parallelism, {})
            by_shard: dict[int, list[Record]] = defaultdict(list)
            errors: list[Record] = []
            for row, shard in zip(keyed, shards, strict=True):
                (by_shard[shard] if row.channel in step.consumed else errors).append(row)
            produced: list[Record] = []
            for shard in range(self._shards(step)):
                # as on Spark: a shard runs when it has rows, or when the watermark reached its next timer
                host = self.hosts.get((step.index, shard))
                timer = None if host is None else host.next_event_time_timer()
                if by_shard.get(shard) or (timer is not None and timer <= self.watermark):
                    host = self._host(step, shard)
                    produced.extend(host.process(by_shard.get(shard, []), self.watermark, self.now))
            rows = rest + errors + produced
        for index, values in ratings.items():
            if values:
                self.step_watermarks[index] = max(self.step_watermarks.get(index, LONG_MIN), *values)
        if self.step_watermarks:
            self.watermark = max(self.watermark, min(self.step_watermarks.values()))

    def finish(self) -> None:
        """End of a bounded input: one empty batch at the last watermark, then one at ``LONG_MAX``."""
        self.run_batch({})
        self.step_watermarks = dict.fromkeys(self.step_watermarks, LONG_MAX) or {-1: LONG_MAX}
        self.watermark = LONG_MAX
        self.run_batch({})

    def run(self, batches: Sequence[dict[int, Sequence[Any]]], bounded: bool = True) -> dict[int, list[Record]]:
        for batch in batches:
            self.run_batch(batch)
        if bounded:
            self.finish()
        return self.sink_rows

    def sink_values(self, sink_id: int) -> list[Any]:
        return [row.value for row in self.sink_rows[sink_id]]
