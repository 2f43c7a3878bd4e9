"""The Spark runner's semantics, executed in one process: steps over explicit micro-batches.

This is what the Spark runner computes, without Spark: the same steps (``linear``), the same hosts
(``host``), the same sharding of keys and the same watermark rules. The bounded (batch) Spark path runs
each shard's part of it inside ``applyInPandas``; tests use it to state the micro-batch semantics once.

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
from panes.errors import ErrorRecord, located
from panes.keygroups import assign_to_key_group
from panes.operators.base import CountingOutput
from panes.operators.keys import extract_key
from panes.operators.metrics import OperatorCounters
from panes.spark.codec import EVENT_TIMES
from panes.spark.host import StepHost
from panes.spark.layout import Record
from panes.spark.linear import Step, linearize
from panes.time import LONG_MAX, LONG_MIN
from panes.watermarks import (
    AscendingTimestampsWatermarks,
    BoundedOutOfOrdernessWatermarks,
    ColumnTimestampAssigner,
    TimestampsAndWatermarksOperator,
)


def shard_of(key: Any, num_shards: int, max_parallelism: int) -> int:
    """The shard ``[0, num_shards)`` owning ``key``: its key group's share, as Flink assigns key groups."""
    return assign_to_key_group(key, max_parallelism) * num_shards // max_parallelism


def rate_watermarks(
    operator: TimestampsAndWatermarksOperator, rows: Sequence[Record], step: Step
) -> tuple[list[Record], list[int]]:
    """Assign timestamps to ``rows`` and rate each with the watermark its generator emits after it.

    Returns the stamped rows (bad records go to the step's error channel, if any) and the ratings.
    """
    stamped: list[Record] = []
    ratings: list[int] = []
    own = step.transformation.id
    main = (own, None)
    consumed = step.consumed
    operator.error_tag = step.transformation.error_tag
    generator = operator.watermark_generator
    emitter = operator._emitter
    assert generator is not None and emitter is not None
    captured: list[StreamRecord[Any]] = []
    capture = _Capture(captured)
    operator.output = CountingOutput(capture, operator)
    emitter._output = capture
    # the built-in periodic generators emit their running maximum minus the bound: read it directly
    bounded = type(generator) in (BoundedOutOfOrdernessWatermarks, AscendingTimestampsWatermarks)
    assigner = operator._assigner
    column = assigner.column if bounded and type(assigner) is ColumnTimestampAssigner else None
    fast = 0
    for channel, value, timestamp, seq, phase in rows:
        if channel not in consumed:
            continue
        if column is not None and type(value) is dict:
            # the common case, a dict row with an int timestamp column, without the operator's generality
            extracted = value.get(column)
            if type(extracted) is int and EVENT_TIMES.lowest <= extracted <= EVENT_TIMES.highest:
                generator.on_event(value, extracted, emitter)
                ratings.append(generator.max_timestamp - generator.out_of_orderness - 1)  # type: ignore[attr-defined]
                stamped.append(Record(main, value, extracted, seq, phase))
                fast += 1
                continue
        operator.process_record(StreamRecord(value, timestamp))
        if bounded:
            ratings.append(generator.max_timestamp - generator.out_of_orderness - 1)  # type: ignore[attr-defined]
        else:
            generator.on_periodic_emit(emitter)
            ratings.append(emitter.current_watermark)
        for out in captured:
            stamped.append(Record(main, out.value, out.timestamp, seq, phase))
        captured.clear()
        if capture.side:
            for tag, out in capture.side:
                stamped.append(Record((own, tag), out.value, out.timestamp, seq, phase))
            capture.side.clear()
    # the rows the direct path stamped, counted as the operator counts the others
    operator.counters.records_in += fast
    operator.counters.records_out += fast
    return stamped, ratings


def shard_rows(
    step: Step,
    rows: list[Record],
    num_shards: int,
    max_parallelism: int,
    cache: dict[Any, int],
    counters: OperatorCounters | None = None,
) -> tuple[list[Record], list[int]]:
    """Each row's shard before the keyed ``step``: its key's shard for rows the step reads (``cache`` remembers
    keys), every shard for rows of a broadcast input (listed once per shard), any shard for rows passing by and
    rows of a non-keyed input. A row without a key (``panes.operators.keys``) is the step's failure,
    as an operator reports it (``panes.errors``): an ``ErrorRecord`` on the step's error output when there is
    one (dropped when nobody reads it), the located error raised otherwise. Refused rows count as records in
    and error records out of the step in ``counters``, when given."""
    error_tag = step.transformation.error_tag
    error_channel = None if error_tag is None else (step.transformation.id, error_tag.tag_id)
    inputs = step.input_of
    selectors = step.key_selectors
    broadcast = step.broadcast_input
    every_shard = list(range(num_shards))
    kept: list[Record] = []
    shards: list[int] = []
    for row in rows:
        channel, value, ts, seq, ph = row
        index = inputs.get(channel)
        if index is not None and index == broadcast:
            # a broadcast element reaches every shard (every instance), in its place among the shard's rows
            kept.extend([row] * num_shards)
            shards.extend(every_shard)
            continue
        selector = None if index is None else selectors[index]
        if selector is None:
            # a row passing by, or an element of a non-keyed input: spread by its ordering number
            kept.append(row)
            shards.append(seq % num_shards)
            continue
        try:
            key = extract_key(selector, value)
        except Exception as error:
            failure = located(error, step.transformation.name)
            if error_tag is None:
                raise failure from failure.__cause__
            if counters is not None:
                counters.records_in += 1
                counters.error_out += 1
            if error_channel in step.needed_outputs:
                kept.append(Record(error_channel, ErrorRecord.of(failure, value, ts), ts, seq, ph))
                shards.append(0)
            continue
        shard = cache.get(key)
        if shard is None:
            shard = cache[key] = shard_of(key, num_shards, max_parallelism)
        kept.append(row)
        shards.append(shard)
    return kept, shards


def timestamps_operator(step: Step) -> TimestampsAndWatermarksOperator:
    """A fresh, open timestamps operator of ``step`` (each Spark partition of each micro-batch gets one); it
    refuses records outside the Spark runner's event times (``codec.EVENT_TIMES``)."""
    factory = step.transformation.operator_factory  # type: ignore[attr-defined]
    operator: TimestampsAndWatermarksOperator = factory()
    operator.event_time_range = EVENT_TIMES
    operator.setup(_Capture([]))
    operator.open()
    return operator


class _Capture:
    def __init__(self, records: list[StreamRecord[Any]]) -> None:
        self.records = records
        self.side: list[tuple[str, StreamRecord[Any]]] = []

    def collect(self, record: StreamRecord[Any]) -> None:
        self.records.append(record)

    def collect_side(self, tag: Any, record: StreamRecord[Any]) -> None:
        self.side.append((tag.tag_id, record))

    def emit_watermark(self, watermark: Any) -> None:
        return None

    def emit_watermark_status(self, status: Any) -> None:
        return None


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
