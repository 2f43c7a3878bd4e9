"""Rescaling on Spark: a streaming query restarted from its checkpoint with another number of shards for a keyed
step (``num_shards``, the step's or the environment's parallelism) gets each key's state at its new shard.

Spark keeps a keyed step's state under the shard numbers and fixes the query's partitions with the checkpoint,
so panes moves the state itself, in two steps (as Flink restores key-group ranges into another parallelism):

1. Before the query starts, a Spark batch job reads each rescaled step's state as the checkpoint's last committed
   micro-batch left it (Spark's ``statestore`` data source: each shard's log and version), restores each old
   shard's operator on an executor, splits its state by key group into the new shards' *pieces*
   (``ShardHost.rescale``) and writes them as Parquet to the query's control input,
   ``<checkpoint>/panes/control``. The driver sees none of the state.
2. Every streaming query with keyed steps reads that folder as a streaming file source (empty but for a
   rescale). In the first micro-batch after the restart, each new shard receives its pieces together with its
   rows, merges them into its operator, and starts the log of a new *generation* with a snapshot; state of the
   former generation that a shard still keeps under its number is not its state any more and is ignored
   (``shard.runtime``).

A restart can rescale only from a checkpoint whose last planned micro-batch was committed (else Spark would
replay that batch with the new shards before the pieces arrive): :func:`check_committed` says how to finish it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from panes.datastream.fingerprint import JobFingerprint, is_keyed, operator_uids
from panes.datastream.plan import Plan, Transformation
from panes.errors import RESTART_ADVICE, IncompatibleCheckpointError
from panes.operators.rescaling import Owner
from panes.spark.linear import Step
from panes.spark.shard.definition import ShardDefinition, load_definition
from panes.spark.shard.hosts import shard_host
from panes.spark.shard.runtime import GENERATION_SHIFT

CONTROL_FOLDER = os.path.join("panes", "control")
"""Where in the checkpoint the control input is (its files carry pieces of rescaled state)."""
CONTROL_DDL = "step INT, shard INT, piece BINARY"
PIECES = pa.schema([("step", pa.int32()), ("shard", pa.int32()), ("piece", pa.binary())])
RESCALED = frozenset({"shards", "num_shards", "generation"})
"""What a restart may change on Spark because the state is redistributed (``check_restart``'s ``rescaled``)."""


def control_folder(checkpoint: str) -> str:
    return os.path.join(checkpoint, CONTROL_FOLDER)


def is_control_source(description: str | None) -> bool:
    """Whether a source of Spark's progress (its ``description``) is a query's control input."""
    return bool(description) and CONTROL_FOLDER in str(description)


def prepare_control_folder(spark: Any, checkpoint: str) -> None:
    """Make the control folder exist (Spark's file source needs it): directly for a checkpoint on this machine's
    filesystem, else (another filesystem, or a Spark Connect server's) by Spark writing an empty dataset there."""
    from panes.spark.session import driver_path

    folder = control_folder(checkpoint)
    local = driver_path(spark, folder)
    if local is not None:
        os.makedirs(local, exist_ok=True)
        return
    spark.createDataFrame([], CONTROL_DDL).write.mode("append").parquet(folder)


def generation_of(fingerprint: JobFingerprint | None) -> int:
    """The generation of the shards a checkpoint's fingerprint describes (0 before any rescale)."""
    if fingerprint is None:
        return 0
    return int(fingerprint.settings.get("generation", "0") or 0)


@dataclass(frozen=True)
class Rescale:
    """A keyed step whose shard count changed: its operator id in Spark's state store, its step, the shards its
    state has now (``old``) and will have (``new``)."""

    operator_id: int
    step: Step
    old: int
    new: int


def rescales(stored: JobFingerprint | None, steps: list[tuple[str, Step, int]]) -> list[Rescale]:
    """The keyed steps whose shard count differs from the one the checkpoint's fingerprint ``stored`` holds:
    ``steps`` are the streaming query's keyed steps in plan order, each with its uid and its shard count now.
    Spark numbers the stateful operators of a query from its sink down (a plan is traversed top-down, and panes
    chains its keyed steps in one lineage): the last keyed step's state is operator 0."""
    if stored is None:
        return []
    before = {o.uid: o.properties.get("shards") for o in stored.operators}
    found = []
    for position, (uid, step, shards) in enumerate(steps):
        old = before.get(uid)
        if old is not None and int(old) != shards:
            found.append(Rescale(len(steps) - 1 - position, step, int(old), shards))
    return found


def shards_changed(stored: JobFingerprint | None, plan: Plan, shards: Callable[[Transformation], int]) -> bool:
    """Whether a keyed step of ``plan`` has another shard count (``shards`` gives a step's) than the checkpoint's
    fingerprint ``stored`` says its state has (the restart then starts a new generation of shards)."""
    if stored is None:
        return False
    before = {o.uid: o.properties.get("shards") for o in stored.operators}
    uids = operator_uids(plan)
    return any(
        transformation
        for transformation in plan.transformations()
        if not transformation.is_virtual
        and is_keyed(transformation)
        and before.get(uids[transformation.id]) is not None
        and int(before[uids[transformation.id]] or 0) != shards(transformation)
    )


def check_committed(spark: Any, checkpoint: str) -> None:
    """Refuse to rescale when the checkpoint's last planned micro-batch is not committed (see the module
    docstring), saying how to finish it."""
    planned, committed = _last_batch(spark, checkpoint, "offsets"), _last_batch(spark, checkpoint, "commits")
    if planned is not None and planned != committed:
        raise IncompatibleCheckpointError(
            f"cannot rescale from checkpoint {checkpoint}: its micro-batch {planned} was planned but not committed "
            "(the query stopped during it), and Spark replays it before new state can reach the new shards. Restart "
            "the job once with its former shard counts so that it finishes that batch, stop it, then restart it "
            f"with the new ones.\n{RESTART_ADVICE}",
            changes=((None, "uncommitted micro-batch", str(planned), "none"),),
        )


def _last_batch(spark: Any, checkpoint: str, log: str) -> int | None:
    from pyspark.sql import functions as F

    try:
        files = spark.read.text(os.path.join(checkpoint, log)).select(F.input_file_name().alias("f")).distinct()
        names = [row[0].rsplit("/", 1)[-1] for row in files.collect()]
    except Exception:  # Spark raises AnalysisException for a missing path
        return None
    ids = [int(name) for name in names if name.isdigit()]
    return max(ids) if ids else None


def write_pieces(
    spark: Any, checkpoint: str, rescaled: list[Rescale], definitions: dict[int, bytes], generation: int
) -> None:
    """Split the state of each rescaled step's old shards into its new shards' pieces and write them to the
    control input (see the module docstring); ``definitions`` are the steps' pickled ``ShardDefinition`` (with
    the new shard counts), by step index; ``generation`` is the one the checkpoint's state has."""
    from pyspark.sql import functions as F

    for rescale in rescaled:
        state = spark.read.format("statestore").option("operatorId", rescale.operator_id)
        log = state.option("stateVarName", "log").option("flattenCollectionTypes", "false").load(checkpoint)
        meta = state.option("stateVarName", "meta").load(checkpoint)
        current = meta.filter(F.shiftright(F.col("value.version"), GENERATION_SHIFT) == F.lit(generation))
        shards = log.join(current.select("key"), "key").select(
            F.col("key.shard").alias("shard"), F.col("list_value.entry").alias("entries")
        )
        split = _splitter(rescale, load_definition(definitions[rescale.step.index]))
        pieces = shards.groupBy("shard").applyInArrow(split, CONTROL_DDL)
        pieces.write.mode("append").parquet(control_folder(checkpoint))


def _splitter(rescale: Rescale, definition: ShardDefinition) -> Any:
    """The ``applyInArrow`` function splitting one old shard's state into the new shards' pieces."""
    old = dataclasses.replace(definition, num_shards=rescale.old)
    owner = (definition.max_parallelism, rescale.new)
    index = rescale.step.index

    def split(key: Any, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        shard = int(key[0].as_py())
        entries = [entry for batch in batches for row in batch.column("entries").to_pylist() for entry in row]
        host = shard_host(old, shard)
        host.restore(entries[0], entries[1:])
        host.open()
        parts = host.rescale([host.snapshot()], Owner(*owner), rescale.new)
        yield pa.RecordBatch.from_arrays(
            [pa.array([index] * len(parts), pa.int32()), pa.array(range(len(parts)), pa.int32()), pa.array(parts)],
            schema=PIECES,
        )

    return split
