"""File sinks written by the query's own tasks: Spark data source ``panes_files`` as the streaming sink.

When every sink of a plan is a file sink with a known schema on a local (or ``file:``) path, refusing what
does not fit by failing the job, the query ends in this sink instead of ``foreachBatch``: each task of the
last stage writes its rows of each sink to ``path/batch=<id>/part-<partition>.<format>`` as it computes
them — one Spark job per micro-batch, no persisted batch, nothing through the driver. A replayed batch
writes the same files again, replacing them (exactly-once), and each file appears whole or not at all
(``file_format.write_table``). Other plans use ``sinks.SinkWriter``.
"""

from __future__ import annotations

import base64
import os
import pickle
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, DataSourceStreamWriter, WriterCommitMessage

from panes.datastream.file_format import EXTENSIONS, write_table
from panes.datastream.sinks import FileSink
from panes.spark.failures import carrying
from panes.spark.fused import unpacked
from panes.spark.layout import ChannelCodes
from panes.spark.sinks import SinkTarget, local_path, target_table

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
        for target in self.targets:
            table = target_table(batches, target, self.codes)
            if table is None or table.num_rows == 0:
                continue
            sink = target.sink
            folder = os.path.join(local_path(sink.path) or sink.path, f"batch={batch_id}")
            write_table(table, os.path.join(folder, f"part-{partition:05d}.{EXTENSIONS[sink.format]}"), sink.format)
        return WriterCommitMessage()

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        return None

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        return None
