"""File sinks written by the query's own tasks: Spark data source ``panes_files`` as the streaming sink.

When every sink of a plan is a file sink with a known schema on a local (or ``file:``) path, refusing what
does not fit by failing the job, the query ends in this sink instead of ``foreachBatch``: each task of the
last stage writes its rows of each sink to a staged ``part-<partition>.<format>`` as it computes them — one
Spark job per micro-batch, no persisted batch, nothing through the driver — and when every task succeeded
the writer's commit moves the parts to ``path/batch=<id>/`` (``commits``): a failed batch leaves no part of
itself, and a replayed batch replaces its folder (exactly-once). Other plans use ``sinks.SinkWriter``.
"""

from __future__ import annotations

import base64
import os
import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, DataSourceStreamWriter, WriterCommitMessage

from panes.datastream.file_format import write_table, write_text_parts
from panes.datastream.sinks import FileSink
from panes.spark import crash_hook
from panes.spark.commits import abort_parts, commit_parts, local_path, staged_folder
from panes.spark.failures import carrying
from panes.spark.fused import unpacked
from panes.spark.layout import ChannelCodes
from panes.spark.sinks import SinkTarget, target_table

BATCH_ID = "streaming.sql.batchId"
"""The local property Spark sets on a micro-batch's jobs (``MicroBatchExecution.BATCH_ID_KEY``)."""


def writes_directly(targets: list[SinkTarget]) -> bool:
    """Whether ``panes_files`` can write every sink (see the module docstring)."""
    return bool(targets) and all(
        isinstance(t.sink, FileSink) and t.schema is not None and t.error_code is None and local_path(t.sink.path)
        for t in targets
    )


class PanesFiles(DataSource):
    """Spark data source ``panes_files``: option ``targets`` holds the sinks to write (pickled, base64)."""

    @classmethod
    def name(cls) -> str:
        return "panes_files"

    def streamWriter(self, schema: Any, overwrite: bool) -> DataSourceStreamWriter:
        targets, codes = pickle.loads(base64.b64decode(self.options["targets"]))
        return _Writer(targets, codes)


def options(targets: list[SinkTarget], codes: ChannelCodes) -> dict[str, str]:
    return {"targets": base64.b64encode(pickle.dumps((targets, codes), protocol=pickle.HIGHEST_PROTOCOL)).decode()}


class _Writer(DataSourceStreamArrowWriter):
    def __init__(self, targets: list[SinkTarget], codes: ChannelCodes) -> None:
        self.targets = targets
        self.codes = codes

    @carrying
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        from pyspark import TaskContext

        context = TaskContext.get()
        assert context is not None
        batch_id = int(context.getLocalProperty(BATCH_ID) or 0)
        partition = context.partitionId()
        batches = list(iterator)
        batches = list(unpacked(iter(batches), bool(batches) and "payload" in batches[0].schema.names))
        written: list[tuple[int, str, str]] = []
        try:
            for index, target in enumerate(self.targets):
                table = target_table(batches, target, self.codes)
                if table is None or table.num_rows == 0:
                    continue
                written += stage_part(table, target.sink, index, batch_id, partition, context.attemptNumber())
        except BaseException:
            abort_parts(written)  # this task failed: what it staged goes (Spark's abort gets no message of it)
            raise
        return Written(written)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Every task wrote its part of the batch: move the parts into place (each sink's batch folder holds
        exactly this attempt's files; see ``commits``)."""
        crash_hook.reached("state", batchId)
        files = [f for m in messages if isinstance(m, Written) for f in m.files]
        commit_parts(files, [t.sink for t in self.targets], batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """The batch failed: remove the parts its tasks staged (the outputs stay as they were)."""
        abort_parts([f for m in messages if isinstance(m, Written) for f in m.files])


def stage_part(
    table: pa.Table, sink: FileSink, index: int, batch_id: int, partition: int, attempt: int
) -> list[tuple[int, str, str]]:
    """Write a task's rows of ``sink`` (the ``index``-th) for batch ``batch_id`` to its staging folder:
    ``(index, staged path, final file name)`` of each file written (a text sink may roll several)."""
    staging = staged_folder(sink.path, batch_id)
    if sink.format == "text":
        folder = os.path.join(staging, f"attempt-{partition}-{attempt}")
        lines = table.column(0).to_pylist()
        paths = write_text_parts(lines, folder, sink, partition)
        return [(index, path, os.path.basename(path)) for path in paths]
    name = sink.part_name(partition)
    staged = os.path.join(staging, f"{name}.attempt-{attempt}")
    write_table(table, staged, sink.format)
    return [(index, staged, name)]


@dataclass
class Written(WriterCommitMessage):
    """The files a task staged: ``(index of the sink, staged path, final file name)``."""

    files: list[tuple[int, str, str]]
