"""Sinks every runner understands: a list in the caller's process, printing, and a user ``SinkFunction``.

The Spark runner adds file, console, memory-table and ``foreach_batch`` sinks (``panes.spark``).
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from panes.elements import StreamRecord
from panes.errors import ERROR_RECORD_DDL, ErrorRecord
from panes.functions.stream import SinkFunction, as_sink_function
from panes.types import RecordType, Row, infer_record_type
from panes.types.row import as_row


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
    """Prints each value (``prefix> value``, PyFlink's ``print()``): as PyFlink prints it when ``stream`` (the
    step whose values it prints) has a declared type (``panes.datastream.printing``), else as Python's ``str``."""

    def __init__(self, prefix: str | None = None, stream: Any = None) -> None:
        self.prefix = prefix
        self.stream = stream
        self._type: tuple[RecordType | None] | None = None

    def line(self, value: Any, subtask: int, parallelism: int) -> str:
        from panes.datastream.printing import printed

        head = [self.prefix] if self.prefix else []
        if parallelism > 1:
            head.append(str(subtask + 1))
        text = printed(value, self._stream_type())
        return f"{':'.join(head)}> {text}" if head else text

    def _stream_type(self) -> RecordType | None:
        """The declared type of the printed stream (worked out once; ``None`` without one)."""
        if self._type is None:
            self._type = (None if self.stream is None else stream_type(self.stream),)
        return self._type[0]

    def __repr__(self) -> str:
        return "PrintSink"


class FunctionSink(Sink):
    """Calls a ``SinkFunction`` (or a callable ``value -> None``) for every value."""

    def __init__(self, function: SinkFunction[Any] | Any) -> None:
        self.function = as_sink_function(function)

    def __repr__(self) -> str:
        return f"FunctionSink({type(self.function).__name__})"


class SinkWriter(ABC):
    """Writes the records one parallel instance of a :class:`WriterSink` receives (Flink's ``SinkWriter``)."""

    @abstractmethod
    def write(self, record: StreamRecord[Any]) -> None:
        """Write ``record`` (or buffer it); raise to fail the job."""

    @abstractmethod
    def flush(self, end_of_input: bool) -> None:
        """Make what was written so far durable (and, for a transactional writer, committed): called when the job
        is snapshotted and, with ``end_of_input``, when it ends."""

    def abort(self) -> None:
        """The job failed: drop what was not flushed (abort an open transaction). Nothing by default."""

    def close(self) -> None:
        """Release what the writer holds; called once, after :meth:`flush` or :meth:`abort`."""

    def open(self, context: WriterContext) -> None:
        """Called once by the runner after :meth:`WriterSink.create_writer`, before anything else: where the writer
        runs (:class:`WriterContext`). Nothing by default; raise to fail the job before it reads anything."""

    def snapshot_state(self) -> Any:
        """What the writer keeps in the job's snapshot, taken after :meth:`flush` (Flink's ``snapshotState``):
        ``None`` (the default) for nothing; else a picklable value :meth:`restore_state` gets back."""
        return None

    def restore_state(self, state: Any) -> None:
        """Resume from what :meth:`snapshot_state` returned (the job is restored from a snapshot), after
        :meth:`open` and before the first record. Nothing by default."""


@dataclass(frozen=True)
class WriterContext:
    """Where a :class:`SinkWriter` runs, as the runner tells it (:meth:`SinkWriter.open`): the sink step's uid
    (``sink_id``, stable across restarts when set with ``.uid()``), the instance's name for messages
    (``operator``), the declared type of the stream it writes (``record_type``, ``None`` without one), and
    ``refuse``: where a value the sink refuses goes with its ``ErrorRecord`` (the sink's error output,
    ``sink_to(sink, errors=tag)``), or ``None`` when the sink has none (a refused value then fails the job)."""

    sink_id: str
    operator: str
    record_type: RecordType | None = None
    refuse: Callable[[StreamRecord[Any], ErrorRecord], None] | None = None


class WriterSink(Sink):
    """A sink written through one :class:`SinkWriter` per parallel instance (Flink's ``Sink``): a runner that
    supports it calls :meth:`create_writer` when the job starts."""

    @abstractmethod
    def create_writer(self, subtask: int, parallelism: int) -> SinkWriter:
        """The writer of instance ``subtask`` of ``parallelism``; raise when the sink cannot be written to (the job
        then fails before it reads anything)."""


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
    """Writes values as rows of files under directory ``path`` (``format`` parquet, json, csv or text).

    Values become columns: a dict's keys, a tuple's positions (``_1``, ``_2``, ...), a dataclass's fields, a
    ``Row``'s fields, otherwise one ``value`` column. The columns are one schema for the life of the job:
    ``schema`` (a Spark DDL string such as ``"user STRING, n BIGINT"``, a pyarrow schema or a
    ``Types.ROW_NAMED(...)``) when given; else the stream's type when it has one (``output_type``); else
    inferred once from the first record (a field that is ``None`` there is typed by the next records that
    have it). A value that does not fit is a bad record: the job fails with the reason, or it goes to the
    sink's error output (``sink_to_files(..., errors=tag)``). Files go to ``path/batch=<id>/``: on Spark one
    directory per micro-batch, replaced when a batch is replayed after a restart (exactly-once); the local
    runner writes everything to ``path/batch=0/`` when the job ends. Read them back with Spark or pyarrow
    from ``path`` (the ``batch`` directories appear as a ``batch`` column).

    ``format="text"`` writes one line per value, ``encoder(value)`` (default ``str``), in ``charset``: its rows
    are the one column ``value STRING`` (no ``schema``). Its files are ``<part_prefix>-<part>-<n><part_suffix>``
    (default ``part-00000-0.txt``): each task writes one part per micro-batch, a new one (``n + 1``) whenever
    the next line would take the part past ``part_size`` bytes (``None``: no limit). With ``bucket`` (a
    function of the processing time in milliseconds to a folder name, see
    ``panes.connectors.file_system.BucketAssigner``) a batch goes to ``path/<bucket>/batch=<id>/``, the bucket
    of the wall-clock time it is committed (a replayed batch replaces its folder in whichever bucket it was). Raises
    ``ValueError`` for another format, a ``schema`` on a text sink, or text options on another format.
    """

    def __init__(
        self,
        path: str,
        format: str = "parquet",
        schema: Any = None,
        *,
        encoder: Callable[[Any], str] | None = None,
        charset: str = "UTF-8",
        part_prefix: str = "part",
        part_suffix: str | None = None,
        part_size: int | None = None,
        bucket: Callable[[int], str] | None = None,
    ) -> None:
        from panes.datastream.sources import FILE_FORMATS

        if format not in FILE_FORMATS:
            raise ValueError(f"format must be one of {FILE_FORMATS}, got {format!r}")
        text = format == "text"
        if text and schema is not None:
            raise ValueError("a text file sink has no schema: each value is one line, encoder(value)")
        given = (
            [
                name
                for name, value in (
                    ("encoder", encoder),
                    ("part_suffix", part_suffix),
                    ("part_size", part_size),
                    ("bucket", bucket),
                )
                if value is not None
            ]
            + (["part_prefix"] if part_prefix != "part" else [])
            + (["charset"] if charset != "UTF-8" else [])
        )
        if given and not text:
            raise ValueError(f"{', '.join(given)}: only a text file sink takes these, not a {format} one")
        if part_size is not None and part_size <= 0:
            raise ValueError(f"part_size must be positive (bytes), got {part_size}")
        self.path = path
        self.format = format
        self.schema = TEXT_ROW if text else schema
        self.encoder: Callable[[Any], str] = encoder if encoder is not None else str
        self.charset = charset
        self.part_prefix = part_prefix
        self.part_suffix = ".txt" if part_suffix is None else part_suffix
        self.part_size = part_size
        self.bucket = bucket
        self.record_type = sink_type(self)
        if self.record_type is not None and format == "csv":
            check_flat(self.record_type)

    def row_of(self, value: Any) -> Any:
        """``value`` as the form the sink's row type conforms (:func:`as_sink_row`; a text sink's line)."""
        if self.format == "text":
            return {"value": self.encoder(value)}
        return as_sink_row(value)

    def batch_folder(self, batch_id: int, now_ms: int, root: str | None = None) -> str:
        """Where batch ``batch_id`` goes when committed at processing time ``now_ms``: ``<root>/batch=<id>``, or
        ``<root>/<bucket>/batch=<id>`` with a bucket; ``root`` defaults to ``path``."""
        import os

        base = self.path if root is None else root
        bucket = "" if self.bucket is None else self.bucket(now_ms)
        return os.path.join(base, bucket, f"batch={batch_id}") if bucket else os.path.join(base, f"batch={batch_id}")

    def part_name(self, part: int, n: int = 0) -> str:
        """The name of a file of the sink: part ``part`` (a task's), its ``n``-th piece for a text sink."""
        from panes.datastream.file_format import EXTENSIONS

        if self.format == "text":
            return f"{self.part_prefix}-{part:05d}-{n}{self.part_suffix}"
        return f"part-{part:05d}.{EXTENSIONS[self.format]}"

    def __repr__(self) -> str:
        return f"FileSink({self.path!r}, {self.format})"


TEXT_ROW = "value STRING"
"""The rows of a text file sink: the line (``FileSink.row_of``)."""


def sink_row(sink: Any, value: Any) -> Any:
    """``value`` as the form ``sink``'s row type conforms (a file sink's :meth:`FileSink.row_of`)."""
    return sink.row_of(value) if isinstance(sink, FileSink) else as_sink_row(value)


def error_row_type() -> RecordType:
    """The rows of an error output in a sink (:data:`~panes.errors.ERROR_RECORD_DDL`)."""
    found = RecordType.of(ERROR_RECORD_DDL)
    assert found is not None
    return sink_row_type(found)


def stream_type(transformation: Any) -> RecordType | None:
    """The declared type of the values ``transformation`` emits (``None`` when they have none, or several)."""
    from panes.datastream.plan import Plan, SinkTransformation, resolve_types, shared_type, stream_channels

    probe = SinkTransformation(name="type", inputs=(transformation,), sink=ListSink())
    types = resolve_types(Plan((probe,)))
    return shared_type(types.get(channel) for channel in stream_channels(transformation))


def sink_stream_type(sink: Any, channel_types: list[RecordType | None], error_output: bool) -> RecordType | None:
    """The row type a sink writes when it is known before any value arrives: the one it declares, else its
    stream's type (one type over its channels), else, for an error output, :func:`error_row_type`."""
    declared = sink_type(sink)
    if declared is not None:
        return declared
    from panes.datastream.plan import shared_type

    found = shared_type(channel_types)
    if found is not None:
        return sink_row_type(found)
    return error_row_type() if error_output else None


def inferred_row_type(values: list[Any]) -> RecordType:
    """The row type of a sink that declares none, from its first values (``SchemaInferenceError`` when they do
    not tell): an error output's (``ErrorRecord`` values) is always :data:`~panes.errors.ERROR_RECORD_DDL`."""
    if values and all(isinstance(value, ErrorRecord) for value in values):
        return error_row_type()
    return sink_row_type(infer_record_type([as_row(value) for value in values]))


def sink_row_type(record_type: RecordType) -> RecordType:
    """A record type as the rows of a sink: its columns, values as dicts."""
    return RecordType(pa.struct(list(record_type.columns())), "dict")


def sink_type(sink: Any) -> RecordType | None:
    """The row type a sink declares (its ``schema``), or ``None``."""
    schema = getattr(sink, "schema", None)
    declared = None if schema is None else RecordType.of(schema)
    return None if declared is None else sink_row_type(declared)


def check_flat(record_type: RecordType) -> None:
    """CSV holds plain columns only: raise ``ValueError`` naming a nested column."""
    for f in record_type.columns():
        if pa.types.is_nested(f.type):
            raise ValueError(f"CSV files cannot hold column {f.name!r} of type {f.type}; use parquet or json")


def as_sink_row(value: Any) -> Any:
    """A value in the form a sink's row type conforms: an ``ErrorRecord`` as its row
    (:data:`~panes.errors.ERROR_RECORD_DDL`), records (dicts, tuples, rows, dataclasses, objects with ``asDict``)
    as they are, any other value as a one-field tuple (the ``value`` column)."""
    if isinstance(value, ErrorRecord):
        return value.as_row()
    if isinstance(value, (dict, tuple, list, Row)) or hasattr(value, "asDict") or hasattr(value, "_asdict"):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return value
    return (value,)


def refusal(sink_name: str, schema: RecordType, error: Exception) -> str:
    """Why a sink refuses a value (the ``ErrorRecord`` reason; a failure's message)."""
    return f"{sink_name}: the value does not fit the sink's schema {schema.ddl()}: {error}"


def sink_name(transformation: Any) -> str:
    """How refusals name a sink (its transformation's name and the sink)."""
    return f"{transformation.name} {transformation.sink!r}"
