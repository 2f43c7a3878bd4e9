"""Where the local runner and the Spark runner can give a plan different results, and why.

Both runners move the watermark only where a step of bounded input ends (``docs/local-runner.md``, "Steps"),
so most plans give one answer on both. :func:`runner_differences` lists what a plan has that does not: a
streaming file source (Spark reads files as they arrive, in micro-batches it sizes), punctuated or custom
watermark generators (on Spark a watermark takes effect at the end of a micro-batch, and a generator starts
afresh in every micro-batch), idleness (measured on processing time), processing-time windows without given
processing times (the wall clock on Spark), several watermarked inputs (Spark's one watermark per query), a
Kafka source's watermark per partition (one over all partitions on Spark), and the local runner's
``advance="per_element"``. ``panes explain`` prints the list and a job's first progress line says how many there
are. BATCH execution has none: both runners compute final results from sorted input.
"""

from __future__ import annotations

from typing import Any

from panes.datastream.execution import ExecutionConfig
from panes.datastream.plan import OneInputTransformation, Plan, SourceTransformation
from panes.datastream.runtime_mode import RuntimeExecutionMode, plan_runtime_mode
from panes.datastream.sources import FileSource, MicroBatchSource
from panes.watermarks.strategy import WatermarkStrategyKind


def runner_differences(plan: Plan, config: ExecutionConfig | None = None, local_runner: Any = None) -> list[str]:
    """Why the local runner and Spark may give ``plan`` different results, one sentence per cause (``[]``: the
    same results, up to the order in which outputs of different keys leave). ``local_runner``: the
    ``LocalRunner`` the job would run on, when known (its ``advance`` matters)."""
    config = config or ExecutionConfig()
    if plan_runtime_mode(plan, config.runtime_mode) is RuntimeExecutionMode.BATCH:
        return []
    sources = [t for t in plan if isinstance(t, SourceTransformation)]
    reasons = []
    for source in sources:
        if isinstance(source.source, FileSource) and source.source.streaming:
            reasons.append(
                f"source {source.name!r} reads files as a stream: Spark reads them in micro-batches of the files "
                "that have arrived (max_files_per_trigger, in modification-time order), the local runner the files "
                "present as one step, so watermarks move at other points"
            )
    timestamps = [t for t in plan if isinstance(t, OneInputTransformation) and t.op_kind == "timestamps_watermarks"]
    for step in timestamps:
        strategy = step.spec
        if getattr(strategy, "kind", None) is WatermarkStrategyKind.GENERATOR:
            reasons.append(
                f"step {step.name!r} has a custom watermark generator: a watermark it emits on an event takes effect "
                "at once on the local runner and at the end of the micro-batch on Spark, where the generator also "
                "starts afresh in every micro-batch"
            )
        upstream = step.inputs[0]
        per_split = step.operator_factory is not None and getattr(step.operator_factory(), "per_split", False)
        kafka = getattr(upstream, "source", None)
        if per_split and type(kafka).__name__ == "KafkaSource" and not kafka.is_bounded():  # type: ignore[union-attr]
            reasons.append(
                f"step {step.name!r} makes a watermark per Kafka partition, their minimum the source's, as Flink's "
                "KafkaSource; the local runner moves it as records arrive, Spark once per micro-batch (after the "
                "micro-batch's records), so a window fires in another micro-batch than where the local runner's "
                "records would have been split, though with the same contents where no record is late"
            )
        if getattr(strategy, "idle_timeouts", ()):
            reasons.append(
                f"step {step.name!r} detects idleness, which is measured on processing time (the stepping clock "
                "locally, the wall clock on Spark)"
            )
    if len(timestamps) > 1:
        reasons.append(
            f"{len(timestamps)} steps make watermarks: Spark keeps one watermark per query, the minimum over the "
            "inputs that have delivered data, and every keyed step reads it, also one that reads only some of "
            "those inputs (in Flink and on the local runner an operator's watermark is the minimum over its own "
            "inputs, at Long.MIN_VALUE until each has one), so on Spark a lagging input holds back windows and "
            "timers of steps that never read it, and fewer elements are late there"
        )
    timed = any(isinstance(t.source, MicroBatchSource) and t.source.processing_times is not None for t in sources)
    if not timed:
        for window in plan:
            spec = getattr(window, "spec", None)
            if getattr(window, "op_kind", None) == "window" and _processing_time(spec):
                reasons.append(
                    f"step {window.name!r} is a processing-time window: processing time is the wall clock on Spark "
                    "and the stepping clock locally (give from_micro_batches(..., processing_times=...) to fix it)"
                )
    if local_runner is not None and getattr(local_runner, "advance", "per_step") == "per_element":
        reasons.append(
            "the local runner moves the watermark after every element (advance='per_element'); Spark only between "
            "micro-batches"
        )
    return reasons


def _processing_time(spec: Any) -> bool:
    """Whether a window spec's assigner or trigger (or a trigger it wraps) works on processing time."""
    assigner = getattr(spec, "assigner", None)
    trigger = getattr(spec, "trigger", None)
    return "ProcessingTime" in type(assigner).__name__ or "ProcessingTime" in repr(trigger)
