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
from typing import Any
from urllib.parse import urlparse

STAGING = "_panes_staging"
"""The folder under a file sink's path where a batch is written before it is committed."""


def local_path(path: str) -> str | None:
    """``path`` as a local path, or ``None`` when it names another filesystem (``hdfs://``, ``s3a://``, ...)."""
    parsed = urlparse(path)
    if parsed.scheme in ("", "file"):
        return parsed.path if parsed.scheme else path
    return None


def batch_folder(path: str, batch_id: int) -> str:
    """Where batch ``batch_id`` of the sink at ``path`` ends up: ``path/batch=<id>``."""
    return os.path.join(path, f"batch={batch_id}")


def staged_folder(path: str, batch_id: int) -> str:
    """Where batch ``batch_id`` of the sink at ``path`` is written before its commit."""
    return os.path.join(path, STAGING, f"batch={batch_id}")


def stages(spark: Any, path: str) -> bool:
    """Whether a sink at ``path`` is staged then committed with ``spark`` (not over Connect on a non-local
    path: see the module docstring)."""
    from panes.spark.session import is_connect

    return local_path(path) is not None or not is_connect(spark)


def commit_batch(spark: Any, paths: list[str], batch_id: int) -> None:
    """Move the staged batch ``batch_id`` of each sink in ``paths`` (those that staged one) into place."""
    for path in paths:
        local = local_path(path)
        if local is not None:
            _commit_local(local, batch_id)
        else:
            _commit_hadoop(spark, path, batch_id)


def commit_files(files: list[tuple[str, str]], batch_folders: list[str]) -> None:
    """Move staged files ``(staged, final)`` into place: each of ``batch_folders`` (local) is emptied first, so
    it holds exactly the committed attempt's files; then the staging folders are removed."""
    for folder in batch_folders:
        shutil.rmtree(folder, ignore_errors=True)
    for staged, final in files:
        os.makedirs(os.path.dirname(final), exist_ok=True)
        os.replace(staged, final)
    for folder in {os.path.dirname(staged) for staged, _ in files}:
        shutil.rmtree(folder, ignore_errors=True)
        _remove_if_empty(os.path.dirname(folder))


def abort_files(files: list[tuple[str, str]]) -> None:
    """Remove staged files of a batch that failed (its outputs stay as they were)."""
    for staged, _ in files:
        if os.path.exists(staged):
            os.remove(staged)


def _commit_local(path: str, batch_id: int) -> None:
    staged = staged_folder(path, batch_id)
    if not os.path.isdir(staged):
        return
    final = batch_folder(path, batch_id)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(staged, final)
    _remove_if_empty(os.path.join(path, STAGING))


def _commit_hadoop(spark: Any, path: str, batch_id: int) -> None:
    jvm = spark._jvm
    configuration = spark._jsc.hadoopConfiguration()
    staged = jvm.org.apache.hadoop.fs.Path(staged_folder(path, batch_id))
    system = staged.getFileSystem(configuration)
    if not system.exists(staged):
        return
    final = jvm.org.apache.hadoop.fs.Path(batch_folder(path, batch_id))
    system.delete(final, True)
    if not system.rename(staged, final):
        raise OSError(f"could not move the staged batch {batch_id} of {path} into place")


def _remove_if_empty(folder: str) -> None:
    with contextlib.suppress(OSError):  # not empty (another batch is staged) or already gone
        os.rmdir(folder)
