"""In-memory micro-batches (``from_micro_batches``) as Parquet files in the query's checkpoint, read by Spark's
file source: the query starts no driver-side Python process for them (panes' Python data source,
``sources.PanesMicroBatches``, starts four, each importing PySpark: ``bench/RESULTS.md``, "Start-up").

Before the query starts, list ``i`` of a source (its rows in panes' layout, with its clock row; the end-of-input
sentinel's batch after the last list: ``sources.micro_batch_parts``) becomes the file
``<checkpoint>/panes/micro-batches/<source>/batch-<i>.parquet`` (one row group), whose modification time is
:data:`BASE_SECONDS` ``+ i`` seconds. The query reads the folder with ``maxFilesPerTrigger=1``: Spark's file source
takes the files it has not read in modification-time order, one per micro-batch, under ``availableNow`` too; an
empty list is an empty file, a micro-batch of its own. The files a micro-batch read are in the checkpoint's log of
the source, so a restart reads none of them again, and replays a planned micro-batch's file. Spark knows a file it
read by its name (``fileNameOnly``): a checkpoint copied or moved elsewhere goes on there too (but Spark replays a
micro-batch planned and not committed from the file's former path, which must still exist). On a restart a file
that holds its list's rows already is left alone; a missing one, or one of other rows (the job's lists changed), is
written anew in place: the restart goes on with list ``n`` of the job it runs, as the Python data source does.

Spark's progress names the source ``FileStreamSource[<folder>]`` and its offsets ``{"logOffset": n}`` (``n`` from
0, absent before the first micro-batch): entry ``n`` of the source's log is file ``n``, so the control rows
(sentinels, clock rows) a micro-batch read are known from the files' (:func:`control_rows_read`).

:func:`query_reading` and :func:`source_reading` choose; the query reads a source through panes' Python data source,
with the reason, where the files cannot serve:

- a query panes does not start (``to_dataframe``): there is no checkpoint to write to;
- over Spark Connect, or a checkpoint on another filesystem (a URI such as ``hdfs://``): this process cannot write
  the files where Spark reads them (``session.driver_path``);
- ``trigger="once"``: its single micro-batch would read every file, where the data source releases one list;
- a crash hook holding a point of the source (``crash_hook.SOURCE_POINTS``: ``batch``, ``between``), which only
  the data source reaches (the fault tests' other points work on files);
- a restart from a checkpoint whose micro-batches were read by the data source (it has planned micro-batches and no
  file of the source: its offsets are that source's); conversely a checkpoint whose lists are files stays on files
  (a crash hook at the data source's points is then not reached).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from panes.spark import crash_hook

FOLDER = os.path.join("panes", "micro-batches")
"""Where in the checkpoint the sources' files are (a folder per source)."""
BASE_SECONDS = 1_000_000_000
"""The modification time of file 0 (2001-09-09 UTC); file ``i`` is ``i`` seconds later. A fixed time keeps a
rewritten file in its place; whole seconds survive any filesystem's precision."""
FILES = (
    "each list a Parquet file in the query's checkpoint, read by Spark's file source one file per micro-batch "
    "(no driver-side Python process)"
)


@dataclass(frozen=True)
class Reading:
    """How a streaming query reads in-memory micro-batches: from Parquet files in ``folder`` (a local path), or
    (``folder`` ``None``) through panes' Python data source; ``reason`` says why, for people. ``ends``: how many
    times each source delivers its end of input, each in a micro-batch of its own (1, and one more per restart that
    found the micro-batch after it lost: ``end_again``)."""

    folder: str | None
    reason: str
    ends: int = 1

    def describe(self) -> str:
        """The reading for people: from files (their folder), or through the data source, and why."""
        if self.folder is not None:
            return f"from files in {self.folder}: {self.reason}"
        return f"through panes' Python data source: {self.reason}"


def query_reading(spark: Any, checkpoint: str, trigger: str) -> Reading:
    """The reading a query panes starts on ``checkpoint`` with ``trigger`` (``SparkRunner``'s) allows its micro-batch
    sources: ``folder`` is the root of their folders (see the module docstring for the reasons)."""
    from panes.spark.session import driver_path, is_connect

    if is_connect(spark):
        return Reading(None, "over Spark Connect the checkpoint is the server's, which this process cannot write")
    local = driver_path(spark, checkpoint)
    if local is None:
        return Reading(None, f"the checkpoint {checkpoint} is not on this machine's filesystem")
    if trigger == "once":
        return Reading(None, "trigger='once' runs one micro-batch, which would read every list's file")
    return Reading(os.path.join(os.path.abspath(local), FOLDER), FILES)


NOT_STARTED = Reading(None, "the query is not one panes starts (to_dataframe): there is no checkpoint to write to")


def source_reading(query: Reading, uid: str) -> Reading:
    """The reading of the micro-batch source whose operator uid is ``uid`` in a query read as ``query``
    (:func:`query_reading`): its own folder, unless the checkpoint's micro-batches were read by the data source
    or a crash hook holds one of the data source's points."""
    if query.folder is None:
        return query
    folder = os.path.join(query.folder, folder_name(uid))
    if _has_files(folder):
        return replace(query, folder=folder)  # the checkpoint's offsets are the file source's: it stays on files
    checkpoint = os.path.dirname(os.path.dirname(query.folder))
    if _planned_batches(checkpoint):
        reason = "the checkpoint's micro-batches were read by panes' Python data source (its offsets)"
        return replace(query, folder=None, reason=reason)
    held = crash_hook.held_points() & set(crash_hook.SOURCE_POINTS)
    if held:
        reason = f"a crash hook holds the data source's point {', '.join(sorted(held))}"
        return replace(query, folder=None, reason=reason)
    return replace(query, folder=folder)


def explained() -> str:
    """How a query panes starts reads in-memory micro-batches, and where not (what ``panes explain`` says without a
    session or checkpoint: the default session and a checkpoint on this machine)."""
    held = crash_hook.held_points() & set(crash_hook.SOURCE_POINTS)
    if held:
        return (
            f"through panes' Python data source: a crash hook holds its point {', '.join(sorted(held))} "
            "(PANES_CRASH_HOOK)"
        )
    return (
        f"{FILES}; through panes' Python data source instead over Spark Connect, on a checkpoint not on this "
        "machine's filesystem, with trigger='once', under a crash hook at the source's points, on a restart from a "
        "checkpoint that source wrote, and in to_dataframe"
    )


def folder_name(uid: str) -> str:
    """A source's folder name in :data:`FOLDER`: its operator uid, spelled for any filesystem."""
    return "source-" + re.sub(r"[^A-Za-z0-9_.-]", lambda m: f"%{ord(m.group()):02X}", uid)


def _has_files(folder: str) -> bool:
    """Whether ``folder`` holds a source's file (an empty one is made for Spark's file source before panes checks the
    checkpoint, so a refused restart leaves one behind)."""
    try:
        return any(name.endswith(".parquet") for name in os.listdir(folder))
    except OSError:
        return False


def _planned_batches(checkpoint: str) -> bool:
    """Whether ``checkpoint`` (a local path) holds a planned micro-batch (Spark's ``offsets/<n>``)."""
    try:
        return any(name.isdigit() for name in os.listdir(os.path.join(checkpoint, "offsets")))
    except OSError:
        return False


@dataclass(frozen=True)
class MicroBatchFiles:
    """The files of one micro-batch source, to be written into ``folder`` before the query starts (after panes
    checked the checkpoint: a refused restart writes nothing): ``batches`` are each micro-batch's record batches, in
    ``schema``; ``control_before[i]``: the control rows in files ``0 .. i - 1`` (see :func:`control_rows_read`)."""

    folder: str
    batches: Sequence[Sequence[pa.RecordBatch]]
    schema: pa.Schema
    control_before: tuple[int, ...]

    def write(self) -> None:
        """Write the files: one already holding its micro-batch's rows is left alone (its modification time set
        again if it moved); the others are written whole (a temporary file of a name Spark ignores, renamed)."""
        os.makedirs(self.folder, exist_ok=True)
        for index, parts in enumerate(self.batches):
            table = pa.Table.from_batches([part for part in parts if part.num_rows], self.schema)
            path = os.path.join(self.folder, f"batch-{index:09d}.parquet")
            stamp = (BASE_SECONDS + index) * 10**9
            if not _holds(path, table):
                handle, partial = tempfile.mkstemp(prefix=".writing-", dir=self.folder)
                os.close(handle)
                pq.write_table(table, partial, row_group_size=max(1, table.num_rows))
                os.utime(partial, ns=(stamp, stamp))
                os.replace(partial, path)
            elif os.stat(path).st_mtime_ns != stamp:
                os.utime(path, ns=(stamp, stamp))


def _holds(path: str, table: pa.Table) -> bool:
    """Whether the file at ``path`` holds exactly ``table``'s rows."""
    if not os.path.exists(path):
        return False
    try:
        return bool(pq.read_table(path, schema=table.schema).equals(table))
    except (OSError, pa.ArrowException):
        return False


def file_rows(spark: Any, folder: str, ddl: str) -> Any:
    """The streaming DataFrame of ``folder``'s files (columns ``ddl``), one file per micro-batch; makes the folder
    (Spark's file source needs it)."""
    os.makedirs(folder, exist_ok=True)
    reader = spark.readStream.schema(ddl).option("maxFilesPerTrigger", 1).option("fileNameOnly", "true")
    return reader.parquet(folder)


def control_rows_read(source: Any, controls: Mapping[str, Sequence[int]]) -> int:
    """The control rows a micro-batch read from one source of its progress (``source``: Spark's progress of it, an
    object or a mapping) when that source is the files of a folder in ``controls``, whose list gives the control
    rows before each file (``controls[folder][i]``: in files ``0 .. i - 1``); else 0."""
    description = _field(source, "description")
    if not description:
        return 0
    for folder, before in controls.items():
        if str(description).endswith(folder + "]"):
            last = len(before) - 1
            start = min(log_offset(_field(source, "startOffset")) + 1, last)
            end = min(log_offset(_field(source, "endOffset")) + 1, last)
            return before[end] - before[start]
    return 0


def log_offset(offset: Any) -> int:
    """The ``logOffset`` of a file source's offset (a JSON text, as in Spark's offsets log, or a mapping); -1 for
    none (another source's offset, or ``-``: a source that read nothing yet)."""
    if isinstance(offset, str):
        try:
            offset = json.loads(offset)
        except ValueError:
            return -1
    return int(offset.get("logOffset", -1)) if isinstance(offset, dict) else -1


def _field(value: Any, name: str) -> Any:
    return value.get(name) if hasattr(value, "get") else getattr(value, name, None)
