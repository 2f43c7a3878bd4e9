"""``panes reconcile``'s corrections applied to the PostgreSQL table a window's upsert ``JdbcSink`` keeps, so that
the table equals the BATCH result over all the data (``docs/late-data-reconciliation.md``).

The corrections (``panes.datastream.reconcile.Corrections``) are rows of the window's result type plus
``retract``: for each window they change, retractions of the rows the stream emitted, then the BATCH run's rows.
:func:`apply_corrections` writes them through the sink's own upsert path, in one small bounded job on the runner
given (the local runner by default; a ``SparkRunner`` writes them from a Spark task): a retraction deletes the
row of its key columns, unless a new row of the same key follows it, which replaces the row. One run's rows are
one checkpoint (local runner) or micro-batch (Spark), committed in one transaction with its marker in the sink's
commit table: the table goes from the streamed state to the corrected one at once, never halfway.

Applying the same corrections again changes nothing (each changed window ends with the BATCH row, or deleted), so
a failed or repeated apply is simply run again. Corrections computed from a late table that the stream has since
added to are not those of the table now: reconcile again first.

What it accepts: an upsert sink (``JdbcSink.upsert_builder()``) whose key columns name one window of one key
(for a window result: the key, ``window_start``, ``window_end``), of a window in accumulating or retracting mode.
Refused with ``ValueError``: a plain ``JdbcSink.sink(sql, ...)`` (a statement run once per row cannot apply a
retraction), and corrections of a discarding window (its upsert table holds each window's last pane, not its
result, and no correction makes it so; write discarding results with an adding statement and apply
``SUM(CASE WHEN retract THEN -value ELSE value END)`` yourself). Pane columns in the table take the BATCH run's
values in the windows the corrections change and keep the stream's elsewhere.
"""

from __future__ import annotations

from typing import Any

from panes.connectors.jdbc import JdbcSink
from panes.connectors.postgres.targets import UpsertTarget
from panes.datastream.plan import Plan, SinkTransformation


def check_applicable(corrections: Any, sink: Any) -> None:
    """``ValueError`` (saying why and what to do) unless ``corrections`` can be applied through ``sink`` (see the
    module docstring); ``TypeError`` when ``sink`` is no ``JdbcSink``."""
    if not isinstance(sink, JdbcSink):
        raise TypeError(f"corrections are applied through a JdbcSink's upsert path, got {type(sink).__name__}")
    if not isinstance(sink.target, UpsertTarget):
        raise ValueError(
            f"{sink!r} runs a statement once per row, which cannot apply a retraction: apply the corrections "
            "through an upsert sink of the same table (JdbcSink.upsert_builder().with_table(...)"
            ".with_key_columns(key, 'window_start', 'window_end')), or from their Parquet file (--output)"
        )
    if corrections.accumulation == "discarding":
        raise ValueError(
            f"step {corrections.step_uid} fires discarding panes: an upsert table of its results holds each "
            "window's last pane, not the window's result, and no correction makes it equal to the BATCH result. "
            "Write discarding panes with a statement that adds them up (JdbcSink.sink('INSERT ... ON CONFLICT ... "
            "DO UPDATE SET v = t.v + EXCLUDED.v', ...)) and apply the corrections' Parquet file (--output) as "
            "v - value for a retraction, v + value otherwise"
        )


def apply_corrections(corrections: Any, sink: JdbcSink, runner: Any = "local", parallelism: int = 1) -> int:
    """Write ``corrections`` (``panes.datastream.reconcile.Corrections``) to ``sink``'s table through its upsert
    path, in one bounded job on ``runner`` (``"local"`` by default, or a runner object such as ``SparkRunner``)
    with ``parallelism`` writers (``>= 1``; rows of one key reach one writer in order); returns the number of rows
    written (0: nothing to correct, no job run). Raises as :func:`check_applicable`, and as the sink does
    (``JdbcConnectionError``, ``JdbcStatementError``, ``RefusedRowError`` for a row the table refuses)."""
    from panes.datastream import StreamEnvironment

    check_applicable(corrections, sink)
    if not corrections.rows:
        return 0
    env = StreamEnvironment(runner)
    stream = env.from_collection(list(corrections.rows), type_info=corrections.record_type)
    stream.add_sink(sink).uid(f"reconcile {corrections.step_uid}").set_parallelism(parallelism)
    env.execute(f"reconcile {corrections.step_uid} into {sink.target.describe()}")
    return len(corrections.rows)


def sink_of_step(plan: Plan, step_uid: str) -> SinkTransformation:
    """The sink step of ``plan`` that writes the results of the step with uid ``step_uid`` to an
    upsert ``JdbcSink`` directly; ``ValueError`` when there is none or more than one (name the sink then: apply
    from Python with :func:`apply_corrections`)."""
    from panes.datastream.fingerprint import operator_uids

    uids = operator_uids(plan)
    found: list[SinkTransformation] = [
        sink
        for sink in plan.sinks
        if isinstance(getattr(sink, "sink", None), JdbcSink)
        and isinstance(sink.sink.target, UpsertTarget)
        and sink.inputs
        and uids.get(sink.inputs[0].id) == step_uid
    ]
    if len(found) != 1:
        what = "no upsert JdbcSink" if not found else f"{len(found)} upsert JdbcSinks"
        raise ValueError(
            f"{what} of this job takes the results of step {step_uid} directly: sink_to(JdbcSink.upsert_builder()"
            "...build()) right after the window's function, or apply the corrections from Python "
            "(panes.connectors.jdbc_corrections.apply_corrections(corrections, sink))"
        )
    return found[0]


__all__ = ["apply_corrections", "check_applicable", "sink_of_step"]
