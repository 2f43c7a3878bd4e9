"""Writing the query's sink channels: on the driver, once per micro-batch (or once for a bounded run).

``ListSink`` and ``PrintSink`` receive the records in the caller's process; ``FileSink`` writes
``path/batch=<id>`` in overwrite mode, so a batch replayed after a restart replaces its own output
(exactly-once); ``ForeachBatchSink`` hands a DataFrame of the batch's values to user code; ``MemorySink``
keeps everything so far as a temporary view. The batch's rows are collected once (a single action), so the
stateful operators run once per batch.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from panes.datastream.sinks import FileSink, FunctionSink, ListSink, PrintSink, Sink, as_row, deliver
from panes.elements import StreamRecord
from panes.spark.codec import ChannelCodes, loads
from panes.spark.linear import Step


class ForeachBatchSink(Sink):
    """Calls ``function(dataframe, batch_id)`` per micro-batch with the values as a DataFrame (see ``FileSink``
    for how values become columns; ``schema`` fixes them)."""

    def __init__(self, function: Callable[[Any, int], None], schema: str | None = None) -> None:
        self.function = function
        self.schema = schema


class MemorySink(Sink):
    """Keeps every value written so far as rows of the temporary view ``table``."""

    def __init__(self, table: str, schema: str | None = None) -> None:
        self.table = table
        self.schema = schema
        self.rows: list[dict[str, Any]] = []


def values_dataframe(spark: Any, values: list[Any], schema: str | None) -> Any:
    rows = [as_row(value) for value in values]
    if schema is not None:
        return spark.createDataFrame([tuple(row.values()) for row in rows], schema)
    if not rows:
        return None
    import pandas as pd

    return spark.createDataFrame(pd.DataFrame(rows))


class SinkWriter:
    """Dispatches the collected rows of one batch to the sinks of the plan."""

    def __init__(self, steps: list[Step], codes: ChannelCodes) -> None:
        self.sinks: list[tuple[Any, set[int]]] = []
        for step in steps:
            if step.kind == "sink":
                self.sinks.append((step.transformation.sink, set(codes.codes(step.consumed))))  # type: ignore[attr-defined]
        self.codes = codes

    def wanted_codes(self) -> list[int]:
        return sorted({code for _, codes in self.sinks for code in codes})

    def write(self, spark: Any, rows: list[Any], batch_id: int) -> None:
        ordered = sorted(rows, key=lambda r: (r["ph"], r["seq"]))
        decoded = [(row["ch"], StreamRecord(loads(row["v"]), row["ts"])) for row in ordered]
        for sink, codes in self.sinks:
            _write(spark, sink, [record for code, record in decoded if code in codes], batch_id)


def _write(spark: Any, sink: Any, records: list[StreamRecord[Any]], batch_id: int) -> None:
    if isinstance(sink, (ListSink, PrintSink, FunctionSink)):
        for record in records:
            deliver(sink, record)
    elif isinstance(sink, FileSink):
        frame = values_dataframe(spark, [r.value for r in records], sink.schema)
        if frame is not None:
            frame.write.mode("overwrite").format(sink.format).option("header", "true").save(
                os.path.join(sink.path, f"batch={batch_id}")
            )
    elif isinstance(sink, ForeachBatchSink):
        frame = values_dataframe(spark, [r.value for r in records], sink.schema)
        if frame is not None:
            sink.function(frame, batch_id)
    elif isinstance(sink, MemorySink):
        sink.rows.extend(as_row(r.value) for r in records)
        frame = values_dataframe(spark, [dict(row) for row in sink.rows], sink.schema)
        if frame is not None:
            frame.createOrReplaceTempView(sink.table)
    else:
        raise TypeError(f"the Spark runner cannot write to {sink!r}")
