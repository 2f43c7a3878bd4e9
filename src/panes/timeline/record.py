"""Run a job on the local runner with every window step recorded (``panes.timeline.recording``).

A *job module* is a Python file with a function ``build(env)`` that builds the pipeline on the
``StreamEnvironment`` it is given (sources, steps, sinks) without executing it; :func:`panes.jobs.load_job`
reads one and :func:`record_timeline` runs its ``build``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from panes.datastream import StreamEnvironment
from panes.datastream.plan import Transformation
from panes.local.runner import LocalRunner
from panes.operators.base import AbstractStreamOperator
from panes.timeline.recording import StepRecorder, StepTimeline
from panes.windowing.evictors import Evictor
from panes.windowing.operator import WindowOperator

BuildFunction = Callable[[StreamEnvironment], Any]


@dataclass
class Timeline:
    """The recorded window steps of one run of a job, in the order the job created them."""

    job_name: str
    steps: list[StepTimeline]


def describe(operator: WindowOperator) -> str:
    """A one-line summary of a window operator's configuration."""
    parts = [repr(operator.assigner), f"trigger {operator.trigger!r}"]
    evictor = getattr(operator, "evictor", None)
    if isinstance(evictor, Evictor):
        parts.append(f"evictor {evictor!r}")
    if operator.allowed_lateness:
        parts.append(f"allowed lateness {operator.allowed_lateness} ms")
    if operator.late_data_tag is not None:
        parts.append(f"late data to {operator.late_data_tag.tag_id!r}")
    return ", ".join(parts)


def record_timeline(
    build: BuildFunction,
    *,
    keys: Sequence[Any] | None = None,
    max_keys: int = 6,
    max_elements: int = 20_000,
    max_records: int | None = None,
    steps: Sequence[str] | None = None,
    job_name: str = "panes job",
) -> Timeline:
    """Build the job with ``build(env)`` on a local-runner environment, run it, and return what its window steps
    did (the steps named in ``steps``, default all). ``keys``, ``max_keys`` and ``max_elements`` choose what
    is recorded (:class:`~panes.timeline.recording.StepRecorder`); ``max_records`` bounds how many source
    elements are read (required for unbounded sources, as ``LocalRunner``'s).

    Raises ``ValueError`` when ``steps`` names a step the job does not have, or when the job has no window step.
    """
    recorders: dict[int, StepRecorder] = {}

    def hook(transformation: Transformation, subtask: int, operator: AbstractStreamOperator) -> None:
        operator = getattr(operator, "inner", operator)  # a window run on sorted input (``SortedUntilEndOfInput``)
        if not isinstance(operator, WindowOperator):
            return
        if steps is not None and transformation.name not in steps:
            return
        recorder = recorders.get(transformation.id)
        if recorder is None:
            recorder = StepRecorder(
                transformation.name,
                describe(operator),
                event_time=operator.is_event_time,
                allowed_lateness=operator.allowed_lateness,
                per_key=operator.key_time is not None,
                keys=keys,
                max_keys=max_keys,
                max_elements=max_elements,
            )
            recorders[transformation.id] = recorder
        operator.set_observer(recorder.observer_for(subtask))

    env = StreamEnvironment(LocalRunner(max_records=max_records, operator_hook=hook))
    build(env)
    if steps is not None:
        names = {t.name for t in env.plan()}
        missing = [s for s in steps if s not in names]
        if missing:
            raise ValueError(f"the job has no step named {missing}; its steps are {sorted(names)}")
    env.execute(job_name)
    if not recorders:
        raise ValueError(
            "the job has no window step to draw (a timeline shows what window operators do: "
            "key_by(...).window(...) or window_all(...))"
        )
    return Timeline(job_name, [recorders[i].timeline() for i in sorted(recorders)])
