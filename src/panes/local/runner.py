"""``LocalRunner``: executes plans in this process (the reference every other runner is compared with)."""

from __future__ import annotations

import time
from typing import Any

from panes.datastream.execution import ExecutionConfig, JobExecutionResult
from panes.datastream.plan import Plan, SourceTransformation
from panes.datastream.sources import Source
from panes.local.clock import SteppingClock
from panes.local.job import LocalJob
from panes.timers.clock import ManualProcessingTimeService, ProcessingTimeService, SystemProcessingTimeService


class LocalRunner:
    """Runs a plan element by element.

    ``clock`` is the processing-time clock: ``"system"`` (wall clock, the default, as Flink), ``"manual"``
    (only moves through ``LocalJob.advance_processing_time``), ``"stepping"`` (advances ``step`` ms after
    each source element; ``step`` defaults to the environment's watermark interval), or a clock object.
    ``max_records`` bounds how many elements ``execute`` reads (required for unbounded sources).
    """

    def __init__(
        self, clock: str | ProcessingTimeService = "system", step: int | None = None, max_records: int | None = None
    ) -> None:
        self.clock_spec = clock
        self.step = step
        self.max_records = max_records

    def _clock(self, config: ExecutionConfig) -> ProcessingTimeService:
        spec = self.clock_spec
        if not isinstance(spec, str):
            return spec
        if spec == "system":
            return SystemProcessingTimeService()
        if spec == "manual":
            return ManualProcessingTimeService()
        if spec == "stepping":
            return SteppingClock(self.step if self.step is not None else config.auto_watermark_interval)
        raise ValueError(f"unknown clock {spec!r}: use 'system', 'manual', 'stepping' or a clock object")

    def start(self, plan: Plan, config: ExecutionConfig, snapshot: bytes | None = None) -> LocalJob:
        """A job ready to step (restored from ``snapshot`` when given)."""
        foreign = [t.name for t in plan if isinstance(t, SourceTransformation) and not isinstance(t.source, Source)]
        if foreign:
            raise ValueError(
                f"sources {foreign} cannot be read in this process (a Spark DataFrame needs the Spark runner: "
                "StreamEnvironment('spark'))"
            )
        return LocalJob(
            plan,
            self._clock(config),
            parallelism=config.parallelism,
            max_parallelism=config.max_parallelism,
            snapshot=snapshot,
        )

    def execute(self, plan: Plan, config: ExecutionConfig, job_name: str) -> JobExecutionResult:
        unbounded = [
            t.name
            for t in plan
            if isinstance(t, SourceTransformation) and isinstance(t.source, Source) and not t.source.is_bounded()
        ]
        if unbounded and self.max_records is None:
            raise ValueError(
                f"sources {unbounded} are unbounded: give LocalRunner(max_records=...) or step a LocalJob yourself"
            )
        started = time.monotonic()
        job = self.start(plan, config)
        read = job.run(self.max_records)
        job.close()
        details: dict[str, Any] = {"records_read": read}
        return JobExecutionResult(job_name, int((time.monotonic() - started) * 1000), details)
