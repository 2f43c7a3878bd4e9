"""Sinks every runner understands: a list in the caller's process, printing, and a user ``SinkFunction``.

The Spark runner adds file, console, memory-table and ``foreach_batch`` sinks (``panes.spark``).
"""

from __future__ import annotations

from typing import Any

from panes.elements import StreamRecord
from panes.functions.stream import SinkFunction, as_sink_function


class Sink:
    """Marker base of sinks."""


class ListSink(Sink):
    """Collects every record in order: ``values`` (the values) and ``records`` (with timestamps)."""

    def __init__(self) -> None:
        self.records: list[StreamRecord[Any]] = []

    @property
    def values(self) -> list[Any]:
        return [record.value for record in self.records]

    def add(self, record: StreamRecord[Any]) -> None:
        self.records.append(record)

    def clear(self) -> None:
        self.records.clear()

    def __repr__(self) -> str:
        return f"ListSink({len(self.records)} records)"


class PrintSink(Sink):
    """Prints each value (``prefix> value``, PyFlink's ``print()``)."""

    def __init__(self, prefix: str | None = None) -> None:
        self.prefix = prefix

    def line(self, value: Any, subtask: int, parallelism: int) -> str:
        head = [self.prefix] if self.prefix else []
        if parallelism > 1:
            head.append(str(subtask + 1))
        return f"{':'.join(head)}> {value}" if head else str(value)

    def __repr__(self) -> str:
        return "PrintSink"


class FunctionSink(Sink):
    """Calls a ``SinkFunction`` (or a callable ``value -> None``) for every value."""

    def __init__(self, function: SinkFunction[Any] | Any) -> None:
        self.function = as_sink_function(function)

    def __repr__(self) -> str:
        return f"FunctionSink({type(self.function).__name__})"


def deliver(sink: Sink, record: StreamRecord[Any], subtask: int = 0, parallelism: int = 1) -> bool:
    """Hand ``record`` to a sink that lives in this process (list, print, function); False for other sinks,
    which each runner writes its own way."""
    if isinstance(sink, ListSink):
        sink.add(record)
    elif isinstance(sink, PrintSink):
        print(sink.line(record.value, subtask, parallelism))
    elif isinstance(sink, FunctionSink):
        sink.function.invoke(record.value, record)
    else:
        return False
    return True


class FileSink(Sink):
    """Writes values as rows of files under directory ``path`` (``format`` parquet, json or csv).

    Values become columns: a dict's keys, a tuple's positions (``_1``, ``_2``, ...), a dataclass's fields,
    otherwise one ``value`` column. ``schema`` (a Spark DDL string) fixes the columns; without it they are
    inferred from the values. The Spark runner writes each micro-batch to ``path/batch=<id>``, replacing
    it when a batch is replayed after a restart (exactly-once); the local runner writes ``path/part-0``.
    """

    def __init__(self, path: str, format: str = "parquet", schema: str | None = None) -> None:
        from panes.datastream.sources import FILE_FORMATS

        if format not in FILE_FORMATS:
            raise ValueError(f"format must be one of {FILE_FORMATS}, got {format!r}")
        self.path = path
        self.format = format
        self.schema = schema

    def __repr__(self) -> str:
        return f"FileSink({self.path!r}, {self.format})"


def as_row(value: Any) -> dict[str, Any]:
    """A value as a dict of columns (see :class:`FileSink`)."""
    import dataclasses

    if isinstance(value, dict):
        return dict(value)
    if hasattr(value, "asDict"):
        return dict(value.asDict())
    if hasattr(value, "_asdict"):
        return dict(value._asdict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (tuple, list)):
        return {f"_{i + 1}": item for i, item in enumerate(value)}
    return {"value": value}
