"""From the linear steps of a plan to Spark DataFrames.

Rows start in one *branch* per source. Row-local steps (stateless operators, a timestamps step) are queued
on the branch that holds the channels they read (branches merge, by union, when a step reads several), and
run fused in one ``mapInArrow`` when the branch is *flushed* (``fused.Chain``). A timestamps step's
branch gets Spark's watermark right after its flush: ``withWatermark`` on the carried column, then a filter
that names that column (so Spark keeps it above the watermark operator) drops carriers and sentinels, and
the column is dropped — before any keyed step, so Spark never drops late rows. Spark refuses a second
watermark in one lineage, which is why each source keeps its own branch until a keyed step needs all rows:
then every branch is flushed together with the keying and unioned, and the keyed step runs by shard.

A keyed step has one shard per parallel instance, as a Flink operator has one subtask per unit of its
parallelism: the step's own parallelism, else the environment's, else the runner's ``num_shards``. A key goes
to shard ``key_group * shards // max_parallelism``, the index of the Flink subtask that owns it, and each
shard hosts one operator, so one instance of the step's function (:func:`shard_count`).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark.sql import functions as F

from panes.datastream.execution import ExecutionConfig, metric_names
from panes.datastream.fingerprint import operator_uids
from panes.datastream.late_table import writes_late_table
from panes.datastream.plan import Channel, Plan, Transformation, declared_source_type
from panes.datastream.sources import MicroBatchSource
from panes.spark.fused import Chain, chain_function, keyed_shard_function
from panes.spark.layout import ChannelCodes, Layout
from panes.spark.linear import Step, after, linearize, sink_channels
from panes.spark.metrics import FIELDS, column, observe, observe_keyed
from panes.spark.micro_batch_files import NOT_STARTED, MicroBatchFiles, Reading, source_reading
from panes.spark.processor import PAYLOAD_DDL, ShardProcessor
from panes.spark.rescaling import CONTROL_DDL
from panes.spark.session import executor_slots
from panes.spark.shard.definition import ShardDefinition
from panes.spark.shard.runtime import PIECE
from panes.spark.sources import ColumnarInput, columnar_input, source_rows
from panes.spark.split_watermarks import SplitPlan
from panes.spark.watermarks import END_MS
from panes.time import LONG_MAX, LONG_MIN
from panes.types import RecordType


def check_strategy_on_spark(strategy: Any, per_split: bool = False) -> None:
    """Refuse what Spark cannot do with a clear message (see docs/spark-runner.md).

    Idleness needs per-input watermarks that move on processing time while the input is silent; Spark keeps
    one global watermark per query, made of each watermarked input's largest value, so a silent input can
    neither be excluded nor included. A Kafka source's own strategy (``per_split``) is the exception: panes
    carries its partitions' watermarks itself (``split_watermarks``), idleness included. Alignment needs pausing
    one source's reading; Spark reads all sources of a micro-batch together.
    """
    if strategy.idle_timeouts and not per_split:
        raise ValueError(
            "WatermarkStrategy.with_idleness is not supported on Spark here: Spark's watermark is global per "
            "query, so a silent input cannot be marked idle. Remove with_idleness (or run on the local runner); "
            "on Spark it works for a Kafka source's own strategy, env.from_source(kafka, strategy, name), whose "
            "partitions panes tracks one by one; with several sources consider "
            "spark.sql.streaming.multipleWatermarkPolicy=max."
        )
    if strategy.alignment.is_enabled():
        raise ValueError(
            "WatermarkStrategy.with_watermark_alignment is not supported on Spark: Spark reads every source of a "
            "micro-batch together and cannot pause one. Remove the alignment (or run on the local runner)."
        )


def upstream_sources(plan: Plan, step: Step) -> set[int]:
    """Ids of the source transformations ``step`` reads from, through any number of transformations."""
    by_id = {t.id: t for t in plan.transformations()}
    found: set[int] = set()

    def visit(node: Any) -> None:
        if node.kind == "source":
            found.add(node.id)
        for parent in node.inputs:
            visit(parent)

    visit(by_id[step.transformation.id])
    return found


def watermark_lag_before(steps: list[Step], step: Step) -> int:
    """How far the steps with event time per key (``watermark_per_key``) before ``step`` hold its watermark back:
    each forwards the watermark it gets less its ``max_lag``, so along a path the lags add up, and over several
    inputs the longest path counts (a step's watermark is the least of its inputs'). 0 when none."""
    by_id = {other.transformation.id: other for other in steps}
    known: dict[int, int] = {}

    def before(current: Step) -> int:
        if current.index not in known:
            known[current.index] = 0  # a cycle cannot happen in a plan; this only stops a walk from repeating
            lags = [0]
            for channel in (channel for channels in current.inputs for channel in channels):
                producer = by_id.get(channel[0])
                if producer is not None:
                    key_time = getattr(producer.transformation, "key_time", None)
                    lags.append(before(producer) + (key_time.max_lag if key_time is not None else 0))
            known[current.index] = max(lags)
        return known[current.index]

    return before(step)


@dataclass
class Branch:
    """Rows of some sources on their way: the DataFrame so far, the channels its rows may belong to after the
    queued steps, the queued row-local steps, and whether a watermark is defined on it."""

    df: Any
    channels: set[Channel]
    chain: Chain = field(default_factory=Chain)
    watermarked: bool = False
    splits: SplitPlan | None = None
    """The splits whose watermarks the rows carry (split rows of a Kafka source's own strategy upstream)."""


def combined_splits(branches: list[Branch]) -> SplitPlan | None:
    """The splits the rows of ``branches`` carry, together: ``None`` when none does; not ``alone`` when a branch
    with a watermark of its own (not from splits) is among them."""
    plans = [b.splits for b in branches if b.splits is not None]
    if not plans:
        return None
    plan = plans[0]
    for other in plans[1:]:
        plan = plan.merged(other)
    if any(b.splits is None and (b.watermarked or b.chain.rates) for b in branches):
        plan = replace(plan, alone=False)
    return plan


@dataclass
class Translation:
    """The query's final DataFrame (rows of the sinks' channels, see ``layout``) and what built it."""

    df: Any
    steps: list[Step]
    codes: ChannelCodes
    layout: Layout
    metrics_steps: dict[int, str] = field(default_factory=dict)
    """The steps whose counters the query observes (index -> name, see ``metrics``)."""
    observations: list[Any] = field(default_factory=list)
    """Bounded: the ``Observation`` objects holding the counters once the job ran."""
    packed: Layout | None = None
    """When ``df`` holds the last keyed step's payloads (``processor.PAYLOAD_DDL``) rather than rows: the
    layout of their rows (:meth:`rows` unpacks them)."""
    shards: dict[int, int] = field(default_factory=dict)
    """Each keyed step's number of shards (transformation id -> shards), its parallel instances."""
    processors: dict[int, ShardProcessor] = field(default_factory=dict)
    """A streaming query's keyed steps' processors, by step index (in the order Spark numbers their state)."""
    counted_sources: dict[int, str] = field(default_factory=dict)
    """The file and Kafka sources whose records and refused inputs the first fused call counts (index -> name,
    ``metrics.SOURCE_FIELDS``)."""
    micro_batch_files: list[MicroBatchFiles] = field(default_factory=list)
    """The files of the micro-batch sources read from files (``micro_batch_files``), to write before the query
    starts (:meth:`write_micro_batch_files`)."""
    micro_batch_readings: dict[str, Reading] = field(default_factory=dict)
    """How each micro-batch source of a streaming query is read (its operator uid -> reading), and why."""

    def write_micro_batch_files(self) -> None:
        for files in self.micro_batch_files:
            files.write()

    @property
    def micro_batch_controls(self) -> dict[str, tuple[int, ...]]:
        """The control rows before each file of the micro-batch sources read from files, by folder
        (``micro_batch_files.control_rows_read``)."""
        return {files.folder: files.control_before for files in self.micro_batch_files}

    @property
    def result_steps(self) -> frozenset[int]:
        """The metered steps whose main output a sink reads: their records out are the job's results (a late data
        table's rows are not results, ``late_table.writes_late_table``)."""
        read = sink_channels(self.steps)
        return frozenset(
            s.index
            for s in self.steps
            if s.index in self.metrics_steps
            and (s.transformation.id, None) in read
            and not writes_late_table(s.transformation)
        )

    def rows(self) -> Any:
        """The final rows, in layout form (unpacking the payloads when ``packed``)."""
        if self.packed is None:
            return self.df
        function = chain_function(Chain(packed=True), self.codes, self.packed, 1, 128)
        return self.df.mapInArrow(function, self.packed.ddl())


class Translator:
    """Builds the DataFrame of ``plan`` (streaming or bounded) for ``SparkRunner``."""

    def __init__(
        self,
        spark: Any,
        plan: Plan,
        config: ExecutionConfig,
        streaming: bool,
        num_shards: int,
        finite: bool = True,
        batch: bool = False,
        shard_keepers: bool = True,
        control: str | None = None,
        generation: int = 0,
        element_by_element: frozenset[str] = frozenset(),
        micro_batches: Reading = NOT_STARTED,
    ) -> None:
        """``element_by_element``: the uids of window steps kept off columns (``Step.columns``); ``micro_batches``:
        how a streaming query may read its micro-batch sources (``micro_batch_files.query_reading``)."""
        self.spark = spark
        self.micro_batches = micro_batches
        self.micro_batch_files: list[MicroBatchFiles] = []
        self.micro_batch_readings: dict[str, Reading] = {}
        self.shard_keepers = shard_keepers
        self.control = control
        """The folder of the query's control input (``rescaling``): pieces of rescaled state reach the streaming
        keyed steps' shards through it. ``None``: no control input (bounded runs, ``to_dataframe``)."""
        self._control_df: Any = None
        self.generation = generation
        """The generation of the keyed steps' shards (``rescaling``), which their processors carry."""
        self.processors: dict[int, ShardProcessor] = {}
        self.plan = plan
        self.streaming = streaming
        self.batch = batch
        self.num_shards = num_shards
        self.default_parallelism = config.parallelism
        self.max_parallelism = config.max_parallelism
        self.inputs: dict[int, ColumnarInput] = {}
        for t in plan.transformations():
            if t.kind == "source":
                found = columnar_input(spark, t.source)  # type: ignore[attr-defined]
                if found is not None:
                    self.inputs[id(t.source)] = found  # type: ignore[attr-defined]

        def source_type(source: Any) -> RecordType | None:
            found = self.inputs.get(id(source))
            return found.record_type if found is not None else declared_source_type(source)

        self.steps = linearize(plan, source_type)
        if element_by_element:
            uids = operator_uids(plan)
            for step in self.steps:
                step.columns = uids.get(step.transformation.id) not in element_by_element
        self.codes = ChannelCodes.of_steps(self.steps)
        names = metric_names(plan)
        self.names = {s.index: names[s.transformation.id] for s in self.steps if s.transformation.id in names}
        """The steps that report metrics: index -> name (an operator's step, not a copy the translation added)."""
        self.metrics_steps: dict[int, str] = dict(self.names)
        self.counted_sources: dict[int, str] = {}
        self.observations: list[Any] = []
        self._observed = 0
        self.shards: dict[int, int] = {}
        self.branches: list[Branch] = []
        # a finite streaming plan without watermark strategy still ends with Flink's LONG_MAX watermark (its
        # sources' end-of-input sentinels rate it), and runs in event time, so Spark stops when input ends
        self.end_watermark = streaming and finite and not any(s.kind == "timestamps" for s in self.steps)
        # a source that gives its micro-batches' processing times drives every step's clock (clock rows)
        self.clocked = any(
            isinstance(getattr(t, "source", None), MicroBatchSource) and t.source.processing_times is not None  # type: ignore[attr-defined]
            for t in plan.transformations()
            if t.kind == "source"
        )

    def translate(self) -> Translation:
        for step in self.steps:
            kind = step.kind
            if kind == "source":
                self._source(step)
            elif kind in ("stateless", "timestamps"):
                self._row_local(step)
            elif kind == "keyed":
                self._keyed(step)
        if not self.branches:
            raise ValueError("the plan reads no source")
        layout = Layout(self.codes, sink_channels(self.steps))
        last = self.branches[0] if len(self.branches) == 1 else None
        packed: Layout | None = None
        if last is not None and last.chain.packed and not last.chain.steps:
            # the last keyed step's payloads: a sink that reads them unpacks them itself
            df, packed = last.df, Layout(self.codes, last.channels)
        else:
            df = self._merge(self.branches)
        return Translation(
            df,
            self.steps,
            self.codes,
            layout,
            self.metrics_steps,
            self.observations,
            packed,
            self.shards,
            self.processors,
            self.counted_sources,
            self.micro_batch_files,
            self.micro_batch_readings,
        )

    # -- steps -------------------------------------------------------------------------------------------------

    def _source(self, step: Step) -> None:
        t = step.transformation
        channel = (t.id, None)
        if channel not in self.codes.code:
            return
        columnar = self.inputs.get(id(t.source))  # type: ignore[attr-defined]
        if columnar is not None:
            chain = Chain(source=channel, text=columnar.text, kafka=columnar.kafka, source_name=t.name)
            if columnar.text is not None or columnar.kafka is not None:
                chain.source_index = step.index
                self.counted_sources[step.index] = t.name
            if (columnar.text is not None or columnar.kafka is not None) and t.error_tag is not None:
                errors = (t.id, t.error_tag.tag_id)
                chain.source_errors = errors if errors in step.needed_outputs else None
            produced: set[Channel] = {channel} if chain.source_errors is None else {channel, chain.source_errors}
            branch = Branch(columnar.dataframe, produced, chain)
        else:
            reading = NOT_STARTED
            if self.streaming and isinstance(t.source, MicroBatchSource):  # type: ignore[attr-defined]
                uid = operator_uids(self.plan)[t.id]
                reading = source_reading(self.micro_batches, uid)
                self.micro_batch_readings[uid] = reading
            rows, files = source_rows(self.spark, t.source, channel, self.codes, self.streaming, reading)  # type: ignore[attr-defined]
            if files is not None:
                self.micro_batch_files.append(files)
            branch = Branch(rows, {channel})
        if self.end_watermark:
            branch.chain.end_only = True
            branch.chain.timestamp_sources = {t.id}
        if branch.df.isStreaming != self.streaming:
            raise ValueError(
                "a plan mixes bounded and streaming sources; on Spark every source must be streaming "
                "(micro-batches, streaming files or DataFrames) or every source bounded"
            )
        self.branches.append(branch)

    def _row_local(self, step: Step) -> None:
        involved = [b for b in self.branches if b.channels & step.consumed]
        if len(involved) == 1:
            branch = involved[0]
        else:
            branch = Branch(
                self._merge(involved),
                set().union(*(b.channels for b in involved)),
                watermarked=any(b.watermarked for b in involved),
                splits=combined_splits(involved),
            )
            self.branches = [b for b in self.branches if b not in involved] + [branch]
        if step.kind == "timestamps":
            per_split = self._per_split(branch, step)
            check_strategy_on_spark(step.transformation.spec, per_split)  # type: ignore[attr-defined]
            if branch.watermarked or branch.chain.has_timestamps:
                raise ValueError(
                    f"{step.transformation.name}: on Spark, a stream can get timestamps and watermarks only "
                    "once, before any keyed operator (Spark refuses to redefine a watermark)"
                )
            branch.chain.timestamp_sources = upstream_sources(self.plan, step)
            if per_split:
                # the source's step index numbers its splits: the same in every run of the same plan
                source = branch.chain.source_index
                assert source is not None and branch.chain.kafka is not None
                branch.chain.split_source = source
                strategy = step.transformation.spec  # type: ignore[attr-defined]
                branch.splits = SplitPlan(branch.chain.kafka.split_codes(source), tuple(strategy.idle_timeouts))
        branch.chain.steps.append(step)
        branch.channels = after(branch.channels, step)

    def _per_split(self, branch: Branch, step: Step) -> bool:
        """Whether the timestamps ``step`` is a Kafka source's own strategy (``env.from_source``) in a streaming
        query, right after the source: then it rates each partition apart (``split_watermarks``)."""
        chain = branch.chain
        if not self.streaming or chain.kafka is None or chain.source_index is None or chain.steps:
            return False
        factory = getattr(step.transformation, "operator_factory", None)
        return factory is not None and bool(getattr(factory(), "per_split", False))

    def shards_of(self, step: Step) -> int:
        """How many shards (parallel instances) the keyed ``step`` has (see the module docstring)."""
        return shard_count(step.transformation, self.default_parallelism, self.num_shards)

    def _keyed(self, step: Step) -> None:
        shards = self.shards[step.transformation.id] = self.shards_of(step)
        watermarked = any(b.watermarked or b.chain.rates for b in self.branches)
        splits = combined_splits(self.branches)
        keyed = self._merge(self.branches, keyed=step)
        channels = after(set().union(*(b.channels for b in self.branches)), step)
        layout = Layout(self.codes, channels)
        definition = ShardDefinition(
            uuid.uuid4().hex,
            step,
            self.codes,
            layout,
            shards,
            self.max_parallelism,
            splits,
            watermark_lag_before(self.steps, step),
        )
        if self.streaming:
            processor = ShardProcessor(
                definition, watermarked, self.clocked, executor_slots(self.spark), self.shard_keepers
            )
            processor.generation = self.generation
            self.processors[step.index] = processor
            if self.control is not None:
                keyed = keyed.unionByName(self._pieces(step))
            df = keyed.groupBy("shard").transformWithStateInPandas(
                processor, PAYLOAD_DDL, "Append", "EventTime" if watermarked else "ProcessingTime"
            )
            # each keyed step's counters, in the micro-batch's progress (see ``metrics``)
            df = observe_keyed(df, step.index)
            chain = Chain(packed=True)
        else:
            function = keyed_shard_function(definition, [LONG_MIN, LONG_MAX], int(time.time() * 1000), self.batch)
            columns = [column(step.index, name) for name in FIELDS]
            ddl = f"{layout.ddl()}, " + ", ".join(f"{c} BIGINT" for c in columns)
            df = self._observe(keyed.groupBy("shard").applyInArrow(function, ddl), columns, "ch")
            chain = Chain()
        self.branches = [Branch(df, channels, chain, watermarked=watermarked, splits=splits)]

    def _pieces(self, step: Step) -> Any:
        """The control input's pieces of rescaled state for ``step``, as its shards' payloads (``rescaling``): one
        streaming file source for the whole query, read by every keyed step."""
        if self._control_df is None:
            self._control_df = self.spark.readStream.schema(CONTROL_DDL).parquet(self.control)
        pieces = self._control_df.filter(F.col("step") == F.lit(step.index))
        return pieces.select(F.col("shard"), F.concat(F.lit(PIECE), F.col("piece")).alias("payload"))

    def _observe(self, df: Any, columns: list[str], mark: str) -> Any:
        """``df`` with its metrics rows observed (see ``metrics``), then dropped."""
        self._observed += 1
        df, observation = observe(df, f"panes-c{self._observed}", columns, self.streaming, mark)
        if observation is not None:
            self.observations.append(observation)
        return df

    # -- branches -----------------------------------------------------------------------------------------------

    def _merge(self, branches: list[Branch], keyed: Step | None = None) -> Any:
        frames = [self._flush(branch, keyed) for branch in branches]
        merged = frames[0]
        for frame in frames[1:]:
            merged = merged.unionByName(frame, allowMissingColumns=True)
        return merged

    def _flush(self, branch: Branch, keyed: Step | None = None) -> Any:
        """The branch's DataFrame after its queued steps (and the keying for ``keyed``), watermark defined."""
        chain = branch.chain
        if chain.is_empty() and keyed is None:
            return branch.df
        chain.keyed = keyed
        chain.metered = [s.index for s in [*chain.steps, keyed] if s is not None and s.index in self.names]
        layout = Layout(self.codes, branch.channels | keying_outputs(keyed))
        shards = self.num_shards if keyed is None else self.shards_of(keyed)
        function = chain_function(chain, self.codes, layout, shards, self.max_parallelism)
        df = branch.df.mapInArrow(function, Layout.ddl_of(chain.output_schema(layout)))
        if chain.is_metered:
            df = self._observe(df, [f.name for f in chain.metric_fields()], chain.mark)
        if chain.rates:
            column, marker = chain.carrier()
            if self.streaming:
                df = df.withColumn("wm_ts", F.timestamp_millis(F.col("wm"))).withWatermark("wm_ts", "0 seconds")
                # one CASE expression naming the watermark column: Spark cannot push it below withWatermark
                keep = F.when(F.col(column) == marker, F.lit(False)).otherwise(
                    F.col("wm_ts").isNull() | (F.col("wm_ts") < F.timestamp_millis(F.lit(END_MS)))
                )
                df = df.filter(keep).drop("wm", "wm_ts")
            else:
                # bounded input is one step: its keyed steps go from no watermark to the final one, as Flink's
                # end of input forwards Long.MAX_VALUE before a generator's last periodic watermark
                df = df.filter(F.col(column) != marker).drop("wm")
            branch.watermarked = True
        branch.df = df
        branch.chain = Chain()
        return df


def shard_count(transformation: Transformation, default_parallelism: int | None, num_shards: int) -> int:
    """How many shards a keyed step has: its own parallelism, else the environment's, else ``num_shards``."""
    return transformation.parallelism or default_parallelism or num_shards


def keying_outputs(keyed: Step | None) -> set[Channel]:
    """The channels the keying before ``keyed`` adds to the rows it shuffles: the step's error output, where
    rows whose key cannot be read go (``keying.shard_rows``), when anything reads it."""
    if keyed is None or keyed.transformation.error_tag is None:
        return set()
    channel = (keyed.transformation.id, keyed.transformation.error_tag.tag_id)
    return {channel} if channel in keyed.needed_outputs else set()
