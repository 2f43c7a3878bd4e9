"""The Python functions Spark runs (shipped to executors with cloudpickle).

Consecutive row-local steps of one branch of the plan (stateless operators, one timestamps step, and the
keying before a keyed step) run fused in one ``mapInArrow`` call: rows are unpickled once, go through every
step in order, and are pickled once. Rows of channels no fused step reads pass through as raw bytes; rows
a step reads pass on too when a later step also reads them.

A timestamps step rates each row with the watermark its generator emits after it; the fused call reports
the largest rating of each Arrow batch on one *carrier* row (channel :data:`CARRIER`) in column ``wm``, on
which the query defines its watermark before dropping carriers. End-of-input sentinels of the step's
sources are rated ``END_MS`` the same way.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from panes.spark.codec import (
    END,
    END_MS,
    ROW_SCHEMA,
    ChannelCodes,
    encode,
    loads,
    pack,
    split_payload,
    to_spark_time,
)
from panes.spark.host import Row, StepHost
from panes.spark.linear import Channel, Step
from panes.spark.microbatch import rate_watermarks, shard_rows, timestamps_operator
from panes.spark.sources import RowDecoder
from panes.time import LONG_MIN
from panes.watermarks import TimestampsAndWatermarksOperator

Raw = tuple[int, bytes, Any, int, int]
CARRIER = -2
"""The channel code of watermark carrier rows (dropped right after the watermark is defined)."""


@dataclass
class Chain:
    """Row-local steps fused into one call, and what the call adds: ``wm`` (a timestamps step is fused, with
    the ids of the sources whose sentinels it rates) and/or ``shard`` (``keyed`` is the keyed step next)."""

    steps: list[Step] = field(default_factory=list)
    timestamp_sources: set[int] = field(default_factory=set)
    keyed: Step | None = None
    source: tuple[Channel, str] | None = None
    """Set when the input is a source DataFrame's own columns: its channel and how rows become values."""

    @property
    def has_timestamps(self) -> bool:
        return any(step.kind == "timestamps" for step in self.steps)

    def schema(self) -> pa.Schema:
        """Rows (``ROW_SCHEMA``), or before a keyed step one packed payload per shard (``shard, payload``);
        plus ``wm`` when a timestamps step is fused."""
        if self.keyed is None:
            fields = list(ROW_SCHEMA)
        else:
            fields = [pa.field("shard", pa.int32()), pa.field("payload", pa.binary())]
        if self.has_timestamps:
            fields.append(pa.field("wm", pa.int64()))
        return pa.schema(fields)

    def carrier(self) -> tuple[str, int]:
        """The column and value that mark the watermark carrier rows of this chain's output."""
        return ("ch", CARRIER) if self.keyed is None else ("shard", -1)

    def ddl(self) -> str:
        spark_types = {pa.int32(): "INT", pa.int64(): "BIGINT", pa.binary(): "BINARY"}
        return ", ".join(f"{f.name} {spark_types[f.type]}" for f in self.schema())


def by_batch(rows: list[Row]) -> dict[int, list[Row]]:
    groups: dict[int, list[Row]] = defaultdict(list)
    for row in rows:
        groups[row[4] // 2].append(row)
    return groups


def chain_function(
    chain: Chain, codes: ChannelCodes, num_shards: int, max_parallelism: int
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of ``chain`` (see the module docstring)."""
    read = set()
    for step in chain.steps:
        read |= set(codes.codes(step.consumed))
    if chain.keyed is not None:
        read |= set(codes.codes(chain.keyed.consumed))
    schema = chain.schema()

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        hosts: dict[int, StepHost] = {}
        stamps: dict[int, TimestampsAndWatermarksOperator] = {}
        shard_cache: dict[Any, int] = {}
        decoder = None if chain.source is None else RowDecoder(chain.source[1])
        for batch in batches:
            rows: list[Row] = []
            raw: list[Raw] = []
            top: int | None = None
            if decoder is not None and chain.source is not None:
                source = chain.source[0]
                rows = [(source, value, None, seq, 1) for value, seq in decoder.values(batch)]
            else:
                columns = [batch.column(i).to_pylist() for i in range(5)]
                lookup = codes.channel
                for code, blob, ts, seq, ph in zip(*columns, strict=True):
                    if code in read:
                        rows.append((lookup[code], loads(blob), ts, seq, ph))
                    elif code == END and chain.has_timestamps and seq in chain.timestamp_sources:
                        top = END_MS
                    else:
                        raw.append((code, blob, ts, seq, ph))
            for step in chain.steps:
                mine = [r for r in rows if r[0] in step.consumed]
                rest = [r for r in rows if r[0] not in step.consumed or r[0] in step.passthrough]
                if step.kind == "timestamps":
                    operator = stamps.get(step.index)
                    if operator is None:
                        operator = stamps[step.index] = timestamps_operator(step)
                    stamped, ratings = rate_watermarks(operator, mine, step)
                    best = max((r for r in ratings if r != LONG_MIN), default=None)
                    if best is not None:
                        rated = to_spark_time(best)
                        top = rated if top is None else max(top, rated)
                    rows = rest + stamped
                else:
                    host = hosts.get(step.index)
                    if host is None:
                        host = hosts[step.index] = StepHost(step)
                    produced: list[Row] = []
                    for index, group in sorted(by_batch(mine).items()):
                        produced.extend(host.process(group, LONG_MIN, 0, index))
                    rows = rest + produced
            if chain.keyed is None:
                arrays = list(encode(rows, codes, raw).columns)
                carrier: list[pa.Array] = [
                    pa.array([CARRIER], pa.int32()),
                    pa.array([b""], pa.binary()),
                    pa.array([None], pa.int64()),
                    pa.array([0], pa.int64()),
                    pa.array([1], pa.int32()),
                ]
            else:
                rows, shards = shard_rows(chain.keyed, rows, num_shards, max_parallelism, shard_cache)
                by_shard: dict[int, tuple[list[Row], list[Raw]]] = defaultdict(lambda: ([], []))
                for row, shard in zip(rows, shards, strict=True):
                    by_shard[shard][0].append(row)
                for item in raw:
                    by_shard[item[3] % num_shards][1].append(item)
                ordered = sorted(by_shard)
                arrays = [
                    pa.array(ordered, pa.int32()),
                    pa.array([pack(by_shard[s][0], by_shard[s][1], codes) for s in ordered], pa.binary()),
                ]
                carrier = [pa.array([-1], pa.int32()), pa.array([b""], pa.binary())]
            if chain.has_timestamps:
                size = len(arrays[0])
                arrays = [pa.concat_arrays([array, extra]) for array, extra in zip(arrays, carrier, strict=True)]
                arrays.append(pa.array([None] * size + [top], pa.int64()))
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)
        for host in hosts.values():
            host.close()

    return run


def keyed_shard_function(
    step: Step, codes: ChannelCodes, num_shards: int, max_parallelism: int, watermarks: list[int], now: int
) -> Callable[[Any, Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``applyInArrow`` function of a keyed step over bounded input: one shard, every batch in order, batch
    ``b`` processed at ``watermarks[b]`` (the bounded path's ``[LONG_MIN, last watermark, LONG_MAX]``)."""

    def run(key: Any, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        shard = int(key[0].as_py())
        mine: list[Row] = []
        passing: list[Raw] = []
        for batch in batches:
            for payload in batch.column(1).to_pylist():
                split_payload(payload, step, codes, mine, passing)
        host = StepHost(step, shard, num_shards, max_parallelism)
        groups = by_batch(mine)
        out: list[Row] = []
        for index, watermark in enumerate(watermarks):
            out.extend(host.process(groups.get(index, []), watermark, now, index))
        host.close()
        yield encode(out, codes, passing)

    return run

