"""``LocalRunner``: executes plans in this process (the reference every other runner is compared with)."""

from __future__ import annotations

import time
from typing import Any

from panes.datastream.execution import ExecutionConfig, JobExecutionResult
from panes.datastream.plan import Plan, SourceTransformation
from panes.datastream.runtime_mode import RuntimeExecutionMode, resolve_runtime_mode
from panes.datastream.sources import MicroBatchSource, Source
from panes.garbage import fewer_collections
from panes.local.clock import SteppingClock
from panes.local.job import LocalJob, OperatorHook, check_advance
from panes.timers.clock import ManualProcessingTimeService, ProcessingTimeService, SystemProcessingTimeService


class LocalRunner:
    """Runs a plan element by element.

    ``clock`` is the processing-time clock, which drives periodic watermarks and processing-time timers
    (``docs/local-runner.md`` says which watermarks each clock produces):

    - ``"auto"`` (the default): ``"manual"`` when a source gives its micro-batches' processing times
      (``from_micro_batches(..., processing_times=...)``, which then set the clock); else ``"stepping"`` when
      every source is bounded, so a job over bounded input gives
      the same output on every run (as Flink's bounded execution, it does not depend on the wall clock), and
      ``"system"`` otherwise;
    - ``"stepping"``: starts at 0 and advances ``step`` ms at a time (``step`` defaults to the environment's
      ``auto_watermark_interval``, so periodic watermarks follow each advance), where ``advance`` says;
    - ``"system"``: the wall clock, as Flink's streaming execution (output may differ from run to run);
    - ``"manual"``: moves only through ``LocalJob.advance_processing_time``;
    - or a clock object (``get_current_processing_time()``, and ``tick()`` to move after each element).

    ``advance`` says when the stepping clock moves: ``"per_step"`` (the default) where a step of the input ends,
    which is between the lists of ``from_micro_batches`` (a collection, a file source or a generator is one
    step, so over them the watermark moves only at the end of the input): the same watermarks the Spark runner
    gives, whose watermark moves between micro-batches, and what PyFlink gives on small bounded inputs;
    ``"per_element"``: after every source element, a watermark after every element (Flink's streaming
    execution with a watermark interval shorter than the time between elements). Other clocks ignore it.
    Raises ``ValueError`` for another value.

    ``runs`` (default ``True``): a job whose source, timestamps and window have the usual shape reads runs of
    elements and hands each run to the window at once, with the output of element by element
    (``panes.local.runs``); ``False`` processes every element alone (the reference the tests compare with).

    ``max_records`` bounds how many elements ``execute`` reads (required for unbounded sources). While
    ``execute`` runs the job, Python's garbage collector runs less often (``panes.garbage.fewer_collections``;
    the caller's thresholds come back after it).

    The environment's runtime mode decides how the job runs (``panes.datastream.runtime_mode``); in BATCH
    execution processing time does not move and keyed operators take sorted inputs (``panes.local.job``).

    ``operator_hook`` is called with every operator instance the runner creates, ``(transformation,
    subtask_index, operator)``, after ``setup`` and before ``open``: the place to attach an observer (a
    ``WindowObserver`` on window operators: ``panes.timeline`` records its pictures so). ``None`` (the default)
    costs nothing.
    """

    def __init__(
        self,
        clock: str | ProcessingTimeService = "auto",
        step: int | None = None,
        max_records: int | None = None,
        operator_hook: OperatorHook | None = None,
        advance: str = "per_step",
        runs: bool = True,
    ) -> None:
        check_advance(advance)
        if isinstance(clock, str) and clock not in CLOCKS:
            raise ValueError(f"unknown clock {clock!r}: use one of {', '.join(map(repr, CLOCKS))} or a clock object")
        if operator_hook is not None and not callable(operator_hook):
            raise TypeError(
                f"operator_hook must be callable (transformation, subtask_index, operator), not {operator_hook!r}"
            )
        self.clock_spec = clock
        self.step = step
        self.max_records = max_records
        self.operator_hook = operator_hook
        self.advance = advance
        self.runs = runs

    def clock_for(self, plan: Plan, config: ExecutionConfig) -> ProcessingTimeService:
        """The clock a job of ``plan`` runs on (see the class docstring)."""
        spec = self.clock_spec
        if not isinstance(spec, str):
            return spec
        if spec == "auto":
            if _timed_sources(plan):
                return ManualProcessingTimeService()
            spec = "system" if _unbounded_sources(plan) else "stepping"
        if spec == "system":
            return SystemProcessingTimeService()
        if spec == "manual":
            return ManualProcessingTimeService()
        return SteppingClock(self.step if self.step is not None else config.auto_watermark_interval)

    def start(self, plan: Plan, config: ExecutionConfig, snapshot: bytes | None = None) -> LocalJob:
        """A job ready to step (restored from ``snapshot`` when given)."""
        foreign = [t.name for t in plan if isinstance(t, SourceTransformation) and not isinstance(t.source, Source)]
        if foreign:
            raise ValueError(
                f"sources {foreign} cannot be read in this process (a Spark DataFrame needs the Spark runner: "
                "StreamEnvironment('spark'))"
            )
        mode = resolve_runtime_mode(config.runtime_mode, _unbounded_sources(plan))
        return LocalJob(
            plan,
            self.clock_for(plan, config),
            parallelism=config.parallelism or 1,
            max_parallelism=config.max_parallelism,
            snapshot=snapshot,
            batch=mode is RuntimeExecutionMode.BATCH,
            operator_hook=self.operator_hook,
            advance=self.advance,
            runs=self.runs,
        )

    def execute(self, plan: Plan, config: ExecutionConfig, job_name: str) -> JobExecutionResult:
        unbounded = _unbounded_sources(plan)
        if unbounded and self.max_records is None:
            raise ValueError(
                f"sources {unbounded} are unbounded: give LocalRunner(max_records=...) (panes run --max-records N, "
                "$PANES_MAX_RECORDS for a script's get_execution_environment()) or step a LocalJob yourself"
            )
        started = time.monotonic()
        job = self.start(plan, config)
        try:
            with fewer_collections():
                read = job.run(self.max_records)
        except BaseException:
            job.abort()
            raise
        metrics = job.metrics()
        job.close()
        details: dict[str, Any] = {
            "records_read": read,
            "mode": "batch" if job.batch else "streaming",
            "source_errors": dict(job.source_errors),
        }
        return JobExecutionResult(job_name, int((time.monotonic() - started) * 1000), details, metrics)


CLOCKS = ("auto", "stepping", "system", "manual")


def _unbounded_sources(plan: Plan) -> list[str]:
    """The names of the sources of ``plan`` that this runner reads and that have no end."""
    return [
        t.name
        for t in plan
        if isinstance(t, SourceTransformation) and isinstance(t.source, Source) and not t.source.is_bounded()
    ]


def _timed_sources(plan: Plan) -> list[str]:
    """The names of the micro-batch sources of ``plan`` that give their batches' processing times."""
    return [
        t.name
        for t in plan
        if isinstance(t, SourceTransformation)
        and isinstance(t.source, MicroBatchSource)
        and t.source.processing_times is not None
    ]
