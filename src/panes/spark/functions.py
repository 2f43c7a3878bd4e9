"""The Python functions Spark runs (shipped to executors with cloudpickle).

Consecutive row-local steps of one branch of the plan (stateless operators, one timestamps step, and the
keying before a keyed step) run fused in one ``mapInArrow`` call (:func:`chain_function`): the rows they
read become :class:`Record` objects once, go through every step in order, and are encoded once; rows of
channels no fused step reads stay Arrow columns and pass through without touching Python.

What the call reads is either rows in a layout (``layout``), a source DataFrame's own columns (the
branch's first call decodes them: ``Chain.source``), or the payloads a streaming keyed step returned
(``Chain.packed``). What it returns is rows in its output layout or, before a keyed step, one Arrow IPC
payload per shard (``shard, payload``).

A timestamps step rates each row with the watermark its generator emits after it; the fused call reports
the largest rating of each Arrow batch on one *carrier* row (channel :data:`CARRIER`, or shard ``-1``) in
column ``wm``, on which the query defines its watermark before dropping carriers. End-of-input sentinels
of the step's sources are rated ``END_MS`` the same way.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from panes.datastream.plan import Channel
from panes.spark.codec import END_MS, to_spark_time
from panes.spark.host import StepHost
from panes.spark.layout import (
    CARRIER,
    END,
    ChannelCodes,
    Layout,
    Record,
    channel_mask,
    pack,
    read_records,
    unpack,
)
from panes.spark.linear import Step
from panes.spark.microbatch import rate_watermarks, shard_rows, timestamps_operator
from panes.time import LONG_MIN
from panes.watermarks import TimestampsAndWatermarksOperator

WM = pa.field("wm", pa.int64())
SHARD_FIELDS = [pa.field("shard", pa.int32()), pa.field("payload", pa.binary())]


@dataclass
class Chain:
    """Row-local steps fused into one call, and what the call adds: ``wm`` (a timestamps step is fused, with
    the ids of the sources whose sentinels it rates) and/or ``shard`` (``keyed`` is the keyed step next).

    ``source`` is set when the input is a source DataFrame's own columns (its channel); ``packed`` when the
    input is the payloads of a streaming keyed step."""

    steps: list[Step] = field(default_factory=list)
    timestamp_sources: set[int] = field(default_factory=set)
    keyed: Step | None = None
    source: Channel | None = None
    packed: bool = False
    end_only: bool = False
    """Rate only end-of-input sentinels (a plan without watermark strategy still ends with ``LONG_MAX``)."""

    @property
    def has_timestamps(self) -> bool:
        return any(step.kind == "timestamps" for step in self.steps)

    @property
    def rates(self) -> bool:
        """Whether the call reports watermarks (column ``wm`` and a carrier row per batch)."""
        return self.has_timestamps or self.end_only

    def is_empty(self) -> bool:
        return not self.steps and self.keyed is None and self.source is None and not self.packed and not self.end_only

    def read_channels(self) -> set[Channel]:
        """The channels some fused step (or the keying) reads."""
        read: set[Channel] = set()
        for step in self.steps:
            read |= step.consumed
        if self.keyed is not None:
            read |= self.keyed.consumed
        return read

    def output_schema(self, layout: Layout) -> pa.Schema:
        """Rows in ``layout``, or before a keyed step one payload per shard; plus ``wm`` with timestamps."""
        fields = list(layout.schema) if self.keyed is None else list(SHARD_FIELDS)
        if self.rates:
            fields.append(WM)
        return pa.schema(fields)

    def carrier(self) -> tuple[str, int]:
        """The column and value that mark the watermark carrier rows of this chain's output."""
        return ("ch", CARRIER) if self.keyed is None else ("shard", -1)


def by_batch(rows: list[Record]) -> dict[int, list[Record]]:
    groups: dict[int, list[Record]] = defaultdict(list)
    for row in rows:
        groups[row.phase // 2].append(row)
    return groups


def _source_batch(
    batch: pa.RecordBatch, channel: Channel, codes: ChannelCodes, base: int, start: int
) -> pa.RecordBatch:
    """A source DataFrame's batch as rows of ``channel`` (its columns become the channel's struct column,
    untouched); ordering numbers ``base | start + 1, ...``."""
    code = codes.code[channel]
    count = batch.num_rows
    column: pa.Array = pa.StructArray.from_arrays(batch.columns, fields=list(batch.schema))
    record_type = codes.types[code]
    if record_type is not None and column.type != record_type.arrow_type:
        column = column.cast(record_type.arrow_type)
    return Layout(codes, [channel]).adapt(
        pa.RecordBatch.from_arrays([column], names=[codes.column(code)]),
        ch=pa.array(np.full(count, code, dtype=np.int32)),
        ts=pa.nulls(count, pa.int64()),
        seq=pa.array(base | np.arange(start + 1, start + count + 1, dtype=np.int64)),
        ph=pa.array(np.ones(count, dtype=np.int32)),
    )


def chain_function(
    chain: Chain, codes: ChannelCodes, layout: Layout, num_shards: int, max_parallelism: int
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of ``chain`` writing ``layout`` (see the module docstring)."""
    read = codes.codes(chain.read_channels())
    schema = chain.output_schema(layout)
    rated_layout = layout.with_extra(WM)
    sources = chain.timestamp_sources

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        hosts: dict[int, StepHost] = {}
        stamps: dict[int, TimestampsAndWatermarksOperator] = {}
        shard_cache: dict[Any, int] = {}
        base, count = _partition_base(), 0
        for incoming in _inputs(batches, chain.packed):
            batch = incoming
            if chain.source is not None:
                batch = _source_batch(incoming, chain.source, codes, base, count)
                count += batch.num_rows
            top: int | None = None
            sentinels = _sentinels(batch, sources) if chain.rates else None
            if sentinels is not None:
                top = END_MS
                batch = batch.filter(pa.array(~sentinels))
            # rows a fused step reads become records (and stay records while needed); the others stay columns
            mine = channel_mask(batch, read)
            rows = read_records(batch, codes, mine)
            rest = batch.filter(pa.array(~mine)) if not mine.all() else None
            for step in chain.steps:
                consumed = step.consumed
                own = [r for r in rows if r.channel in consumed]
                rows = [r for r in rows if r.channel not in consumed or r.channel in step.passthrough]
                if step.kind == "timestamps":
                    operator = stamps.get(step.index)
                    if operator is None:
                        operator = stamps[step.index] = timestamps_operator(step)
                    stamped, ratings = rate_watermarks(operator, own, step)
                    best = max((r for r in ratings if r != LONG_MIN), default=None)
                    if best is not None:
                        rated = to_spark_time(best)
                        top = rated if top is None else max(top, rated)
                    rows += stamped
                else:
                    host = hosts.get(step.index)
                    if host is None:
                        host = hosts[step.index] = StepHost(step)
                    for index, group in sorted(by_batch(own).items()):
                        rows += host.process(group, LONG_MIN, 0, index)
            if chain.keyed is None:
                yield from _rows_out(rated_layout if chain.rates else layout, rows, rest, chain.rates, top)
            else:
                yield _shards_out(
                    chain.keyed,
                    layout,
                    rows,
                    rest,
                    num_shards,
                    max_parallelism,
                    shard_cache,
                    top,
                    chain.rates,
                    schema,
                )
        for host in hosts.values():
            host.close()

    return run


def _partition_base() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    return (context.partitionId() if context is not None else 0) << 40


def _inputs(batches: Iterator[pa.RecordBatch], packed: bool) -> Iterator[pa.RecordBatch]:
    if not packed:
        yield from batches
        return
    for batch in batches:
        for payload in batch.column("payload").to_pylist():
            yield from unpack(payload)


def _sentinels(batch: pa.RecordBatch, sources: set[int]) -> np.ndarray | None:
    """Which rows of ``batch`` are end-of-input sentinels of ``sources`` (None when there are none)."""
    if not sources:
        return None
    channel = batch.column("ch").to_numpy(zero_copy_only=False)
    if not (channel == END).any():
        return None
    seq = batch.column("seq").to_numpy(zero_copy_only=False)
    mask: np.ndarray = (channel == END) & np.isin(seq, np.fromiter(sources, dtype=np.int64))
    return mask if mask.any() else None


def _rows_out(
    layout: Layout, rows: list[Record], rest: pa.RecordBatch | None, timestamps: bool, top: int | None
) -> Iterator[pa.RecordBatch]:
    def wm(count: int) -> dict[str, pa.Array]:
        return {"wm": pa.nulls(count, pa.int64())} if timestamps else {}

    if rows:
        yield layout.encode(rows, **wm(len(rows)))
    if rest is not None and rest.num_rows:
        yield layout.adapt(rest, **wm(rest.num_rows))
    if timestamps:
        yield layout.row(ch=CARRIER, seq=0, ph=1, wm=top)


def _shards_out(
    keyed: Step,
    layout: Layout,
    rows: list[Record],
    rest: pa.RecordBatch | None,
    num_shards: int,
    max_parallelism: int,
    cache: dict[Any, int],
    top: int | None,
    timestamps: bool,
    schema: pa.Schema,
) -> pa.RecordBatch:
    """One ``(shard, payload)`` row per shard that has rows: the keyed step's rows by their key's shard, other
    rows spread by their ordering number; plus the carrier row when the chain rates watermarks."""
    rows, shards = shard_rows(keyed, rows, num_shards, max_parallelism, cache)
    by_shard: dict[int, list[Record]] = defaultdict(list)
    for row, shard in zip(rows, shards, strict=True):
        by_shard[shard].append(row)
    passing: dict[int, pa.RecordBatch] = {}
    if rest is not None and rest.num_rows:
        adapted = layout.adapt(rest)
        spread = adapted.column("seq").to_numpy(zero_copy_only=False) % num_shards
        for shard in np.unique(spread):
            passing[int(shard)] = adapted.filter(pa.array(spread == shard))
    ordered = sorted(set(by_shard) | set(passing))
    payloads = []
    for shard in ordered:
        parts = [layout.encode(by_shard[shard])] if by_shard.get(shard) else []
        if shard in passing:
            parts.append(passing[shard])
        payloads.append(pack(parts, layout.schema))
    arrays = [pa.array(ordered, pa.int32()), pa.array(payloads, pa.binary())]
    if timestamps:
        arrays = [
            pa.concat_arrays([arrays[0], pa.array([-1], pa.int32())]),
            pa.concat_arrays([arrays[1], pa.array([b""], pa.binary())]),
            pa.array([None] * len(ordered) + [top], pa.int64()),
        ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def keyed_shard_function(
    step: Step,
    codes: ChannelCodes,
    layout: Layout,
    num_shards: int,
    max_parallelism: int,
    watermarks: list[int],
    now: int,
) -> Callable[[Any, Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``applyInArrow`` function of a keyed step over bounded input: one shard, every batch in order, batch
    ``b`` processed at ``watermarks[b]`` (the bounded path's ``[LONG_MIN, last watermark, LONG_MAX]``); it
    returns rows in ``layout``."""
    from panes.spark.processor import split_payloads

    def run(key: Any, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        shard = int(key[0].as_py())
        payloads = (payload for batch in batches for payload in batch.column("payload").to_pylist())
        mine, passing = split_payloads(payloads, step, codes)
        host = StepHost(step, shard, num_shards, max_parallelism)
        groups = by_batch(mine)
        out: list[Record] = []
        for index, watermark in enumerate(watermarks):
            out.extend(host.process(groups.get(index, []), watermark, now, index))
        host.close()
        if out:
            yield layout.encode(out)
        for batch in passing:
            yield layout.adapt(batch)

    return run
