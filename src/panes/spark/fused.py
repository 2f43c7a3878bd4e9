"""Fused steps: the row-local steps of a branch (and the keying before a keyed step) run as one ``mapInArrow``
call, the Python function Spark ships to executors with cloudpickle; and the bounded keyed step's ``applyInArrow``
function.

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
of the step's sources are rated ``END_MS`` the same way. A Kafka source's own strategy also rates each partition
apart (``Chain.split_source``): the call takes the partition's rows through the steps by themselves, each with its
own generator, and sends the partitions' ratings on as split rows (``panes.spark.split_watermarks``), which every
later call passes on.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from panes.datastream.plan import Channel
from panes.datastream.text_files import BadLine, TextFormat
from panes.operators.base import CountingOutput
from panes.operators.metrics import OperatorCounters
from panes.spark.failures import carrying_iterators
from panes.spark.keying import Keying, has_null_keys, shards_of_columns, shards_out
from panes.spark.layout import (
    CARRIER,
    CLOCK,
    END,
    ChannelCodes,
    Layout,
    Record,
    channel_mask,
    clock_of,
    forwarded_of,
    pack,
    read_records,
    split_rows,
    splits_of,
    unpack,
)
from panes.spark.linear import Step
from panes.spark.metrics import FIELDS, SOURCE_FIELDS, metered, metric_fields
from panes.spark.shard.definition import ShardDefinition
from panes.spark.shard.element_host import StepHost
from panes.spark.watermarks import END_MS, rate_watermarks, stamp_columns, timestamps_operator, to_spark_watermark
from panes.time import LONG_MIN
from panes.watermarks import (
    TimestampsAndWatermarksOperator,
)

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
    text: TextFormat | None = None
    """How the source's files are parsed (a JSON or CSV file source: its rows are ``path``, ``content``)."""
    kafka: Any = None
    """How the source's Kafka records become elements (a Kafka source: its rows are Spark's Kafka columns;
    ``panes.spark.kafka.records.KafkaRows``)."""
    split_source: int | None = None
    """The source step (index) whose Kafka partitions the chain's first step (the source's own strategy) rates one
    by one (``panes.spark.split_watermarks``); ``None``: one rating per batch."""
    source_errors: Channel | None = None
    """The source's error output, where the lines ``text`` (or the records ``kafka``) cannot read go (``None``:
    they fail the job)."""
    source_name: str = ""
    packed: bool = False
    end_only: bool = False
    """Rate only end-of-input sentinels (a plan without watermark strategy still ends with ``LONG_MAX``)."""
    metered: list[int] = field(default_factory=list)
    """The steps (indices) whose counters the call reports on a metrics row (``metrics.metered``)."""
    source_index: int | None = None
    """The source step (index) whose records, refused inputs and Spark rows the call counts on its metrics row
    (``metrics.SOURCE_FIELDS``); ``None``: no source is counted here."""

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
        return pa.schema(fields + self.metric_fields())

    def metric_fields(self) -> list[pa.Field]:
        """The metric columns of the call: the metered steps' counters, then the counted source's."""
        counted = [] if self.source_index is None else metric_fields([self.source_index], SOURCE_FIELDS)
        return metric_fields(self.metered) + counted

    @property
    def is_metered(self) -> bool:
        """Whether the call adds a metrics row."""
        return bool(self.metered) or self.source_index is not None

    @property
    def mark(self) -> str:
        """The column that marks the call's carrier and metrics rows (``ch``, or ``shard`` before a keyed step)."""
        return "ch" if self.keyed is None else "shard"

    def carrier(self) -> tuple[str, int]:
        """The column and value that mark the watermark carrier rows of this chain's output."""
        return ("ch", CARRIER) if self.keyed is None else ("shard", -1)


def by_batch(rows: list[Record]) -> dict[int, list[Record]]:
    groups: dict[int, list[Record]] = defaultdict(list)
    for row in rows:
        groups[row.phase // 2].append(row)
    return groups


def _source_batch(
    batch: pa.RecordBatch, chain: Chain, codes: ChannelCodes, base: int, start: int
) -> tuple[pa.RecordBatch, np.ndarray | None]:
    """A source DataFrame's batch as rows of the chain's source channel (its columns become the channel's
    struct column, untouched); ordering numbers ``base | start + 1, ...``. A file batch (``chain.text``) is
    parsed file by file: its rows, then the lines it could not read on the source's error output (or the
    first of them fails the job, naming its file and line). With the rows, each one's split code when the chain
    rates splits (``chain.split_source``), else ``None``."""
    channel = chain.source
    assert channel is not None
    if chain.kafka is not None:
        found: tuple[pa.RecordBatch, np.ndarray | None] = chain.kafka.rows(
            batch, codes, channel, chain.source_errors, chain.source_name, base, start, chain.split_source
        )
        return found
    bad: list[BadLine] = []
    if chain.text is not None:
        parsed = [
            chain.text.parse(content, path)
            for path, content in zip(batch.column("path").to_pylist(), batch.column("content").to_pylist(), strict=True)
        ]
        bad = [line for _, lines in parsed for line in lines]
        if bad and chain.source_errors is None:
            raise bad[0].error(chain.source_name)
        table = pa.concat_tables([t for t, _ in parsed]) if parsed else chain.text.schema.empty_table()
        batch = pa.RecordBatch.from_pylist([], table.schema)
        if table.num_rows:
            batch = table.combine_chunks().to_batches()[0]
    code = codes.code[channel]
    count = batch.num_rows
    record_type = codes.types[code]
    column: pa.Array
    if record_type is not None and record_type.shape == "scalar":
        column = batch.column(0)  # a source of plain values (the lines of text files): its one column
    else:
        column = pa.StructArray.from_arrays(batch.columns, fields=list(batch.schema))
    if record_type is not None and column.type != record_type.arrow_type:
        column = column.cast(record_type.arrow_type)
    layout = Layout(codes, [channel] if chain.source_errors is None else [channel, chain.source_errors])
    rows = layout.adapt(
        pa.RecordBatch.from_arrays([column], names=[codes.column(code)]),
        ch=pa.array(np.full(count, code, dtype=np.int32)),
        ts=pa.nulls(count, pa.int64()),
        seq=pa.array(base | np.arange(start + 1, start + count + 1, dtype=np.int64)),
        ph=pa.array(np.ones(count, dtype=np.int32)),
    )
    if not bad:
        return rows, None
    assert chain.source_errors is not None
    errors = layout.encode(
        [
            Record(chain.source_errors, line.record(chain.source_name), None, base | (start + count + i + 1), 1)
            for i, line in enumerate(bad)
        ]
    )
    return pa.Table.from_batches([rows, errors]).combine_chunks().to_batches()[0], None


def chain_function(
    chain: Chain, codes: ChannelCodes, layout: Layout, num_shards: int, max_parallelism: int
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of ``chain`` writing ``layout`` (see the module docstring): each partition's
    batches go through one :class:`_ChainRun`."""
    full_schema = chain.output_schema(layout)
    schema = pa.schema(list(full_schema)[: len(full_schema) - len(chain.metric_fields())])
    metered_steps = chain.metered

    @carrying_iterators
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        read = dict.fromkeys(SOURCE_FIELDS, 0)
        shape = (chain, codes, layout, schema, num_shards, max_parallelism)
        if not chain.is_metered:
            yield from _ChainRun(*shape, {}, read).run(batches)
            return
        counters = {index: OperatorCounters() for index in metered_steps}

        def values() -> dict[int, dict[str, int]]:
            found = {index: c.values() for index, c in counters.items()}
            if chain.source_index is not None:
                found[chain.source_index] = dict(read)
            return found

        yield from metered(_ChainRun(*shape, counters, read).run(batches), full_schema, chain.mark, values)

    return run


class _ChainRun:
    """One partition's pass of a chain (``chain_function``): each incoming batch is read (a source's records, or
    the clock and the forwarded watermarks a keyed step upstream sent), its timestamps steps run on columns while
    they can, the other steps on records, and its rows leave by shard for the keyed step next (or as the chain's
    output). ``top`` is the largest watermark rating of the batch in hand (Spark's, :func:`to_spark_watermark`)."""

    def __init__(
        self,
        chain: Chain,
        codes: ChannelCodes,
        layout: Layout,
        schema: pa.Schema,
        num_shards: int,
        max_parallelism: int,
        counters: dict[int, OperatorCounters],
        read: dict[str, int],
    ) -> None:
        self.chain, self.codes, self.layout, self.schema = chain, codes, layout, schema
        self.num_shards, self.max_parallelism = num_shards, max_parallelism
        self.counters, self.read = counters, read
        self.rated_layout = layout.with_extra(WM)
        self.keyed_counters = None if chain.keyed is None else counters.get(chain.keyed.index)
        self.keying = (
            None
            if chain.keyed is None
            else Keying(chain.keyed, codes, layout, num_shards, max_parallelism, schema, chain.rates)
        )
        self.hosts: dict[int, StepHost] = {}
        self.stamps: dict[tuple[int, int | None], TimestampsAndWatermarksOperator] = {}
        self.split: int | None = None
        """The split whose rows are in hand (``Chain.split_source``; ``None``: every split at once)."""
        self.rated: dict[int, int] = {}
        """Each split's largest rating (Flink ms) in this partition's pass, read or made (split rows)."""
        self.shard_cache: dict[Any, int] = {}
        self.base, self.count = _partition_base(), 0
        self.now: int | None = None
        self.forwarded: dict[int, tuple[int, int]] = {}
        self.top: int | None = None

    def run(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        chain = self.chain
        for incoming in unpacked(batches, chain.packed):
            batch, splits = yield from self._read(incoming)
            if splits is None:
                yield from self._through(batch)
                continue
            for split in np.unique(splits).tolist():
                self.split = split
                yield from self._through(batch.filter(pa.array(splits == split)))
            self.split = None
        if self.rated:
            yield control_rows(
                split_rows(self.layout, self.rated),
                self.schema,
                self.num_shards if chain.keyed is not None else None,
            )
        for host in self.hosts.values():
            host.close()

    def _through(self, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        """One batch of rows through the chain's steps, out by shard or in the output layout."""
        chain = self.chain
        self.top = None
        sentinels = _sentinels(batch, chain.timestamp_sources) if chain.rates else None
        if sentinels is not None:
            self.top = END_MS
            batch = batch.filter(pa.array(~sentinels))
        batch, steps = self._stamp_columns(batch)
        if not steps and self._keys_by_column(batch):
            assert chain.keyed is not None
            assert self.keying is not None
            yield shards_of_columns(self.keying, batch, self.top)
            return
        yield from self._records_through(batch, steps)

    def _read(
        self, incoming: pa.RecordBatch
    ) -> Generator[pa.RecordBatch, None, tuple[pa.RecordBatch, np.ndarray | None]]:
        """A source's batch with its records numbered and counted, and their splits when the chain rates them one
        by one; else the batch without its clock (the clock rows it yields for the keyed step), the watermarks a
        keyed step upstream forwarded and the split rows (kept in :attr:`rated`). Returns the batch and splits."""
        chain = self.chain
        if chain.source is not None:
            batch, splits = _source_batch(incoming, chain, self.codes, self.base, self.count)
            self.count += batch.num_rows
            _count_source(self.read, incoming, batch, chain, self.codes)
            return batch, splits
        batch, pairs = splits_of(incoming)
        for split, rating in pairs:
            if rating > self.rated.get(split, LONG_MIN):
                self.rated[split] = rating
        batch, clock = clock_of(batch)
        if clock is not None:
            self.now = clock if self.now is None else max(self.now, clock)
            yield clock_rows(clock, self.layout, self.schema, self.num_shards if chain.keyed is not None else None)
        batch, marks = forwarded_of(batch)
        for index, (before, after) in marks.items():
            known = self.forwarded.get(index, (LONG_MIN, LONG_MIN))
            self.forwarded[index] = (max(known[0], before), max(known[1], after))
        return batch, None

    def _operator(self, step: Step) -> TimestampsAndWatermarksOperator:
        """The timestamps operator of ``step`` (of the split in hand, when the chain rates splits one by one)."""
        place = (step.index, self.split)
        operator = self.stamps.get(place)
        if operator is None:
            operator = self.stamps[place] = timestamps_operator(step)
            _share(self.counters, step.index, operator)
        return operator

    def _rate(self, best: int | None) -> None:
        if best is not None:
            rated = to_spark_watermark(best)
            self.top = rated if self.top is None else max(self.top, rated)
            if self.split is not None and best > self.rated.get(self.split, LONG_MIN):
                self.rated[self.split] = best

    def _stamp_columns(self, batch: pa.RecordBatch) -> tuple[pa.RecordBatch, list[Step]]:
        """The leading timestamps steps that can work on columns (timestamps read from a column) run there;
        the batch after them and the steps left, which take records."""
        steps = list(self.chain.steps)
        while steps and steps[0].kind == "timestamps":
            columns = stamp_columns(batch, steps[0], self._operator(steps[0]), self.codes)
            if columns is None:
                break
            batch, best = columns
            self._rate(best)
            steps.pop(0)
        return batch, steps

    def _keys_by_column(self, batch: pa.RecordBatch) -> bool:
        """Whether the keyed step next takes the batch's columns as they are (its keys read from a column, none
        null)."""
        keying = self.keying
        return keying is not None and keying.by_column and not has_null_keys(batch, keying.step, self.codes)

    def _records_through(self, batch: pa.RecordBatch, steps: list[Step]) -> Iterator[pa.RecordBatch]:
        """The rows the remaining ``steps`` read become records (and stay records while needed; the others stay
        columns) and go through the steps; the chain's output, by shard when a keyed step is next."""
        chain = self.chain
        read_now = self.codes.codes(
            set().union(*(s.consumed for s in steps)) | (chain.keyed.consumed if chain.keyed is not None else set())
        )
        mine = channel_mask(batch, read_now)
        rows = read_records(batch, self.codes, mine)
        rest = batch.filter(pa.array(~mine)) if not mine.all() else None
        for step in steps:
            consumed = step.consumed
            own = [r for r in rows if r.channel in consumed]
            rows = [r for r in rows if r.channel not in consumed or r.channel in step.passthrough]
            rows += self._stamp_records(step, own) if step.kind == "timestamps" else self._host_records(step, own)
        if chain.keyed is None:
            yield from _rows_out(self.rated_layout if chain.rates else self.layout, rows, rest, chain.rates, self.top)
            return
        assert self.keying is not None
        yield shards_out(self.keying, rows, rest, self.shard_cache, self.top, self.keyed_counters)

    def _stamp_records(self, step: Step, own: list[Record]) -> list[Record]:
        stamped, ratings = rate_watermarks(self._operator(step), own, step)
        self._rate(max((r for r in ratings if r != LONG_MIN), default=None))
        return stamped

    def _host_records(self, step: Step, own: list[Record]) -> list[Record]:
        host = self.hosts.get(step.index)
        if host is None:
            host = self.hosts[step.index] = StepHost(step)
            _share(self.counters, step.index, host.operator)
        now = 0 if self.now is None else self.now
        rows: list[Record] = []
        for index, group in sorted(by_batch(own).items()):
            # the watermark the keyed step before forwarded: before its results of timers, then after
            before, after = self.forwarded.get(index, (LONG_MIN, LONG_MIN))
            host.advance(before, now)
            rows += host.process(group, after, now, index)
        return rows


def _count_source(
    read: dict[str, int], incoming: pa.RecordBatch, rows: pa.RecordBatch, chain: Chain, codes: ChannelCodes
) -> None:
    """Add to ``read`` (``metrics.SOURCE_FIELDS``) what the source's batch ``incoming`` (Spark's rows: files, or
    Kafka records) became in ``rows``: records on the source's channel, refused inputs on its error output."""
    assert chain.source is not None
    channels = rows.column("ch")
    read["spark_rows"] += incoming.num_rows
    read["records_out"] += int(pc.sum(pc.equal(channels, codes.code[chain.source])).as_py() or 0)
    if chain.source_errors is not None:
        read["error_out"] += int(pc.sum(pc.equal(channels, codes.code[chain.source_errors])).as_py() or 0)


def _share(counters: dict[int, OperatorCounters], index: int, operator: Any) -> None:
    """Let ``operator`` count into the counters reported for step ``index`` (when the step is metered)."""
    shared = counters.get(index)
    if shared is not None:
        operator.counters = shared
        output = operator.output
        if isinstance(output, CountingOutput):
            output._counters = shared


def clock_rows(clock: int, layout: Layout, schema: pa.Schema, num_shards: int | None) -> pa.RecordBatch:
    """The clock row (``layout.CLOCK``) a fused call passes on, in its output ``schema``: one row, or before a
    keyed step one payload per shard, so that every shard learns the micro-batch's processing time."""
    return control_rows(layout.row(ch=CLOCK, ts=clock, seq=0, ph=1), schema, num_shards)


def control_rows(rows: pa.RecordBatch, schema: pa.Schema, num_shards: int | None) -> pa.RecordBatch:
    """Control ``rows`` (clock or split rows, in a layout) a fused call passes on, in its output ``schema``: as
    they are, or before a keyed step as one payload for every shard."""
    if num_shards is None:
        return pa.RecordBatch.from_arrays(
            [rows.column(f.name) if f.name in rows.schema.names else pa.nulls(rows.num_rows, f.type) for f in schema],
            schema=schema,
        )
    payload = pack([rows], rows.schema)
    arrays = [pa.array(range(num_shards), pa.int32()), pa.array([payload] * num_shards, pa.binary())]
    arrays += [pa.nulls(num_shards, f.type) for f in list(schema)[2:]]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _partition_base() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    return (context.partitionId() if context is not None else 0) << 40


def unpacked(batches: Iterator[pa.RecordBatch], packed: bool) -> Iterator[pa.RecordBatch]:
    """Rows in layout form: ``batches`` themselves, or the rows of their payloads when they are a keyed
    step's output (``packed``)."""
    if not packed:
        yield from batches
        return
    for batch in batches:
        for payload in batch.column("payload").to_pylist():
            if payload:
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


def keyed_shard_function(
    definition: ShardDefinition, watermarks: list[int], now: int, batch: bool = False
) -> Callable[[Any, Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``applyInArrow`` function of a keyed step (``definition``) over bounded input: one shard, every batch in
    order, batch ``b`` processed at ``watermarks[b]`` (the bounded path's ``[LONG_MIN, LONG_MAX]``: one step of
    input); it returns rows in the definition's layout and a metrics row with the step's counters and gauges
    (``metrics.metered``). In BATCH execution (``batch``) an operator fed element by element takes all the shard's
    rows at once, sorted by key and timestamp (``RecordHost.run_sorted``)."""
    from panes.spark.shard.hosts import RecordHost, shard_host
    from panes.spark.shard.routing import payload_batches

    step = definition.step
    schema = pa.schema(list(definition.layout.schema) + metric_fields([step.index], FIELDS))

    @carrying_iterators
    def run(key: Any, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        shard = int(key[0].as_py())
        rows = payload_batches(payload for batch in batches for payload in batch.column("payload").to_pylist())
        host = shard_host(definition, shard, batch)

        def work() -> Iterator[pa.RecordBatch]:
            if isinstance(host, RecordHost) and batch:
                yield from host.run_sorted(rows, now)
            else:
                for index, watermark in enumerate(watermarks):
                    yield from host.run(_of_batch(rows, index), watermark, now, index)
            host.close()

        def values() -> dict[int, dict[str, int]]:
            gauges = {"open_panes": host.open_panes(), "timers": host.timer_count()}
            return {step.index: {**host.counters.values(), **gauges}}

        yield from metered(work(), schema, "ch", values)

    return run


def _of_batch(rows: list[pa.RecordBatch], index: int) -> list[pa.RecordBatch]:
    """The rows of bounded batch ``index`` (phases ``2 * index`` and ``2 * index + 1``)."""
    chosen = []
    for batch in rows:
        mask = (batch.column("ph").to_numpy(zero_copy_only=False) // 2) == index
        if mask.any():
            chosen.append(batch if mask.all() else batch.filter(pa.array(mask)))
    return chosen
