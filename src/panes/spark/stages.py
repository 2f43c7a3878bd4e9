"""How the Spark runner runs a plan, stage by stage, without a SparkSession (what ``panes explain`` shows).

The stages come from the steps the runner executes (``linear.linearize``) and follow the branch rules of
``translate.Translator``: every source starts a branch; row-local steps (stateless operators, a timestamps
step) queue on the branch holding the channels they read, branches merging by union when a step reads
several; a keyed step flushes every branch (its queued steps run fused in one ``mapInArrow`` call, which also
hashes each row's key to a shard), unions them, and runs by shard (``groupBy("shard")`` is the shuffle, then
``transformWithStateInPandas`` when streaming, ``applyInArrow`` when bounded). A keyed step has one shard per
parallel instance: its own parallelism, else the environment's, else the runner's default. In BATCH
execution (``panes.datastream.runtime_mode``) the plan runs as one batch job whose keyed steps read their
rows sorted by key and timestamp. After the last step the sinks are written by Spark tasks from the final
rows. ``tests/spark`` checks these stages against the DataFrame the
translator builds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from panes.datastream.execution import ExecutionConfig
from panes.datastream.plan import Channel, Plan, declared_source_type
from panes.datastream.runtime_mode import RuntimeExecutionMode, plan_runtime_mode
from panes.spark.linear import Step, after, linearize
from panes.spark.shard.hosts import columnar_plan


@dataclass(frozen=True)
class SparkStage:
    """One stage of the query.

    ``kind``: ``"source"`` (a source's rows enter; ``streaming`` when a streaming query reads it), ``"union"``
    (branches join before a row-local step reads them together), ``"python"`` (one fused ``mapInArrow`` call
    running ``steps`` in order; ``keying`` when it also hashes keys to shards for the keyed step next,
    ``unpacks`` when it reads a streaming keyed step's payloads, ``watermark`` when Spark's watermark is defined
    on its output), ``"shuffle"`` (rows exchanged by shard for the keyed step, ``branches`` inputs unioned),
    ``"keyed"`` (the keyed state step, one operator per shard), ``"sinks"`` (``steps`` written from the final
    rows).
    """

    kind: str
    steps: tuple[Step, ...] = ()
    keying: bool = False
    unpacks: bool = False
    watermark: bool = False
    branches: int = 1
    columnar: bool = False
    """A keyed window step run on Arrow columns (``panes.windowing.columnar``)."""
    python_panes: bool = False
    """A columnar window step whose panes a Python function evaluates (a ``ProcessWindowFunction``, a reduce or an
    ``AggregateFunction``): its elements are decoded for it; otherwise the step is vectorised throughout."""
    streaming: bool = True
    """A keyed step of a streaming query (``transformWithStateInPandas``) or of a batch job (``applyInArrow``)."""
    batch: bool = False
    """A keyed step in BATCH execution (its rows sorted by key and timestamp, one key at a time)."""
    shards: int | None = None
    """A keyed step's shards (parallel instances); ``None``: the runner's default (``SparkRunner.num_shards``,
    or twice ``spark.sql.shuffle.partitions``)."""


@dataclass
class _Branch:
    channels: set[Channel]
    queued: list[Step] = field(default_factory=list)
    packed: bool = False


def is_streaming(plan: Plan) -> bool:
    """Whether the Spark runner runs ``plan`` as a streaming query (else as one batch job)."""
    from panes.spark.sources import reads_as_stream

    return any(reads_as_stream(t.source) for t in plan if t.kind == "source")  # type: ignore[attr-defined]


def is_batch(plan: Plan, config: ExecutionConfig) -> bool:
    """Whether the environment's runtime mode, resolved over ``plan``'s sources, is BATCH (as the runner does)."""
    return plan_runtime_mode(plan, config.runtime_mode) is RuntimeExecutionMode.BATCH


def spark_stages(plan: Plan, streaming: bool | None = None, config: ExecutionConfig | None = None) -> list[SparkStage]:
    """The stages of ``plan`` on Spark, in the order the query runs them. ``config`` (the environment's) gives
    the runtime mode and default parallelism; ``streaming`` defaults to :func:`is_streaming` (a BATCH plan is
    never streaming)."""
    config = config or ExecutionConfig()
    batch = is_batch(plan, config)
    if streaming is None:
        streaming = is_streaming(plan) and not batch
    return _Stages(linearize(plan, declared_source_type), streaming, batch, config.parallelism).build()


class _Stages:
    def __init__(self, steps: list[Step], streaming: bool, batch: bool, parallelism: int | None) -> None:
        self.steps = steps
        self.streaming = streaming
        self.batch = batch
        self.parallelism = parallelism
        self.stages: list[SparkStage] = []
        self.branches: list[_Branch] = []

    def build(self) -> list[SparkStage]:
        for step in self.steps:
            if step.kind == "source":
                channel = (step.transformation.id, None)
                if channel in step.needed_outputs:
                    self.stages.append(SparkStage("source", (step,), streaming=self.streaming))
                    self.branches.append(_Branch({channel}))
            elif step.kind in ("stateless", "timestamps"):
                self._row_local(step)
            elif step.kind == "keyed":
                self._keyed(step)
        last = self.branches[0] if len(self.branches) == 1 else None
        if not (last is not None and last.packed and not last.queued):
            # (a single branch of payloads is unpacked by the sink writer itself)
            for branch in self.branches:
                self._flush(branch)
            if len(self.branches) > 1:
                self.stages.append(SparkStage("union", branches=len(self.branches)))
        sinks = tuple(step for step in self.steps if step.kind == "sink")
        self.stages.append(SparkStage("sinks", sinks))
        return self.stages

    def _row_local(self, step: Step) -> None:
        involved = [b for b in self.branches if b.channels & step.consumed]
        if len(involved) == 1:
            branch = involved[0]
        else:
            for b in involved:
                self._flush(b)
            self.stages.append(SparkStage("union", branches=len(involved)))
            branch = _Branch(set().union(*(b.channels for b in involved)))
            self.branches = [b for b in self.branches if b not in involved] + [branch]
        branch.queued.append(step)
        branch.channels = after(branch.channels, step)

    def _keyed(self, step: Step) -> None:
        for branch in self.branches:
            self._flush(branch, keying=True)
        shards = step.transformation.parallelism or self.parallelism
        self.stages.append(SparkStage("shuffle", (step,), branches=len(self.branches), shards=shards))
        plan = columnar_plan(step)
        self.stages.append(
            SparkStage(
                "keyed",
                (step,),
                columnar=plan is not None,
                python_panes=plan is not None and plan.process is not None,
                streaming=self.streaming,
                batch=self.batch,
                shards=shards,
            )
        )
        channels = after(set().union(*(b.channels for b in self.branches)), step)
        self.branches = [_Branch(channels, packed=self.streaming)]

    def _flush(self, branch: _Branch, keying: bool = False) -> None:
        if not branch.queued and not keying:
            return
        watermark = any(s.kind == "timestamps" for s in branch.queued)
        self.stages.append(
            SparkStage("python", tuple(branch.queued), keying=keying, unpacks=branch.packed, watermark=watermark)
        )
        branch.queued = []
        branch.packed = False


def describe_stage(stage: SparkStage) -> str:
    """One line saying how ``stage`` runs on Spark."""
    names = ", ".join(s.transformation.name for s in stage.steps)
    if stage.kind == "source":
        return f"read {names}" + "".join(source_notes(stage))
    if stage.kind == "union":
        return f"union of {stage.branches} branches (unionByName)"
    if stage.kind == "python":
        parts = []
        if stage.unpacks:
            parts.append("unpack the keyed step's results")
        if stage.steps:
            parts.append(f"run {names}" + (" fused" if len(stage.steps) > 1 else ""))
        if stage.keying:
            parts.append("hash each key to a shard")
        text = "Python mapInArrow: " + ", then ".join(parts)
        if stage.watermark:
            text += "; then Spark's withWatermark on the rated rows"
        return text
    if stage.kind == "shuffle":
        source = f"{stage.branches} branches unioned, " if stage.branches > 1 else ""
        shards = f"{stage.shards} shards" if stage.shards else "the runner's default number of shards"
        return f"shuffle: {source}rows exchanged by shard (groupBy shard, {shards}) for {names}"
    if stage.kind == "keyed":
        if stage.python_panes:
            how = "on Arrow columns, the user's Python function called per pane"
        elif stage.columnar:
            how = "on Arrow columns (vectorised)"
        else:
            how = "element by element (the operator per row)"
        if stage.streaming:
            return f"keyed state step {names}: transformWithStateInPandas per shard, state in RocksDB, {how}"
        if stage.batch:
            return f"keyed step {names}: applyInArrow per shard, rows sorted by key and timestamp (BATCH), {how}"
        return f"keyed step {names}: applyInArrow per shard over the whole input, {how}"
    return f"write the sinks from the final rows: {names}" + "".join(sink_notes(stage))


def source_notes(stage: SparkStage) -> list[str]:
    """What :func:`describe_stage` adds for a source a streaming query reads in panes' own way (in-memory
    micro-batches: ``micro_batch_files``)."""
    from panes.datastream.sources import MicroBatchSource

    notes = []
    for step in stage.steps:
        if stage.streaming and isinstance(getattr(step.transformation, "source", None), MicroBatchSource):
            from panes.spark.micro_batch_files import explained

            notes.append(f": {explained()}")
    return notes


def sink_notes(stage: SparkStage) -> list[str]:
    """What :func:`describe_stage` adds for sinks that Spark tasks write in their own way (the JDBC sink)."""
    from panes.connectors.jdbc import JdbcSink

    notes = []
    for step in stage.steps:
        sink = getattr(step.transformation, "sink", None)
        if isinstance(sink, JdbcSink):
            from panes.spark.jdbc_sink import describe

            notes.append(f"; {step.transformation.name}: {describe(sink, step.transformation.parallelism or 1)}")
    return notes


def describe_stages(plan: Plan, config: ExecutionConfig | None = None) -> list[str]:
    """:func:`describe_stage` for every stage of ``plan``."""
    return [describe_stage(stage) for stage in spark_stages(plan, config=config)]
