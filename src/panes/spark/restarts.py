"""The fingerprint of a streaming query's state, kept with its checkpoint (``panes.datastream.fingerprint``).

A query started on a checkpoint location the user gave (``SparkRunner(checkpoint_location=...)``) that holds
committed micro-batches checks the fingerprint stored there against its own before it starts; once the query
is built and checked, right before Spark starts it, it stores its own. A fingerprint counts only while the
checkpoint holds committed batches (before that there is no state to protect), so one left by a job that
failed before its first batch committed changes nothing; one stored before the first commit cannot race with
it (a fingerprint written after the query started could lose that race on a loaded cluster, and the
checkpoint would look like one written before panes kept fingerprints). It lives in
``<checkpoint>/panes/fingerprint/start=<ms>/`` as one JSON line written by Spark (the checkpoint may be on any
Hadoop filesystem, or on a Spark Connect server): Spark's file committer makes a folder's file appear whole or
not at all, and the newest complete folder is the fingerprint. Metadata only: no data is ever written there.

On Spark the fingerprint adds the runner's settings that shape state (``max_parallelism``: the key groups;
``num_shards`` and each keyed step's shard count, which a restart may change because ``rescaling`` redistributes
the state, and the ``generation`` of the shards it counts) and each keyed step's state layout (``columnar``,
``aligned`` or ``general``: the operator whose snapshots the shard log holds). Spark's state store maps state to
stateful operators by their order in the query, so the keyed steps must stay the same, in the same order
(``check_restart(..., ordered=True)``).
"""

from __future__ import annotations

import os
import time
from typing import Any

from panes.datastream.fingerprint import STATE_FORMAT, JobFingerprint, check_restart, fingerprint
from panes.datastream.plan import Channel, Plan, Transformation
from panes.errors import RESTART_ADVICE, IncompatibleCheckpointError
from panes.spark.linear import Step
from panes.spark.rescaling import RESCALED
from panes.spark.session import driver_path
from panes.spark.shard.hosts import window_implementation
from panes.spark.translate import Translation
from panes.types import RecordType

FOLDER = os.path.join("panes", "fingerprint")
"""Where in the checkpoint the fingerprints are kept."""


def state_layout(step: Step) -> str:
    """How a keyed step's shard state is laid out (what ``processor.ShardProcessor`` hosts; see ``shard.hosts``)."""
    implementation = window_implementation(step)
    return "general" if implementation is None else implementation.state_layout


def element_by_element_steps(stored: JobFingerprint | None) -> frozenset[str]:
    """The uids of the keyed steps whose state ``stored`` (a checkpoint's fingerprint; ``None``: no state) says
    was written element by element (``aligned`` or ``general``): a restart keeps them so (``Step.columns``), so
    that a window a newer panes would run on columns goes on from that state instead of refusing it."""
    if stored is None:
        return frozenset()
    return frozenset(
        operator.uid
        for operator in stored.operators
        if operator.properties.get("state layout") in ("aligned", "general")
    )


def query_fingerprint(
    plan: Plan, translation: Translation, num_shards: int, max_parallelism: int, generation: int = 0
) -> JobFingerprint:
    """The fingerprint of ``plan`` translated as ``translation``, its shards of ``generation``
    (``rescaling``)."""
    codes = translation.codes
    types: dict[Channel, RecordType | None] = {codes.channel[code]: codes.types[code] for code in codes.channel}
    keyed = {step.transformation.id: step for step in translation.steps if step.kind == "keyed"}

    def spark_properties(transformation: Transformation) -> dict[str, str | None]:
        step = keyed.get(transformation.id)
        if step is None:
            return {"state layout": None, "shards": None}
        # a key's shard follows the step's shard count: another count redistributes the state (``rescaling``)
        return {"state layout": state_layout(step), "shards": str(translation.shards.get(transformation.id))}

    settings = {"num_shards": num_shards, "max_parallelism": max_parallelism, "generation": generation}
    return fingerprint(plan, types, settings, spark_properties)


def load_fingerprint(spark: Any, checkpoint: str) -> JobFingerprint | None:
    """The newest fingerprint stored in ``checkpoint`` (``None`` when there is none)."""
    try:
        rows = spark.read.text(os.path.join(checkpoint, FOLDER)).select("start", "value").collect()
    except Exception:  # Spark raises AnalysisException for a missing path
        return None
    if not rows:
        return None
    newest = max(rows, key=lambda row: int(row[0]))
    return JobFingerprint.from_json(newest[1])


def has_committed_batches(spark: Any, checkpoint: str) -> bool:
    """Whether a query committed micro-batches in ``checkpoint`` (Spark's ``commits`` log has entries)."""
    try:
        return bool(spark.read.text(os.path.join(checkpoint, "commits")).limit(1).collect())
    except Exception:
        return False


def store_fingerprint(spark: Any, checkpoint: str, found: JobFingerprint) -> None:
    """Keep ``found`` in ``checkpoint``: a new folder that appears whole or not at all. On a path the driver
    writes directly, its file is written in a hidden folder (``_start=...``, which Spark's reader skips) renamed
    into place; elsewhere Spark's committer writes it (a Spark job)."""
    name = f"start={time.time_ns() // 1_000_000}"
    local = driver_path(spark, os.path.join(checkpoint, FOLDER))
    if local is not None:
        staged = os.path.join(local, f"_{name}")
        os.makedirs(staged)
        with open(os.path.join(staged, "part-00000.txt"), "w", encoding="utf-8") as out:
            out.write(found.to_json() + "\n")
        os.replace(staged, os.path.join(local, name))
        return
    folder = os.path.join(checkpoint, FOLDER, name)
    spark.createDataFrame([(found.to_json(),)], "value STRING").coalesce(1).write.text(folder)


def restored_fingerprint(spark: Any, checkpoint: str) -> JobFingerprint | None:
    """The fingerprint of the state ``checkpoint`` holds: ``None`` when no micro-batch committed there yet
    (nothing to restore). A checkpoint with committed batches and no fingerprint was written by a panes that
    kept none (state format 1): refused with ``IncompatibleCheckpointError``."""
    if not has_committed_batches(spark, checkpoint):
        return None
    stored = load_fingerprint(spark, checkpoint)
    if stored is None:
        raise IncompatibleCheckpointError(
            f"cannot restart from checkpoint {checkpoint}: it holds committed batches but no panes fingerprint, so "
            f"it was written by a panes that kept none (state format 1), and this panes reads state format "
            f"{STATE_FORMAT}.\n{RESTART_ADVICE}",
            changes=((None, "state format", "1", str(STATE_FORMAT)),),
        )
    return stored


def check_checkpoint(checkpoint: str, stored: JobFingerprint | None, new: JobFingerprint) -> None:
    """Refuse to start ``new`` on the state of ``checkpoint`` (fingerprint ``stored``, ``None``: no state) when
    the state does not fit it (``IncompatibleCheckpointError``; keyed steps are mapped by their order; shard
    counts may change: ``rescaling`` redistributes the state)."""
    if stored is not None:
        check_restart(stored, new, f"checkpoint {checkpoint}", ordered=True, rescaled=RESCALED)
