"""Where Spark rows come from: every panes source becomes a DataFrame of panes rows (``codec``).

- ``DataFrameSource``: any Spark DataFrame, bounded or streaming; each row becomes a value (a ``dict`` by
  default, or a ``tuple`` or a Spark ``Row``).
- ``MicroBatchSource``: a Python streaming data source that delivers exactly one list per micro-batch, in
  order, then (``end_of_input``) an end-of-input sentinel in a batch of its own, which drives the
  watermark to Flink's final ``LONG_MAX``.
- ``FileSource``: Spark's file reader, read once or as a stream.
- collections, splits and bounded generators: a bounded DataFrame built on the driver.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from panes.datastream.sources import (
    CollectionSource,
    FileSource,
    GeneratorSource,
    IterableSource,
    MicroBatchSource,
    SplitsSource,
)
from panes.elements import StreamRecord
from panes.spark.codec import END, ROW_DDL, ROW_SCHEMA, dumps


class DataFrameSource:
    """A Spark DataFrame as a source; ``as_`` is ``"dict"``, ``"tuple"`` or ``"row"``."""

    def __init__(self, dataframe: Any, as_: str = "dict") -> None:
        if as_ not in ("dict", "tuple", "row"):
            raise ValueError(f"as_ must be 'dict', 'tuple' or 'row', got {as_!r}")
        self.dataframe = dataframe
        self.as_ = as_

    def is_bounded(self) -> bool:
        return not self.dataframe.isStreaming

    def __repr__(self) -> str:
        kind = "streaming" if self.dataframe.isStreaming else "bounded"
        return f"DataFrameSource({kind}, as {self.as_})"


@dataclass(frozen=True)
class ColumnarInput:
    """A source DataFrame whose rows become values inside the first fused step of its branch (``functions``),
    saving a Python pass: ``code`` is the source's channel code, ``as_`` how rows become values."""

    dataframe: Any
    code: int
    as_: str = "dict"


class RowDecoder:
    """Turns Arrow batches of a source DataFrame into values with ordering numbers unique per partition."""

    def __init__(self, as_: str) -> None:
        from pyspark import TaskContext

        context = TaskContext.get()
        self.base = (context.partitionId() if context is not None else 0) << 40
        self.count = 0
        self.as_ = as_

    def values(self, batch: pa.RecordBatch) -> list[tuple[Any, int]]:
        """``(value, seq)`` for every row of ``batch``."""
        items = batch.to_pylist()
        if self.as_ == "tuple":
            values: list[Any] = [tuple(item.values()) for item in items]
        elif self.as_ == "row":
            from pyspark.sql import Row

            values = [Row(**item) for item in items]
        else:
            values = items
        start = self.count
        self.count += len(values)
        return [(value, self.base | (start + i + 1)) for i, value in enumerate(values)]


# -- explicit micro-batches ---------------------------------------------------------------------------------


class _BatchPartition(InputPartition):
    def __init__(self, index: int) -> None:
        self.index = index


class PanesMicroBatches(DataSource):
    """Spark data source ``panes_micro_batches``: option ``path`` names a pickle of the batches' rows."""

    @classmethod
    def name(cls) -> str:
        return "panes_micro_batches"

    def schema(self) -> str:
        return ROW_DDL

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return _MicroBatchReader(self.options["path"])


class _MicroBatchReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets count lists; each ``latestOffset`` releases one more, so each list is one micro-batch."""

    def __init__(self, path: str) -> None:
        self.path = path
        with open(path, "rb") as handle:
            self.count = len(pickle.load(handle))

    def initialOffset(self) -> dict[str, int]:
        return {"b": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        return None

    def latestOffset(self, start: dict[str, int], limit: Any) -> dict[str, int]:
        return {"b": min(start["b"] + 1, self.count)}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        return [_BatchPartition(i) for i in range(start["b"], end["b"])]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        with open(self.path, "rb") as handle:
            rows = pickle.load(handle)[partition.index]  # type: ignore[attr-defined]
        if rows:
            columns = list(zip(*rows, strict=True))
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array(columns[0], pa.int32()),
                    pa.array(columns[1], pa.binary()),
                    pa.array(columns[2], pa.int64()),
                    pa.array(columns[3], pa.int64()),
                    pa.array(columns[4], pa.int32()),
                ],
                schema=ROW_SCHEMA,
            )

    def commit(self, end: dict[str, int]) -> None:
        return None


def micro_batch_rows(spark: Any, source: MicroBatchSource, code: int, source_id: int, folder: str) -> Any:
    """A streaming DataFrame delivering ``source``'s lists one per micro-batch (plus the sentinel batch)."""
    batches: list[list[tuple[int, bytes, int | None, int, int]]] = []
    seq = 0
    for batch in source.batches:
        rows = []
        for element in batch:
            seq += 1
            record = element if isinstance(element, StreamRecord) else StreamRecord(element)
            rows.append((code, dumps(record.value), record.timestamp, seq, 1))
        batches.append(rows)
    if source.end_of_input:
        batches.append([(END, b"", None, source_id, 1)])
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"source-{source_id}.pickle")
    with open(path, "wb") as handle:
        pickle.dump(batches, handle)
    spark.dataSource.register(PanesMicroBatches)
    return spark.readStream.format("panes_micro_batches").option("path", path).load()


def reads_as_stream(source: Any) -> bool:
    """Whether Spark reads ``source`` as a stream (streaming DataFrames, micro-batches, streaming files)."""
    if isinstance(source, DataFrameSource):
        return not source.is_bounded()
    return isinstance(source, MicroBatchSource) or (isinstance(source, FileSource) and source.streaming)


def source_rows(spark: Any, source: Any, code: int, source_id: int, folder: str | None = None) -> Any:
    """The panes rows of any supported source, as a (streaming or bounded) DataFrame, or, for DataFrames and
    files, a :class:`ColumnarInput` that the branch's first fused step decodes."""
    if isinstance(source, DataFrameSource):
        return ColumnarInput(source.dataframe, code, source.as_)
    if isinstance(source, MicroBatchSource):
        return micro_batch_rows(spark, source, code, source_id, folder or tempfile.mkdtemp(prefix="panes-"))
    if isinstance(source, FileSource):
        reader = spark.readStream if source.streaming else spark.read
        reader = reader.format(source.format).options(**source.options)
        if source.schema is not None:
            reader = reader.schema(source.schema)
        if source.format == "csv" and "header" not in source.options:
            reader = reader.option("header", "true")
        if source.streaming and source.max_files_per_trigger is not None:
            reader = reader.option("maxFilesPerTrigger", str(source.max_files_per_trigger))
        return ColumnarInput(reader.load(source.path), code, "dict")
    if isinstance(source, (CollectionSource, SplitsSource, GeneratorSource, IterableSource)):
        if not source.is_bounded():
            raise ValueError(f"{source!r} is unbounded; on Spark use a streaming DataFrame or micro-batches")
        rows = []
        seq = 0
        for split in range(source.num_splits()):
            for element in source.read_split(split):
                seq += 1
                record = element if isinstance(element, StreamRecord) else StreamRecord(element)
                rows.append((code, dumps(record.value), record.timestamp, seq, 1))
        return spark.createDataFrame(rows, ROW_DDL)
    raise TypeError(f"the Spark runner cannot read {source!r}")
