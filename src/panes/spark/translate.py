"""From the linear steps of a plan to Spark DataFrames.

Rows start in one *branch* per source. Row-local steps (stateless operators, a timestamps step) are queued
on the branch that holds the channels they read (branches merge, by union, when a step reads several), and
run fused in one ``mapInArrow`` when the branch is *flushed* (``functions.Chain``). A timestamps step's
branch gets Spark's watermark right after its flush: ``withWatermark`` on the carried column, then a filter
that names that column (so Spark keeps it above the watermark operator) drops carriers and sentinels, and
the column is dropped — before any keyed step, so Spark never drops late rows. Spark refuses a second
watermark in one lineage, which is why each source keeps its own branch until a keyed step needs all rows:
then every branch is flushed together with the keying and unioned, and the keyed step runs by shard.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from panes.datastream.plan import Plan
from panes.spark.codec import END_MS, ROW_DDL, ChannelCodes, from_spark_watermark
from panes.spark.functions import Chain, chain_function, keyed_shard_function
from panes.spark.linear import Channel, Step, linearize
from panes.spark.processor import ShardProcessor
from panes.spark.sources import ColumnarInput, source_rows
from panes.time import LONG_MAX, LONG_MIN

if TYPE_CHECKING:
    from panes.datastream.environment import StreamEnvironment


def check_strategy_on_spark(strategy: Any) -> None:
    """Refuse what Spark cannot do with a clear message (see docs/spark-runner.md).

    Idleness needs per-input watermarks that move on processing time while the input is silent; Spark keeps
    one global watermark per query, made of each watermarked input's largest value, so a silent input can
    neither be excluded nor included. Alignment needs pausing one source's reading; Spark reads all sources
    of a micro-batch together.
    """
    if strategy.idle_timeouts:
        raise ValueError(
            "WatermarkStrategy.with_idleness is not supported on Spark: Spark's watermark is global per query, "
            "so a silent input cannot be marked idle. Remove with_idleness (or run on the local runner); with "
            "several sources consider spark.sql.streaming.multipleWatermarkPolicy=max."
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


@dataclass
class Branch:
    df: Any
    channels: set[Channel]
    chain: Chain = field(default_factory=Chain)
    watermarked: bool = False


@dataclass
class Translation:
    df: Any
    steps: list[Step]
    codes: ChannelCodes
    watermarks: list[int]


class Translator:
    """Builds the DataFrame of ``plan`` (streaming or bounded) for ``SparkRunner``."""

    def __init__(
        self, spark: Any, plan: Plan, env: StreamEnvironment, streaming: bool, folder: str, num_shards: int
    ) -> None:
        self.spark = spark
        self.plan = plan
        self.streaming = streaming
        self.folder = folder
        self.num_shards = num_shards
        self.max_parallelism = env.max_parallelism
        self.steps = linearize(plan)
        self.codes = ChannelCodes(self.steps)
        self.branches: list[Branch] = []
        self.watermarks: list[int] = []

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
        return Translation(self._merge(self.branches), self.steps, self.codes, self.watermarks)

    # -- steps -------------------------------------------------------------------------------------------------

    def _source(self, step: Step) -> None:
        t = step.transformation
        channel = (t.id, None)
        if channel not in self.codes.code:
            return
        rows = source_rows(self.spark, t.source, self.codes.code[channel], t.id, self.folder)  # type: ignore[attr-defined]
        chain = Chain()
        if isinstance(rows, ColumnarInput):
            chain.source = (channel, rows.as_)
            rows = rows.dataframe
        if rows.isStreaming != self.streaming:
            raise ValueError(
                "a plan mixes bounded and streaming sources; on Spark every source must be streaming "
                "(micro-batches, streaming files or DataFrames) or every source bounded"
            )
        self.branches.append(Branch(rows, {channel}, chain))

    def _row_local(self, step: Step) -> None:
        involved = [b for b in self.branches if b.channels & step.consumed]
        if len(involved) == 1:
            branch = involved[0]
        else:
            branch = Branch(
                self._merge(involved),
                set().union(*(b.channels for b in involved)),
                watermarked=any(b.watermarked for b in involved),
            )
            self.branches = [b for b in self.branches if b not in involved] + [branch]
        if step.kind == "timestamps":
            check_strategy_on_spark(step.transformation.spec)  # type: ignore[attr-defined]
            if branch.watermarked or branch.chain.has_timestamps:
                raise ValueError(
                    f"{step.transformation.name}: on Spark, a stream can get timestamps and watermarks only "
                    "once, before any keyed operator (Spark refuses to redefine a watermark)"
                )
            branch.chain.timestamp_sources = upstream_sources(self.plan, step)
        branch.chain.steps.append(step)
        branch.channels |= step.needed_outputs

    def _keyed(self, step: Step) -> None:
        watermarked = any(b.watermarked or b.chain.has_timestamps for b in self.branches)
        keyed = self._merge(self.branches, keyed=step)
        if self.streaming:
            processor = ShardProcessor(step, self.codes, self.num_shards, self.max_parallelism, watermarked)
            df = keyed.groupBy("shard").transformWithStateInPandas(
                processor, ROW_DDL, "Append", "EventTime" if watermarked else "ProcessingTime"
            )
        else:
            last = min(self.watermarks) if self.watermarks else LONG_MIN
            function = keyed_shard_function(
                step,
                self.codes,
                self.num_shards,
                self.max_parallelism,
                [LONG_MIN, last, LONG_MAX],
                int(time.time() * 1000),
            )
            df = keyed.groupBy("shard").applyInArrow(function, ROW_DDL)
        channels = set().union(*(b.channels for b in self.branches)) | step.needed_outputs
        self.branches = [Branch(df, channels, watermarked=watermarked)]

    # -- branches -----------------------------------------------------------------------------------------------

    def _merge(self, branches: list[Branch], keyed: Step | None = None) -> Any:
        frames = [self._flush(branch, keyed) for branch in branches]
        merged = frames[0]
        for frame in frames[1:]:
            merged = merged.unionByName(frame)
        return merged

    def _flush(self, branch: Branch, keyed: Step | None = None) -> Any:
        """The branch's DataFrame after its queued steps (and the keying for ``keyed``), watermark defined."""
        chain = branch.chain
        if not chain.steps and keyed is None and chain.source is None:
            return branch.df
        chain.keyed = keyed
        df = branch.df.mapInArrow(chain_function(chain, self.codes, self.num_shards, self.max_parallelism), chain.ddl())
        if chain.has_timestamps:
            column, marker = chain.carrier()
            if self.streaming:
                df = df.withColumn("wm_ts", F.timestamp_millis(F.col("wm"))).withWatermark("wm_ts", "0 seconds")
                # one CASE expression naming the watermark column: Spark cannot push it below withWatermark
                keep = F.when(F.col(column) == marker, F.lit(False)).otherwise(
                    F.col("wm_ts").isNull() | (F.col("wm_ts") < F.timestamp_millis(F.lit(END_MS)))
                )
                df = df.filter(keep).drop("wm", "wm_ts")
            else:
                df = df.cache()
                top = df.filter(F.col(column) == marker).agg(F.max("wm")).collect()[0][0]
                if top is not None:
                    self.watermarks.append(from_spark_watermark(int(top)))
                df = df.filter(F.col(column) != marker).drop("wm")
            branch.watermarked = True
        branch.df = df
        branch.chain = Chain()
        return df
