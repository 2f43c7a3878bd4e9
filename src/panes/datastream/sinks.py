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
