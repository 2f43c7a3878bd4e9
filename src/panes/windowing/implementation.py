"""Which implementation runs a window, and why: the one place that decides it.

A window step (``panes.datastream.windowed.WindowSpec``) runs on one of five implementations, all giving the
window operator's results:

- ``general``: :class:`~panes.windowing.operator.WindowOperator`, Flink's window operator;
- ``evicting``: :class:`~panes.windowing.operator.EvictingWindowOperator`, when the window has an evictor;
- ``aligned``: :class:`~panes.windowing.aligned.AlignedWindowOperator`, the lean operator for accumulating
  tumbling and sliding event-time windows with the default trigger and no evictor (panes of different keys
  firing together may leave in another order than Flink's);
- ``columnar aligned`` and ``columnar sessions``: the columnar operators of ``panes.windowing.columnar``, on
  Arrow batches (a host that moves columns: the Spark runner's keyed step).

:func:`choose` picks one for a host, from what the host can do: keep Flink's emission order across keys (the
local runner and the test harness must), and run columns (it then passes the window input's record type);
:func:`columnar_operator` builds a columnar one.
Runners, ``panes explain`` and the restart fingerprint all ask it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from panes.types import RecordType
from panes.windowing.aligned import supports
from panes.windowing.columnar.aligned import ColumnarAlignedWindows
from panes.windowing.columnar.plan import ColumnarWindow, WindowDescription, plan_or_reason
from panes.windowing.columnar.sessions import ColumnarSessions

GENERAL = "general"
EVICTING = "evicting"
ALIGNED = "aligned"
COLUMNAR_ALIGNED = "columnar aligned"
COLUMNAR_SESSIONS = "columnar sessions"


@dataclass(frozen=True)
class Implementation:
    """The implementation :func:`choose` picked (``kind``, one of the module's constants), the columnar plan
    when it is columnar, and ``not_columnar``: why the window does not run on columns (``None`` when it does,
    or when the host does not run columns)."""

    kind: str
    columnar: ColumnarWindow | None = None
    not_columnar: str | None = None

    @property
    def is_columnar(self) -> bool:
        return self.columnar is not None

    @property
    def state_layout(self) -> str:
        """How the implementation keeps state on Spark: ``columnar``, ``aligned`` or ``general`` (the evicting
        operator keeps the general operator's state); part of the restart fingerprint."""
        if self.columnar is not None:
            return "columnar"
        return ALIGNED if self.kind == ALIGNED else GENERAL


def choose(
    spec: WindowDescription, *, exact_order: bool = True, columns: bool = False, input_type: RecordType | None = None
) -> Implementation:
    """The implementation of the window ``spec`` on a host that must keep Flink's emission order across keys
    (``exact_order``) or not, and that can run columns (``columns``, with the window input's ``input_type``)
    or not. A columnar window needs a keyed window (``spec.keyed``)."""
    not_columnar = None
    if getattr(spec, "key_time", None) is not None:  # only the general operators keep time per key
        reason = "it keeps event time per key (watermark_per_key)"
        return Implementation(GENERAL if spec.evictor is None else EVICTING, None, reason if columns else None)
    if columns:
        planned = plan_or_reason(spec, input_type) if getattr(spec, "keyed", True) else "it is not keyed"
        if isinstance(planned, ColumnarWindow):
            return Implementation(COLUMNAR_SESSIONS if planned.kind == "session" else COLUMNAR_ALIGNED, planned)
        not_columnar = planned
    if spec.evictor is not None:
        return Implementation(EVICTING, None, not_columnar)
    accumulating = getattr(spec, "accumulation", "accumulating") == "accumulating"
    if not exact_order and accumulating and supports(spec.assigner, spec.trigger, spec.evictor):
        return Implementation(ALIGNED, None, not_columnar)
    return Implementation(GENERAL, None, not_columnar)


def takes_runs(operator: Any) -> str | None:
    """``None`` when the window ``operator`` (an instance :func:`choose`'s implementation built) can take a run of
    elements at once with the state, timers and output of element by element (``panes.windowing.runs``), else why
    it takes them one by one."""
    from panes.windowing.runs import run_reason

    return run_reason(operator)


def columnar_operator(plan: ColumnarWindow) -> ColumnarAlignedWindows | ColumnarSessions:
    """The columnar operator that runs ``plan`` (:func:`choose`'s ``columnar`` of a columnar implementation):
    sessions for a session plan, aligned windows otherwise."""
    return ColumnarSessions(plan) if plan.kind == "session" else ColumnarAlignedWindows(plan)


def describe(implementation: Implementation, spec: Any) -> str:
    """What ``panes explain`` prints for a window's implementation on Spark."""
    from panes.windowing.batch_function import BatchWindowFunction

    batch = isinstance(spec.function.process_function, BatchWindowFunction)
    if implementation.is_columnar:
        if implementation.columnar is not None and implementation.columnar.incremental is not None:
            return (
                "columnar (one accumulator per pane, folded as micro-batches arrive; the window function called per "
                "pane when it fires)"
            )
        if implementation.columnar is not None and implementation.columnar.process is not None:
            return "columnar (elements kept as columns; the ProcessWindowFunction called per pane when it fires)"
        if batch:
            return "columnar (elements kept as columns; one call of the function per shard and firing)"
        return "columnar (whole micro-batches of each window at once)"
    how = "element by element (one call of the function per pane)" if batch else "element by element"
    return f"{how}, because {implementation.not_columnar}"
