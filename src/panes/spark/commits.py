"""A micro-batch's file outputs appear together, after every sink of the batch was written, or not at all.

Each file sink writes a batch to ``path/_panes_staging/batch=<id>`` (hidden from Spark's and pyarrow's readers,
which skip names starting with ``_``). Once every sink of the batch succeeded, :func:`commit_batch` moves each
staged folder to ``path/batch=<id>``, replacing what an earlier attempt of the batch left there. A batch that
fails leaves its outputs as they were before it: a failing job has no partial output of a micro-batch, and a
replay after a restart writes and commits the batch again (exactly-once, as before).

The move is a rename on local (``file:``) paths and on other Hadoop file systems (through the session's JVM;
on object stores such as S3 a rename is a copy, so there the commit is not atomic, only ordered). Over Spark
Connect, sinks on non-local paths are written in place (the batch's session has no JVM to rename with).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from typing import Any
from urllib.parse import urlparse

from panes.datastream.file_format import clear_batch
from panes.datastream.sinks import FileSink

STAGING = "_panes_staging"
"""The folder under a file sink's path where a batch is written before it is committed."""


def local_path(path: str) -> str | None:
    """``path`` as a local path, or ``None`` when it names another filesystem (``hdfs://``, ``s3a://``, ...)."""
    parsed = urlparse(path)
    if parsed.scheme in ("", "file"):
        return parsed.path if parsed.scheme else path
    return None


def root(path: str) -> str:
    """The folder of a sink at ``path`` as this machine writes it: its local path, or the URI as it is."""
    return local_path(path) or path


def batch_folder(path: str, batch_id: int) -> str:
    """Where batch ``batch_id`` of the sink at ``path`` ends up: ``path/batch=<id>``."""
    return os.path.join(root(path), f"batch={batch_id}")


def staged_folder(path: str, batch_id: int) -> str:
    """Where batch ``batch_id`` of the sink at ``path`` is written before its commit."""
    return os.path.join(root(path), STAGING, f"batch={batch_id}")


def stages(spark: Any, path: str) -> bool:
    """Whether a sink at ``path`` is staged then committed with ``spark`` (not over Connect on a non-local
    path: see the module docstring)."""
    from panes.spark.session import is_connect

    return local_path(path) is not None or not is_connect(spark)


def commit_batch(spark: Any, sinks: list[FileSink], batch_id: int) -> None:
    """Move the staged batch ``batch_id`` of each of ``sinks`` (those that staged one) into place: its batch
    folder (in the bucket of the time now, for a text sink with buckets), after removing what an earlier
    attempt of the batch left in any bucket."""
    now = int(time.time() * 1000)
    for sink in sinks:
        local = local_path(sink.path)
        if local is not None:
            staged = staged_folder(local, batch_id)
            if os.path.isdir(staged):
                clear_batch(local, batch_id)
                final = sink.batch_folder(batch_id, now, root=local)
                os.makedirs(os.path.dirname(final), exist_ok=True)
                os.replace(staged, final)
                _remove_if_empty(os.path.join(local, STAGING))
        else:
            _commit_hadoop(spark, sink, batch_id, now)


def commit_parts(parts: list[tuple[int, str, str]], sinks: list[FileSink], batch_id: int) -> None:
    """Move the files tasks staged, ``(index of the sink in sinks, staged path, file name)``, into their sinks'
    batch folders (local paths): each of ``sinks``' batch folders (in any bucket) is emptied first, so it holds
    exactly the committed attempt's files; then the staging folders are removed."""
    now = int(time.time() * 1000)
    finals = []
    for sink in sinks:
        clear_batch(root(sink.path), batch_id)
        finals.append(sink.batch_folder(batch_id, now, root=root(sink.path)))
    for index, staged, name in parts:
        os.makedirs(finals[index], exist_ok=True)
        os.replace(staged, os.path.join(finals[index], name))
    for sink in sinks:
        shutil.rmtree(staged_folder(sink.path, batch_id), ignore_errors=True)
        _remove_if_empty(os.path.join(root(sink.path), STAGING))


def abort_parts(parts: list[tuple[int, str, str]]) -> None:
    """Remove staged files of a batch that failed (its outputs stay as they were)."""
    for _, staged, _ in parts:
        if os.path.exists(staged):
            os.remove(staged)


def _commit_hadoop(spark: Any, sink: FileSink, batch_id: int, now: int) -> None:
    jvm = spark._jvm
    configuration = spark._jsc.hadoopConfiguration()
    staged = jvm.org.apache.hadoop.fs.Path(staged_folder(sink.path, batch_id))
    system = staged.getFileSystem(configuration)
    if not system.exists(staged):
        return
    earlier = [batch_folder(sink.path, batch_id)]
    pattern = jvm.org.apache.hadoop.fs.Path(os.path.join(sink.path, "*", f"batch={batch_id}"))
    for found in system.globStatus(pattern) or []:
        if not found.getPath().getParent().getName().startswith(("_", ".")):  # not the staging folder
            earlier.append(found.getPath().toString())
    for folder in earlier:
        system.delete(jvm.org.apache.hadoop.fs.Path(folder), True)
    final = jvm.org.apache.hadoop.fs.Path(sink.batch_folder(batch_id, now))
    system.mkdirs(final.getParent())
    if not system.rename(staged, final):
        raise OSError(f"could not move the staged batch {batch_id} of {sink.path} into place")


def _remove_if_empty(folder: str) -> None:
    with contextlib.suppress(OSError):  # not empty (another batch is staged) or already gone
        os.rmdir(folder)
