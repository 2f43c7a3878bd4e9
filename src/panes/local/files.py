"""File sinks of the local runner: one schema per sink, values checked as they arrive, files written at the end.

The schema is the sink's declared one, else the stream's type, else inferred from the records in arrival
order: the first record decides, and a field that is ``None`` there is typed by the next of the first
:data:`SAMPLE` records that has one (records wait until the schema is known). A value that does not fit
fails the job with the reason, or goes to the sink's error output as an ``ErrorRecord``. When the job ends
everything is written to ``path/batch=0/part-00000.<format>`` — the layout the Spark runner gives one
micro-batch, so both read back alike.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from panes.datastream.file_format import clear_batch, write_table, write_text_parts
from panes.datastream.sinks import FileSink, inferred_row_type, refusal, sink_row_type
from panes.elements import StreamRecord
from panes.errors import BadRecordError, ErrorRecord
from panes.types import RecordType, SchemaInferenceError, SchemaMismatchError

SAMPLE = 1000
"""How many records (in arrival order) inference may look at to type fields that are ``None`` in the first."""

Refuse = Callable[[StreamRecord[Any], ErrorRecord], None]


class LocalFileSink:
    """The rows a ``FileSink`` receives in this process, checked against its schema (see the module docstring).

    ``refuse`` receives each refused record with its ``ErrorRecord``; ``None`` means refused values raise.
    ``canonical`` says that every value arrives already in the canonical form of ``schema``'s rows, a fresh
    value no other step holds (:func:`canonical_input`): it is kept as it is, since conforming it again would
    give an equal value."""

    def __init__(
        self, sink: FileSink, name: str, schema: RecordType | None, refuse: Refuse | None, canonical: bool = False
    ) -> None:
        self.sink = sink
        self.name = name
        self.schema = schema
        """The rows' type when known before any value (``sink_stream_type``), else inferred from the first."""
        self.refuse = refuse
        self.canonical = canonical and schema is not None
        self.pending: list[StreamRecord[Any]] = []
        self.rows: list[Any] = []

    def add(self, record: StreamRecord[Any]) -> None:
        if self.schema is None:
            self.pending.append(record)
            if len(self.pending) >= SAMPLE or not _unresolved(self.pending):
                self._settle(final=False)
            return
        self._add(record)

    def _add(self, record: StreamRecord[Any]) -> None:
        assert self.schema is not None
        if self.canonical:
            self.rows.append(record.value)
            return
        try:
            self.rows.append(self.schema.conform(self.sink.row_of(record.value)))
        except SchemaMismatchError as error:
            reason = refusal(self.name, self.schema, error)
            if self.refuse is None:
                raise BadRecordError(f"{reason}; value: {record.value!r}") from error
            self.refuse(record, ErrorRecord(record.value, record.timestamp, reason, type(error).__name__, self.name))

    def _settle(self, final: bool) -> None:
        """Infer the schema from the waiting records (when enough are there, or at the end) and check them."""
        if not self.pending:
            return
        try:
            self.schema = inferred_row_type([r.value for r in self.pending])
        except SchemaInferenceError:
            if not final and len(self.pending) < SAMPLE:
                return
            raise
        waiting, self.pending = self.pending, []
        for record in waiting:
            self._add(record)

    def finish(self) -> None:
        """Settle a schema still waiting for records (the input ended)."""
        if self.schema is None:
            self._settle(final=True)

    def write(self, now_ms: int) -> None:
        """Write the rows to ``path/batch=0/`` (``path/<bucket>/batch=0/`` for a text sink with a bucket of
        the wall-clock time ``now_ms``), replacing what a previous run wrote there."""
        if self.schema is None:
            return
        sink = self.sink
        clear_batch(sink.path, 0)
        folder = sink.batch_folder(0, now_ms)
        os.makedirs(folder)
        if sink.format == "text":
            write_text_parts([row["value"] for row in self.rows], folder, sink, 0)
            return
        columns = self.schema.columns()
        struct = self.schema.encode(self.rows)
        table = pa.Table.from_arrays([struct.field(i) for i in range(len(columns))], schema=columns)
        write_table(table, os.path.join(folder, sink.part_name(0)), sink.format)


def canonical_input(sink: FileSink, schema: RecordType | None, inputs: list[tuple[RecordType | None, int]]) -> bool:
    """Whether every value reaching a file sink of ``schema`` is a canonical row of it that no other step holds:
    each of its ``inputs`` (per input edge, the type its sender conforms the edge's values to, ``None`` when it
    conforms none, and how many edges take that sender's values on that output) is a record type of dict shape
    whose rows are ``schema``, taken by that edge alone, and the sink writes rows rather than text lines."""
    if schema is None or sink.format == "text" or not inputs:
        return False
    return all(
        checked is not None and checked.shape == "dict" and sink_row_type(checked) == schema and takers == 1
        for checked, takers in inputs
    )


def _unresolved(records: list[StreamRecord[Any]]) -> bool:
    try:
        inferred_row_type([r.value for r in records])
    except SchemaInferenceError:
        return True
    return False
