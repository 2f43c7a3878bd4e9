"""What a runner receives and returns, and how the environment finds a runner by name.

The environment hands a runner a :class:`Plan`, an :class:`ExecutionConfig` and a job name; the runner
returns a :class:`JobExecutionResult`. Runners depend on this module, never on the environment, and the
environment never names a runner's module: ``"local"``, ``"spark"`` and any other name are looked up among
the ``panes.runners`` entry points of the installed distributions (panes declares its two runners there).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Protocol

from panes.datastream.plan import Plan
from panes.datastream.runtime_mode import RuntimeExecutionMode
from panes.operators.metrics import OperatorMetrics


@dataclass(frozen=True)
class ExecutionConfig:
    """The environment's settings a runner needs: default ``parallelism`` (``None``: the runner's default, 1 on
    the local runner), ``max_parallelism`` (the number of key groups), ``auto_watermark_interval`` (ms; 0
    disables periodic watermarks) and ``runtime_mode`` (see ``panes.datastream.runtime_mode``)."""

    parallelism: int | None = 1
    max_parallelism: int = 128
    auto_watermark_interval: int = 200
    runtime_mode: RuntimeExecutionMode = RuntimeExecutionMode.STREAMING


@dataclass
class JobExecutionResult:
    """What ``execute`` returns: the job's name, how long it ran, runner-specific details, and ``metrics``:
    one :class:`~panes.operators.metrics.OperatorMetrics` per step that hosts an operator, by step name
    (:func:`metric_names`), at the end of the job. On both runners ``details["source_errors"]`` holds, by source
    name, the inputs a source could not read and sent to its error output (sources that sent any)."""

    job_name: str
    net_runtime_ms: int = 0
    details: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, OperatorMetrics] = field(default_factory=dict)

    def get_job_name(self) -> str:
        return self.job_name

    def get_net_runtime(self) -> int:
        return self.net_runtime_ms

    def get_metrics(self, name: str) -> OperatorMetrics:
        """The metrics of step ``name``; ``KeyError`` names the steps there are."""
        try:
            return self.metrics[name]
        except KeyError:
            raise KeyError(f"no step named {name!r}: the steps with metrics are {sorted(self.metrics)}") from None


def metric_names(plan: Plan) -> dict[int, str]:
    """By transformation id, the name each step with an operator (one or two inputs) reports its metrics
    under: its ``name``, or ``"<name> #<n>"`` for the n-th step (in plan order, n >= 2) of a name already
    taken, so that every step's metrics stay apart on every runner."""
    names: dict[int, str] = {}
    seen: dict[str, int] = {}
    for transformation in plan.transformations():
        if transformation.kind not in ("one_input", "two_input"):
            continue
        count = seen[transformation.name] = seen.get(transformation.name, 0) + 1
        names[transformation.id] = transformation.name if count == 1 else f"{transformation.name} #{count}"
    return names


class Runner(Protocol):
    """Executes plans (``panes.local.LocalRunner``, ``panes.spark.SparkRunner``, or your own)."""

    def execute(self, plan: Plan, config: ExecutionConfig, job_name: str) -> JobExecutionResult: ...


RUNNER_GROUP = "panes.runners"


def runner_names() -> list[str]:
    """The names of the runners installed (entry points of group ``panes.runners``)."""
    return sorted({point.name for point in entry_points(group=RUNNER_GROUP)})


def lookup_runner(name: str, options: dict[str, Any]) -> Runner:
    """A new runner of the class registered as ``name``, built with ``options``.

    Raises ``ValueError`` naming the installed runners when ``name`` is not one of them.
    """
    for point in entry_points(group=RUNNER_GROUP):
        if point.name == name:
            factory = point.load()
            runner: Runner = factory(**options)
            return runner
    installed = ", ".join(repr(n) for n in runner_names()) or "none (is panes installed? pip install -e .)"
    raise ValueError(f"unknown runner {name!r}: the installed runners are {installed}; or pass a runner object")
