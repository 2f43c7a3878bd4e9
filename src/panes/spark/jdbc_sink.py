"""A ``JdbcSink`` (PostgreSQL) written by Spark tasks, never the driver: once per micro-batch, exactly once with a
commit table (the default), for a bounded run once.

Each micro-batch's rows of the sink are spread over its ``W`` writers (``W`` is the sink's parallelism,
``add_sink(...).set_parallelism(W)``, default 1; keep it across restarts): an upsert sink's by its key columns, so
every change of one key lands in one writer; a plain ``JdbcSink.sink(sql, ...)``'s by the whole row (one writer with
``W = 1``). The spreading is a hash of the values, the same in every run, so a replayed micro-batch gives each
writer the same rows: Spark's own hash of the columns where the rows are a struct Spark can read (no Python stage),
else a hash computed in Python; with ``W = 1`` no shuffle at all. (A panes version that changes which hash a sink
uses gives a replayed micro-batch's writers other rows: upgrade between runs, not across a crash.) Writer ``i`` is
one Spark task: it takes its rows in stream order (as the local runner sends them: each key's changes, retractions
included, in the order they were made) and writes them with the local runner's writer
(``panes.connectors.postgres.writer``): in one transaction, committed together with its marker ``(sink, run,
micro-batch, i)`` in the commit table, where the run is a digest of the query's checkpoint location. A writer that
finds its marker writes nothing: a micro-batch replayed after a crash (the job killed after its writers committed
and before Spark committed the batch) writes nothing twice, and one whose transaction did not commit is written
again. A replay must bring each writer the same rows (count and digest), else it fails with ``JdbcReplayError``;
deterministic steps over a replayable source do.

Guarantee: exactly once per micro-batch and writer, for any statement, a plain ``INSERT`` included (each
writer's statements of a micro-batch run in one committed transaction, once). Each writer commits on its own: a
micro-batch that fails after some writers committed leaves theirs in the table (its replay skips them).
``commit_table=None``: each writer's rows are committed as sent, at least once (a replay writes them again,
harmless for an upsert, a duplicate for a plain ``INSERT``). With ``W > 1`` a plain sink's rows of one micro-batch
reach the table in stream order per writer, not across writers.

Refused rows: a row the table refuses (a constraint, a type, a value too long) or that does not fit the sink's
type goes to the sink's error output (``sink_to(sink, errors=tag)``) as an ``ErrorRecord`` with the database's
message, or, without one, fails the job (``RefusedRowError`` / ``BadRecordError`` naming the row and the
constraint; the writer's transaction is rolled back). Refusals are known only when the database answers, so each
writer keeps the error records of its micro-batch with its marker, in the same transaction (the commit table's
``refused`` column, Arrow IPC of the error output's rows): a replayed micro-batch whose marker is found gives the
error output the kept rows, neither losing them nor making them again. The commit table is then as trusted as the
query's checkpoint (the kept rows hold pickled values).

An unreachable server or refused credentials fail the job after ``max_retries`` with ``JdbcConnectionError``
saying what to check; a statement that cannot work with ``JdbcStatementError``. No message carries the password.
A micro-batch without rows for the sink opens no connection.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from panes.connectors.jdbc import JdbcSink
from panes.connectors.postgres.rows import RowRefused, RowShape
from panes.connectors.postgres.targets import SqlTarget, UpsertTarget
from panes.datastream.plan import Channel
from panes.datastream.sinks import WriterContext
from panes.elements import StreamRecord
from panes.errors import ErrorRecord
from panes.spark import crash_hook
from panes.spark.failures import carrying_iterators
from panes.spark.layout import (
    ChannelCodes,
    Layout,
    Record,
    channel_mask,
    pack,
    read_records,
    records_in_stream_order,
    unpack,
)
from panes.types import RecordType

SPREAD = "__jdbc_writer"
"""The column holding the hash that chooses a row's writer."""


def check_sink(sink: JdbcSink, name: str, record_type: RecordType | None) -> None:
    """``ValueError`` (before the query starts) when the stream's rows cannot fit the sink's statement: a plain
    statement's parameter count, an upsert's columns and keys (see ``targets``)."""
    shape = RowShape(sink.type_info if sink.type_info is not None else record_type)
    try:
        if isinstance(sink.target, SqlTarget):
            sink.target.check(shape)
        else:
            sink.target.bind(shape)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None


def describe(sink: JdbcSink, writers: int) -> str:
    """How the Spark runner writes ``sink`` with ``writers`` writers (``panes explain``; no password)."""
    spread = "by the key columns" if isinstance(sink.target, UpsertTarget) else "by row"
    tasks = "1 Spark task" if writers == 1 else f"{writers} Spark tasks ({spread})"
    if sink.commit_table is None:
        guarantee = "rows committed as sent, at least once (a replayed micro-batch writes its rows again)"
    else:
        guarantee = f"one transaction per task with its marker in {sink.commit_table}, exactly once per micro-batch"
    return f"{sink.target.describe()} at {sink.connection_options.display_url}: written by {tasks}, {guarantee}"


def spread_key(sink: JdbcSink, record_type: RecordType | None) -> Callable[[Any], int]:
    """The hash choosing a value's writer: of an upsert's key columns, of a plain statement's whole row; the same
    in every process (not Python's ``hash``). A value that is not a row hashes to 0 (its writer refuses it)."""
    make_row = RowShape(sink.type_info if sink.type_info is not None else record_type).row_maker()
    keys = sink.target.keys if isinstance(sink.target, UpsertTarget) else None

    def key(value: Any) -> int:
        try:
            row = make_row(value)
        except RowRefused:
            return 0
        chosen = tuple(row.get(k) for k in keys) if keys is not None else tuple(row.values())
        digest = hashlib.blake2b(repr(chosen).encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big", signed=True)

    return key


def spreader(
    sink: JdbcSink, record_type: RecordType | None, codes: ChannelCodes, wanted: list[int]
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``mapInArrow`` function adding :data:`SPREAD` to rows of channels ``wanted`` (all the rows it gets): the
    spreading where Spark cannot hash the columns itself (see :func:`spread_columns`)."""
    key = spread_key(sink, record_type)

    @carrying_iterators
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            records = read_records(batch, codes, channel_mask(batch, wanted))
            spread = pa.array([key(r.value) for r in records], pa.int64())
            yield pa.RecordBatch.from_arrays(
                [*batch.columns, spread], schema=batch.schema.append(pa.field(SPREAD, pa.int64()))
            )

    return run


def spread_columns(sink: JdbcSink, codes: ChannelCodes, wanted: list[int]) -> list[Any] | None:
    """The Spark columns whose hash (Spark's own Murmur3, the same in every process and run) chooses a row's
    writer, when Spark can read them: every channel in ``wanted`` carries one struct type, the sink declares no
    type of its own (its rows are the struct's fields as they are) and the struct holds the upsert's key columns
    (a plain statement spreads by every field). ``None`` otherwise: the rows are spread in Python
    (:func:`spreader`)."""
    types = {codes.types[code] for code in wanted}
    if sink.type_info is not None or len(types) != 1:
        return None
    [record_type] = types
    if record_type is None or record_type.shape == "scalar":
        return None
    fields = record_type.columns().names
    keys = list(sink.target.keys) if isinstance(sink.target, UpsertTarget) else fields
    if not set(keys) <= set(fields):
        return None
    return [F.coalesce(*(F.col(codes.column(code))[key] for code in wanted)) for key in keys]


def transactional_writer(
    sink: JdbcSink,
    name: str,
    key: str,
    record_type: RecordType | None,
    codes: ChannelCodes,
    wanted: list[int],
    errors: Layout,
    error_channel: Channel | None,
    writers: int,
    run: str,
    batch_id: int,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``mapInArrow`` function of writer ``i`` (the task's partition): writes its rows of micro-batch ``batch_id``
    (see the module docstring) and gives the rows refused in it as rows of ``errors`` (the error output's layout;
    none without ``error_channel``, where a refused row fails the task)."""

    # values decoded from columns of the sink's own row type need no conforming
    canonical = sink.type_info is None and {codes.types[code] for code in wanted} == {record_type}

    @carrying_iterators
    def run_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        records = records_in_stream_order(batches, codes, wanted)
        if not records:
            return
        context = TaskContext.get()
        index = 0 if context is None else context.partitionId()
        of_record: dict[int, Record] = {}
        refused: list[Record] = []

        def refuse(record: StreamRecord[Any], failure: ErrorRecord) -> None:
            assert error_channel is not None
            origin = of_record[id(record)]
            refused.append(Record(error_channel, failure, origin.timestamp, origin.seq, origin.phase))

        from panes.connectors.postgres.writer import PostgresWriter

        writer = sink.create_writer(index, writers)
        assert isinstance(writer, PostgresWriter)
        where = WriterContext(
            key, f"{name} ({index + 1}/{writers})", record_type, None if error_channel is None else refuse
        )
        writer.canonical_values = canonical
        try:
            writer.open(where)
            writer.restore_state({"run_id": run, "checkpoint": batch_id})  # the marker names the micro-batch
            writer.keep_refused = lambda: pack([errors.encode(refused)], errors.schema) if refused else None
            writer.before_commit = lambda: crash_hook.reached("jdbc_open", batch_id)
            for record in records:
                streamed = StreamRecord(record.value, record.timestamp)
                of_record[id(streamed)] = record
                writer.write(streamed)
            writer.flush(True)
            crash_hook.reached("jdbc", batch_id)
            replayed = writer.replayed
        except BaseException:
            writer.abort()
            raise
        finally:
            writer.close()
        if replayed is not None:
            if replayed.refused is not None:
                yield from unpack(replayed.refused)
        elif refused:
            yield errors.encode(refused)

    return run_task


def write_jdbc(
    batch: Any,
    batch_id: int,
    sink: JdbcSink,
    name: str,
    key: str,
    record_type: RecordType | None,
    codes: ChannelCodes,
    wanted: list[int],
    error_code: int | None,
    writers: int,
    run: str,
) -> Any:
    """Write the rows of channels ``wanted`` of ``batch`` to ``sink`` (see the module docstring); the rows it
    refused as a persisted DataFrame in the error output's layout (for the caller to write and unpersist), or
    ``None`` when the sink has no error output."""
    rows = batch.filter(F.col("ch").isin(wanted))
    if writers == 1:
        spread = rows.coalesce(1)  # ``batch`` is persisted: one task reads its partitions, no shuffle
    elif (columns := spread_columns(sink, codes, wanted)) is not None:
        spread = rows.repartition(writers, *columns)
    else:
        schema = StructType([*rows.schema.fields, StructField(SPREAD, LongType())])
        spread = rows.mapInArrow(spreader(sink, record_type, codes, wanted), schema).repartition(writers, SPREAD)
    error_channel = None if error_code is None else codes.channel[error_code]
    errors = Layout(codes, [] if error_channel is None else [error_channel])
    write = transactional_writer(
        sink, name, key, record_type, codes, wanted, errors, error_channel, writers, run, batch_id
    )
    refused = spread.mapInArrow(write, errors.ddl())
    if error_channel is None:
        refused.collect()  # nothing: a refused row failed the job
        return None
    refused = refused.persist()
    refused.count()  # the writers run once; their refused rows stay for the error output's sinks
    return refused
