"""``SparkRunner``: executes plans on Spark, streaming (Structured Streaming) or bounded (a batch job).

Translation (see ``linear``, ``fused``, ``keying``, ``processor``): the sources become DataFrames of panes rows
(``layout``); each step transforms them in order — stateless operators with ``mapInArrow``; timestamps steps
with ``mapInArrow`` plus ``withWatermark`` on a shifted column of Flink-formula watermarks (dropped again
before any keyed step, so Spark never drops late rows); keyed operators by hashing keys to shards and
hosting one operator per shard (``transformWithStateInPandas`` in streaming, ``applyInArrow`` when
bounded). The sinks are written from the final rows by Spark tasks (``sinks``), per micro-batch through
``foreachBatch``; ``to_dataframe`` hands the final rows of one stream to the caller as a DataFrame instead.

A bounded run processes all input at watermark ``LONG_MIN``, then advances to ``LONG_MAX`` (Flink's end of
input, which Flink forwards before a generator's last periodic watermark): bounded input is one step, as on
the local runner (``docs/local-runner.md``, "Steps").

The environment's runtime mode decides (``panes.datastream.runtime_mode``): STREAMING runs a plan with a
streaming source as a streaming query and any other plan as the bounded run above; BATCH (or AUTOMATIC over
bounded sources) runs a bounded batch job, explicit micro-batches read as one collection, whose keyed steps
take their shard's rows sorted by key and timestamp, one key at a time (``host.StepHost.process_sorted``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from panes.datastream.execution import ExecutionConfig, JobExecutionResult
from panes.datastream.fingerprint import operator_uids
from panes.datastream.plan import Plan, SinkTransformation, Transformation
from panes.datastream.runtime_mode import RuntimeExecutionMode, plan_runtime_mode
from panes.datastream.sources import DataFrameSource
from panes.operators.metrics import OperatorMetrics
from panes.spark import crash_hook
from panes.spark.direct import PanesFiles, options, writes_directly
from panes.spark.end_again import EndDeliveries, end_deliveries, mark
from panes.spark.failures import carrying, interruptible, was_interrupted, with_carried
from panes.spark.kafka.sink import run_name
from panes.spark.metrics import BatchProgress, JobMetrics, ran_micro_batch
from panes.spark.micro_batch_files import NOT_STARTED, Reading, folder_name, query_reading
from panes.spark.rescaling import (
    check_committed,
    control_folder,
    generation_of,
    prepare_control_folder,
    rescales,
    shards_changed,
    write_pieces,
)
from panes.spark.restarts import (
    check_checkpoint,
    element_by_element_steps,
    query_fingerprint,
    restored_fingerprint,
    store_fingerprint,
)
from panes.spark.session import (
    create_session,
    driver_path,
    is_connect,
    observed_metrics_kept,
    register_data_source,
    warm_python_workers,
)
from panes.spark.sinks import SinkTarget, SinkWriter
from panes.spark.sources import dataframe_type, reads_as_stream
from panes.spark.translate import Translation, Translator, shard_count
from panes.types import RecordType


class DataFrameOutput:
    """The sink standing for the stream ``to_dataframe`` returns (never written by panes)."""

    def __init__(self, schema: RecordType | None) -> None:
        self.schema = schema

    def __repr__(self) -> str:
        return "DataFrame"


class JobStopped(KeyboardInterrupt):
    """A streaming job stopped by an interruption (Ctrl-C, SIGTERM): its state and progress stay in
    ``checkpoint``, from which a restart resumes (``SparkRunner(checkpoint_location=checkpoint)``, ``panes run
    --checkpoint``). ``last_batch``: the last micro-batch Spark completed (``None``: none yet)."""

    def __init__(self, checkpoint: str, last_batch: int | None) -> None:
        where = "before its first micro-batch" if last_batch is None else f"after micro-batch {last_batch}"
        super().__init__(
            f"stopped {where}; its state is kept in the checkpoint {checkpoint}: resume with "
            f"SparkRunner(checkpoint_location={checkpoint!r}) or panes run --checkpoint {checkpoint}"
        )
        self.checkpoint = checkpoint
        self.last_batch = last_batch


class SparkJob:
    """A running streaming query (``query``) and how to wait for or stop it.

    Over Spark Connect the driver sinks (list, print, function, memory) receive their records on this side
    when the job is waited for (``process_all_available``, ``await_termination``) or stopped."""

    def __init__(
        self,
        query: Any,
        checkpoint: str,
        owns_checkpoint: bool,
        spark: Any = None,
        staged: SinkWriter | None = None,
        on_progress: Callable[[BatchProgress], None] | None = None,
    ) -> None:
        self.query = query
        self.checkpoint = checkpoint
        self._owns_checkpoint = owns_checkpoint
        self._spark = spark
        self._staged = staged
        self.writer: SinkWriter | None = None
        """The writer of the job's sinks (``execute`` completes its outputs when the job ends)."""
        self._delivered = -1
        self.observed = JobMetrics({})
        """Counters of the steps (see ``panes.spark.metrics``), from the progress read so far."""
        self._counted: set[int] = set()
        self.on_progress = on_progress
        """Called with each micro-batch's :class:`BatchProgress` once, when :meth:`progress` first sees it."""
        self.micro_batch_readings: dict[str, Reading] = {}
        """How the query reads each ``from_micro_batches`` source (its operator uid -> reading), and why
        (``panes.spark.micro_batch_files``)."""

    def progress(self) -> list[Any]:
        """The query's progress so far (Spark's, one entry per micro-batch it ran, ``ran_micro_batch``; its
        event-time watermark is shifted, see ``panes.spark.watermarks``), with panes' counters added to
        :attr:`observed`."""
        progress = sorted(filter(ran_micro_batch, self.query.recentProgress), key=lambda p: p["batchId"])
        for entry in progress:
            if entry["batchId"] not in self._counted:
                self._counted.add(entry["batchId"])
                batch = self.observed.add(entry)
                if self.on_progress is not None:
                    self.on_progress(batch)
        return progress

    def metrics(self) -> dict[str, OperatorMetrics]:
        """One ``OperatorMetrics`` per step with an operator, by step name: the counters summed over the
        micro-batches that completed so far, and the gauges after the last of them (read from the query's
        progress, which Spark keeps for its last ``spark.sql.streaming.numRecentProgressUpdates`` batches,
        100 by default: poll at least that often to miss none)."""
        self.progress()
        return self.observed.operators()

    def deliver(self) -> None:
        """Hand the driver sinks what batches committed since the last call staged (Spark Connect only)."""
        if self._staged is not None:
            self._delivered = self._staged.deliver_staged(self._spark, self._delivered)

    @with_carried
    def process_all_available(self) -> None:
        self.query.processAllAvailable()
        self.deliver()

    @with_carried
    def await_termination(self, timeout: float | None = None) -> bool | None:
        if self._staged is None or timeout is not None:
            result: bool | None = self.query.awaitTermination(timeout)
            self.deliver()
            return result
        # deliver as batches commit, then what is left
        while not self.query.awaitTermination(1.0):
            self.deliver()
        self.deliver()
        return None

    def stop(self) -> None:
        self.query.stop()
        self.deliver()

    def cleanup(self) -> None:
        """Remove a temporary checkpoint (one the runner made); a checkpoint given to the runner stays."""
        if self._owns_checkpoint:
            shutil.rmtree(self.checkpoint, ignore_errors=True)

    def interrupted(self) -> JobStopped:
        """Stop the query after an interruption (Ctrl-C, SIGTERM) and keep its checkpoint, a temporary one
        too: the error to raise says where the job stopped and how to resume it."""
        with contextlib.suppress(Exception):  # the query may be stopping already
            self.query.stop()
        with contextlib.suppress(Exception):
            self.deliver()
        ran = filter(ran_micro_batch, self.query.recentProgress) if self.query is not None else []
        batches = [p["batchId"] for p in ran]
        self._owns_checkpoint = False
        return JobStopped(self.checkpoint, max(batches) if batches else None)

    @property
    def recent_progress(self) -> list[Any]:
        return list(self.query.recentProgress)


class SparkRunner:
    """Runs plans on Spark.

    - ``spark``: an existing SparkSession; otherwise one is created (``master``, default ``local[2]``, and
      ``config``).
    - ``checkpoint_location``: where a streaming query keeps its state and progress (a fresh temporary
      folder, removed afterwards, when not given; give one to restart a query where it stopped).
    - ``num_shards``: how many shards keyed state is split into (default: twice
      ``spark.sql.shuffle.partitions``) when neither the keyed operator nor the environment sets a
      parallelism; each shard is one Python call per micro-batch hosting the operator (one instance of its
      function) for all its keys, so fewer shards cost less per batch and more shards spread state and work
      wider. A keyed operator whose parallelism is set (``set_parallelism`` on it or on the environment) has
      that many shards, one per Flink subtask: shard ``i`` holds the key groups Flink's subtask ``i`` owns.
    - ``trigger``: ``"available_now"`` (process what is there, then stop; the default when every source is
      finite: micro-batches of ``from_micro_batches``), ``"once"`` (one micro-batch of what is there, then
      stop), ``"continuous"`` (run until stopped: Spark's default trigger; the default over a streaming file
      or DataFrame source, which does not end) or a processing-time interval such as ``"5 seconds"``. A query
      stopped over a source that does not end keeps its open windows and timers in its checkpoint: stopping
      such a query (``available_now``, ``once``) needs a ``checkpoint_location`` to resume from
      (``ValueError`` otherwise), and an interrupted one (Ctrl-C, SIGTERM) keeps even a temporary checkpoint
      and raises :class:`JobStopped`, saying where.
    - ``on_progress``: called on the driver with each micro-batch's ``BatchProgress`` (rows, counters, the
      watermark in real epoch ms) while ``execute`` waits for a streaming job (polled about once a second).
      Without one, ``execute`` shows the live table of ``panes run`` (``panes.live``) when standard error
      is a terminal, unless ``quiet``.
    - ``shard_keepers``: a streaming keyed step keeps each shard's live operator in a shard keeper, one
      process per executor slot, so that it stays alive between micro-batches whichever Python worker Spark
      picks (``panes.spark.keeper``; Linux). ``False`` keeps it in the Python worker that ran its last call,
      which rebuilds it from the state store whenever the next call lands in another worker.
    """

    def __init__(
        self,
        spark: Any = None,
        *,
        master: str = "local[2]",
        config: dict[str, str] | None = None,
        checkpoint_location: str | None = None,
        num_shards: int | None = None,
        trigger: str | None = None,
        query_name: str | None = None,
        on_progress: Callable[[BatchProgress], None] | None = None,
        shard_keepers: bool = True,
        quiet: bool = False,
    ) -> None:
        if num_shards is not None and num_shards <= 0:
            raise ValueError(f"num_shards must be > 0 (got {num_shards})")
        self._spark = spark
        self.master = master
        self.config = config
        self.checkpoint_location = checkpoint_location
        self.num_shards = num_shards
        self.trigger = trigger
        self.query_name = query_name
        self.on_progress = on_progress
        self.shard_keepers = shard_keepers
        self.quiet = quiet

    @property
    def spark(self) -> Any:
        if self._spark is None:
            self._spark = create_session(self.master, config=self.config)
        return self._spark

    def source_type(self, source: Any) -> RecordType | None:
        """The record type of a DataFrame source's values, read from its schema (``None`` for other sources, or
        when panes cannot read a column: running the job then says which)."""
        if not isinstance(source, DataFrameSource):
            return None
        try:
            return dataframe_type(source.dataframe, source.as_)
        except TypeError:
            return None

    def default_parallelism(self) -> int:
        """The number of shards of a keyed step whose parallelism is not set (``num_shards``, or twice
        ``spark.sql.shuffle.partitions``)."""
        return self.num_shards or 2 * int(self.spark.conf.get("spark.sql.shuffle.partitions"))

    def _translate(
        self,
        plan: Plan,
        config: ExecutionConfig,
        streaming: bool,
        batch: bool = False,
        num_shards: int | None = None,
        control: str | None = None,
        generation: int = 0,
        element_by_element: frozenset[str] = frozenset(),
        micro_batches: Reading = NOT_STARTED,
    ) -> Translation:
        warm_python_workers(self.spark)  # while the driver plans, the executors start their Python workers
        shards = num_shards or self.default_parallelism()
        finite = not streaming or self._trigger(plan) == "available_now"
        translator = Translator(
            self.spark,
            plan,
            config,
            streaming,
            shards,
            finite,
            batch,
            self.shard_keepers,
            control,
            generation,
            element_by_element,
            micro_batches,
        )
        return translator.translate()

    def runtime_mode(self, plan: Plan, config: ExecutionConfig) -> RuntimeExecutionMode:
        """``STREAMING`` or ``BATCH``: the environment's mode resolved over the plan's sources
        (``runtime_mode.plan_runtime_mode``)."""
        return plan_runtime_mode(plan, config.runtime_mode)

    def _trigger(self, plan: Plan) -> str:
        return self.trigger or ("available_now" if self._finite(plan) else "continuous")

    # -- execution ----------------------------------------------------------------------------------------------

    @staticmethod
    def _is_streaming(plan: Plan) -> bool:
        """Whether ``plan`` runs as a streaming query: some source of it Spark reads as a stream."""
        return any(reads_as_stream(t.source) for t in plan if t.kind == "source")  # type: ignore[attr-defined]

    @with_carried
    def run_bounded(self, plan: Plan, config: ExecutionConfig, batch: bool = False) -> JobMetrics:
        """Run a plan of bounded sources as one Spark batch job and write its sinks (in BATCH execution with
        ``batch``); returns the steps' counters (Spark's ``Observation`` of each Python stage, read once the job
        ran)."""
        translation = self._translate(plan, config, streaming=False, batch=batch)
        writer = SinkWriter(translation.steps, translation.codes, None, session=self.spark)
        metrics = JobMetrics(translation.metrics_steps, translation.result_steps, translation.counted_sources)
        with observed_metrics_kept(self.spark):
            written = writer.write(translation.rows(), 0)
        writer.complete_outputs(self.spark)
        if written:
            metrics.add_observed({observation._name: observation.get for observation in translation.observations})
        return metrics

    def start(self, plan: Plan, config: ExecutionConfig, job_name: str = "panes job") -> SparkJob:
        """Start ``plan`` as a streaming query (see the class docstring for triggers and checkpoints).

        On a checkpoint location of an earlier run, the job's fingerprint must fit the stored one (else
        ``IncompatibleCheckpointError``, before anything starts; see ``restarts``); ``num_shards`` not given is
        the checkpoint's."""
        refuse_local_only(plan)
        query_name = self._query_name(job_name)
        self._refuse_running_name(query_name, job_name)
        owns = self.checkpoint_location is None
        for source in (t for t in plan if t.kind == "source"):
            check = getattr(source.source, "check_readable", None)  # type: ignore[attr-defined]
            if check is not None:
                check()  # a missing input fails first, as on the local runner
        endless = self.endless_sources(plan)
        if owns and endless and self._trigger(plan) in ("available_now", "once"):
            raise ValueError(
                f"trigger={self._trigger(plan)!r} stops the job when the input read so far is processed, but "
                f"{', '.join(endless)} does not end: its open windows and timers would be lost with the temporary "
                "checkpoint. Give checkpoint_location= (panes run --checkpoint) to keep them and resume later, "
                "or read the files once (from_files(..., streaming=False)), which ends with the final watermark"
            )
        checkpoint = self.checkpoint_location or tempfile.mkdtemp(prefix="panes-checkpoint-")
        stored = None if owns else restored_fingerprint(self.spark, checkpoint)
        shards = self.default_parallelism()
        if stored is not None and self.num_shards is None and stored.settings.get("num_shards", "").isdigit():
            shards = int(stored.settings["num_shards"])
        prepare_control_folder(self.spark, checkpoint)
        generation = generation_of(stored)
        changed = shards_changed(stored, plan, lambda t: shard_count(t, config.parallelism, shards))
        new_generation = generation + 1 if changed else generation
        # in-memory micro-batches as files in the checkpoint where this process can write them
        reading = query_reading(self.spark, checkpoint, self._trigger(plan))
        local = driver_path(self.spark, checkpoint)  # None: the end-of-input logs cannot be read here
        ends = EndDeliveries(1) if owns else self._end_deliveries(plan, local)
        translation = self._translate(
            plan,
            config,
            True,
            num_shards=shards,
            control=control_folder(checkpoint),
            generation=new_generation,
            # a window whose state the checkpoint holds element by element stays so (a newer panes may run it
            # on columns): it goes on from that state
            element_by_element=element_by_element_steps(stored),
            micro_batches=replace(reading, ends=ends.count),
        )
        own_fingerprint = query_fingerprint(plan, translation, shards, config.max_parallelism, new_generation)
        check_checkpoint(checkpoint, stored, own_fingerprint)
        if changed:
            # each key's state to its new shard, through the query's control input (``rescaling``)
            uids = operator_uids(plan)
            keyed = [
                (uids[step.transformation.id], step, translation.shards[step.transformation.id])
                for step in translation.steps
                if step.index in translation.processors
            ]
            check_committed(self.spark, checkpoint)
            definitions = {index: p.definition for index, p in translation.processors.items()}
            write_pieces(self.spark, checkpoint, rescales(stored, keyed), definitions, generation)
        folder = os.path.join(checkpoint, "panes")
        staged = os.path.join(folder, "driver-sinks") if is_connect(self.spark) else None
        writer = SinkWriter(
            translation.steps,
            translation.codes,
            os.path.join(folder, "sink-schemas"),
            staged,
            None if staged else self.spark,
        )

        writer.run = run_name(checkpoint)
        if writes_directly(writer.targets):
            # every sink is a file the query's own tasks can write: one job per micro-batch
            register_data_source(self.spark, PanesFiles)
            stream = translation.df.writeStream.format("panes_files").options(**options(writer.targets, writer.codes))
            # (the writer unpacks the last keyed step's payloads itself: no extra Python stage)
            staged = None
        else:

            @carrying
            def write_batch(batch: Any, batch_id: int) -> None:
                writer.write(batch, batch_id, before_commit=lambda: crash_hook.reached("state", batch_id))

            stream = translation.rows().writeStream.foreachBatch(write_batch)
        stream = stream.option("checkpointLocation", checkpoint)
        if query_name is not None:
            stream = stream.queryName(query_name)
        trigger = self._trigger(plan)
        if trigger == "available_now":
            stream = stream.trigger(availableNow=True)
        elif trigger == "once":
            stream = stream.trigger(once=True)
        elif trigger != "continuous":
            stream = stream.trigger(processingTime=trigger)
        # built and checked; stored before Spark can commit a batch of it (see ``restarts``), also in a temporary
        # checkpoint, which an interrupted job keeps to resume from
        store_fingerprint(self.spark, checkpoint, own_fingerprint)
        if local is not None:
            mark(local, ends)
        translation.write_micro_batch_files()
        job = SparkJob(stream.start(), checkpoint, owns, self.spark, writer if staged else None, self.on_progress)
        job.writer = writer
        job.observed = JobMetrics(
            translation.metrics_steps,
            translation.result_steps,
            translation.counted_sources,
            micro_batch_controls=translation.micro_batch_controls,
        )
        job.micro_batch_readings = translation.micro_batch_readings
        return job

    def _end_deliveries(self, plan: Plan, checkpoint: str | None) -> EndDeliveries:
        """How many times the micro-batch sources of ``plan`` deliver their end of input on ``checkpoint`` (a path
        of this machine; ``None``: elsewhere, once): once more
        on a restart that found the micro-batch after the last one lost (``end_again``); a plan with another
        source, or a micro-batch source without its end of input, delivers it as given."""
        from panes.datastream.sources import MicroBatchSource

        sources = [t for t in plan if t.kind == "source"]
        if not self._finite(plan) or not all(t.source.end_of_input for t in sources):  # type: ignore[attr-defined]
            return EndDeliveries(1)
        uids = operator_uids(plan)
        lists = {
            folder_name(uids[t.id]): len(t.source.batches)  # type: ignore[attr-defined]
            for t in sources
            if isinstance(t.source, MicroBatchSource)  # type: ignore[attr-defined]
        }
        return end_deliveries(checkpoint, lists)

    def _query_name(self, job_name: str) -> str | None:
        """The Spark query's name: ``query_name``, else the job's name, spaces made underscores."""
        name = self.query_name or job_name
        return name.replace(" ", "_") if name else None

    def _refuse_running_name(self, query_name: str | None, job_name: str) -> None:
        """Raise ``ValueError`` when a query named ``query_name`` runs in this session: Spark runs one query per
        name at a time (and would refuse it only after panes prepared the checkpoint)."""
        if query_name is None:
            return
        running = [query for query in self.spark.streams.active if query.name == query_name]
        if running:
            named = f"job named {(self.query_name or job_name)!r}"
            raise ValueError(
                f"a {named} is already running in this Spark session (Spark query {query_name!r}, id "
                f"{running[0].id}); Spark runs one query of a name at a time: give this job another name "
                "(env.execute('name'), or SparkRunner(query_name='name')) or stop the running one first"
            )

    def to_dataframe(self, transformation: Transformation, config: ExecutionConfig, schema: RecordType | None) -> Any:
        """The DataFrame of the stream produced by ``transformation`` (see ``DataStream.to_dataframe``)."""
        sink = SinkTransformation(name="DataFrame", inputs=(transformation,), sink=DataFrameOutput(schema))
        plan = Plan((sink,))
        translation = self._translate(plan, config, streaming=self._is_streaming(plan))
        writer = SinkWriter(translation.steps, translation.codes, None)
        target: SinkTarget = writer.targets[0]
        if target.schema is None:
            raise ValueError(
                "to_dataframe needs the stream's columns: declare output_type on the step that makes its values "
                "(map(..., output_type=...), process(..., output_type=...)) or pass schema= (a Spark DDL string "
                "such as 'user STRING, n BIGINT', a pyarrow schema or a Types type)"
            )
        values, _ = writer.values(translation.rows(), target)
        return values

    def _terminal_view(self) -> Any:
        """The live table ``execute`` shows on a terminal (``None``: ``on_progress`` given, ``quiet``, or standard
        error is not a terminal)."""
        if self.on_progress is not None or self.quiet or not sys.stderr.isatty():
            return None
        from panes.live import LiveView

        return LiveView(sys.stderr)

    def _finite(self, plan: Plan) -> bool:
        """Whether every source of ``plan`` ends when the query has read what there is: micro-batches."""
        return not self.endless_sources(plan)

    @staticmethod
    def endless_sources(plan: Plan) -> list[str]:
        """The sources of ``plan`` that do not end when it runs as a streaming query: streaming files and
        DataFrames (a bounded one is not read by a streaming query), and everything but micro-batches. None for
        a plan of bounded sources, which runs as one Spark batch job and ends."""
        from panes.datastream.sources import MicroBatchSource

        if not SparkRunner._is_streaming(plan):
            return []
        return [t.name for t in plan if t.kind == "source" and not isinstance(t.source, MicroBatchSource)]  # type: ignore[attr-defined]

    def execute(self, plan: Plan, config: ExecutionConfig, job_name: str) -> JobExecutionResult:
        refuse_local_only(plan)
        started = time.monotonic()
        batch = self.runtime_mode(plan, config) is RuntimeExecutionMode.BATCH
        if batch or not self._is_streaming(plan):
            counted = self.run_bounded(plan, config, batch=batch)
            details: dict[str, Any] = {
                "mode": "batch" if batch else "bounded",
                "metrics": counted.as_dict(),
                "source_errors": counted.source_errors(),
            }
            elapsed = int((time.monotonic() - started) * 1000)
            return JobExecutionResult(job_name, elapsed, details, counted.operators())
        job = self.start(plan, config, job_name)
        view = self._terminal_view()
        if view is not None:
            job.on_progress = view
        try:
            with interruptible():
                try:
                    with view or contextlib.nullcontext():
                        if job.on_progress is None:
                            job.await_termination()
                        else:
                            while not job.await_termination(1.0):
                                job.progress()
                            job.progress()
                except BaseException as error:
                    if was_interrupted(error):
                        raise job.interrupted() from None
                    raise
            if job.writer is not None:
                job.writer.complete_outputs(self.spark)
        finally:
            job.cleanup()
        progress = job.progress()
        details = {
            "mode": "streaming",
            "batches": len(progress),
            "progress": [json.loads(p.json) if hasattr(p, "json") else p for p in progress],
            "metrics": job.observed.as_dict(),
            "source_errors": job.observed.source_errors(),
            "micro_batch_sources": {uid: reading.describe() for uid, reading in job.micro_batch_readings.items()},
        }
        elapsed = int((time.monotonic() - started) * 1000)
        return JobExecutionResult(job_name, elapsed, details, job.observed.operators())


def refuse_local_only(plan: Plan) -> None:
    """Raise ``ValueError`` before anything starts when a source or sink of ``plan`` runs on the local runner only:
    one whose ``local_runner_only`` attribute says why (none does today; a connector added to the local runner first
    says so there)."""
    for transformation in plan:
        item = getattr(transformation, "source", None) or getattr(transformation, "sink", None)
        reason = getattr(item, "local_runner_only", None)
        if reason:
            raise ValueError(f"step {transformation.name!r}: {reason}")
