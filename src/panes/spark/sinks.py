"""Writing a plan's sinks from the query's final rows: by Spark tasks, on the executors.

Once per micro-batch (``foreachBatch``; once for a bounded run) the batch's rows are persisted, so the
stateful operators run once, and each sink writes the rows of its channels:

- ``FileSink``: the values as columns of the sink's schema, written by Spark to ``path/batch=<id>`` in
  overwrite mode, so a batch replayed after a restart replaces its own output (exactly-once);
- ``ForeachBatchSink``: the user's function receives a DataFrame of the values (it stays on the executors);
- ``KafkaSink``: the tasks serialize and produce the records, exactly once through Kafka transactions when asked
  (``panes.spark.kafka.sink``);
- ``JdbcSink``: the tasks write PostgreSQL, one transaction per writer and micro-batch with its marker, exactly
  once (``panes.spark.jdbc_sink``); the rows the table refused go to the sink's error output after it;
- ``ListSink``, ``PrintSink``, ``FunctionSink``, ``MemorySink`` exist to bring results to the driver: their
  rows, and only theirs, are collected (one action per batch for all of them) and delivered in order.

A sink's schema is the one it declares; else its channels' type when they share one; else it is inferred
once, from the first non-empty batch (the first record in stream order decides; a field that is ``None``
there is typed by the next of the first :data:`SAMPLE` records that has one), and stored with the
checkpoint so a restarted query keeps it. A value that does not fit the schema fails the job with the reason,
or, when the sink has an error output (``errors=tag``), goes there as an ``ErrorRecord``.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import functions as F

from panes.connectors.jdbc import JdbcSink
from panes.connectors.kafka.sink import KafkaSink
from panes.datastream.plan import error_output_channels, shared_type
from panes.datastream.sinks import (
    FileSink,
    FunctionSink,
    ListSink,
    PrintSink,
    Sink,
    as_sink_row,
    deliver,
    inferred_row_type,
    refusal,
    sink_name,
    sink_row,
    sink_row_type,
    sink_stream_type,
    sink_type,
)
from panes.elements import StreamRecord
from panes.errors import BadRecordError, ErrorRecord
from panes.spark.commits import batch_folder, commit_batch, local_path, staged_folder, stages
from panes.spark.failures import carrying_iterators
from panes.spark.jdbc_sink import check_sink as check_jdbc_sink
from panes.spark.jdbc_sink import write_jdbc
from panes.spark.kafka.sink import check_sink, write_kafka
from panes.spark.layout import ChannelCodes, Layout, Record, channel_mask, read_records
from panes.spark.linear import Step
from panes.types import RecordType, SchemaMismatchError, infer_record_type
from panes.types.row import as_row

SAMPLE = 1000
"""How many records (in stream order) schema inference may look at to type fields that are ``None`` in the
first record."""


class ForeachBatchSink(Sink):
    """Calls ``function(dataframe, batch_id)`` for each micro-batch that has values for it, with the values as a
    DataFrame (columns as for ``FileSink``; ``schema`` fixes them). The DataFrame's rows stay on the executors."""

    def __init__(self, function: Callable[[Any, int], None], schema: Any = None) -> None:
        self.function = function
        self.schema = schema


class MemorySink(Sink):
    """Keeps every value written so far as rows of the temporary view ``table`` (in the driver's memory, as
    Spark's own memory sink: for tests and small results)."""

    def __init__(self, table: str, schema: Any = None) -> None:
        self.table = table
        self.schema = schema
        self.rows: list[dict[str, Any]] = []


DRIVER_SINKS = (ListSink, PrintSink, FunctionSink, MemorySink)


@dataclass
class SinkTarget:
    """One sink of the plan as the query writes it: its channels, its schema (``None``: to be inferred), and
    the error channel its refused values go to (``None``: they fail the job)."""

    step: Step
    sink: Any
    codes: list[int]
    schema: RecordType | None
    key: str
    error_code: int | None = None
    stored: bool = False

    @property
    def name(self) -> str:
        return sink_name(self.step.transformation)

    @property
    def encodes(self) -> bool:
        """Whether each value is encoded (a text file sink's lines), even a value that has the sink's columns."""
        return isinstance(self.sink, FileSink) and self.sink.format == "text"


@dataclass
class SinkWriter:
    """Writes every sink of a plan from a batch DataFrame in ``layout`` (see the module docstring).

    ``schema_folder`` keeps inferred schemas (``None``: not kept). ``stage_folder`` is for Spark Connect,
    where ``foreachBatch`` runs on the server: driver sinks' rows are then staged there (Parquet, one folder
    per batch, replaced when a batch is replayed) and :meth:`deliver_staged` hands them to the client's sinks.
    The writer holds no session (it travels to the server): actions use the batch's own.
    """

    steps: list[Step]
    codes: ChannelCodes
    schema_folder: str | None
    stage_folder: str | None = None
    session: Any = None
    """The caller's session, for driver sinks that make views in it (``MemorySink``): a micro-batch's own
    session is a clone of the query's, whose views the caller does not see. Unset over Spark Connect."""
    run: str | None = None
    """The name of the query's run, which an exactly-once Kafka sink's markers carry (``panes.spark.kafka.sink``;
    ``None``: a bounded run, named afresh each time)."""
    targets: list[SinkTarget] = field(default_factory=list)
    _staged: list[FileSink] = field(default_factory=list)
    """The file sinks that staged the batch being written, to commit when every sink wrote it."""

    def __post_init__(self) -> None:
        error_outputs = error_output_channels(step.transformation for step in self.steps)
        for step in self.steps:
            if step.kind != "sink":
                continue
            sink = step.transformation.sink  # type: ignore[attr-defined]
            if isinstance(sink, FileSink) and sink.format == "text" and local_path(sink.path) is None:
                raise ValueError(
                    f"{sink!r}: on Spark a text file sink writes a local path (or a folder every executor mounts); "
                    "write Parquet, JSON or CSV (sink_to_files) to other file systems"
                )
            if isinstance(sink, KafkaSink):
                check_sink(sink, sink_name(step.transformation))
            codes = self.codes.codes(step.consumed)
            if isinstance(sink, JdbcSink):
                check_jdbc_sink(sink, sink_name(step.transformation), self.stream_type(codes))
            errors = step.consumed <= error_outputs
            schema = sink_stream_type(sink, [self.codes.types[code] for code in codes], bool(codes) and errors)
            error_tag = step.transformation.error_tag
            error_code = None
            if error_tag is not None:
                error_code = self.codes.code.get((step.transformation.id, error_tag.tag_id))
            key = step.transformation.uid or f"{step.index}-{type(sink).__name__}"
            self.targets.append(SinkTarget(step, sink, codes, schema, key, error_code))

    def stream_type(self, codes: list[int]) -> RecordType | None:
        """The declared type of the stream of channels ``codes`` (``None``: none, or they differ)."""
        return shared_type(self.codes.types[code] for code in codes)

    def readers_of(self, code: int) -> list[SinkTarget]:
        return [t for t in self.targets if code in t.codes]

    # -- one batch ------------------------------------------------------------------------------------------------

    def write(
        self,
        batch: Any,
        batch_id: int,
        targets: list[SinkTarget] | None = None,
        part: int = 0,
        before_commit: Callable[[], None] | None = None,
    ) -> bool:
        """Write ``targets`` (default: the sinks that read no other sink's errors) from ``batch``; ``part``
        numbers the writes of one batch (a sink's refused values are written after it, as part ``part + 1``).
        ``before_commit`` runs once the batch is written, before its staged files move into place. Returns
        whether ``batch`` was computed (False: no sink to write)."""
        top = targets is None
        chosen = targets if targets is not None else [t for t in self.targets if not self._reads_errors(t)]
        if not chosen:
            if before_commit is not None:
                before_commit()
            return False
        if top:
            self._staged = []
        if self.stage_folder is None and all(isinstance(t.sink, DRIVER_SINKS) for t in chosen):
            # the driver's sinks alone: one action collects their rows (a sink without rows gets nothing)
            self._deliver(batch, batch_id, part, chosen)
        else:
            self._write_persisted(batch, batch_id, part, chosen)
        if before_commit is not None:
            before_commit()
        if top:
            commit_batch(batch.sparkSession, self._staged, batch_id)
        return True

    def _write_persisted(self, batch: Any, batch_id: int, part: int, chosen: list[SinkTarget]) -> None:
        """Write ``chosen`` from ``batch``, persisted while they write (several Spark jobs read it)."""
        batch.persist()
        try:
            # one job counts the rows of every output; sinks without rows in this batch do nothing
            present = {row[0] for row in batch.groupBy("ch").count().collect() if row[1]}
            chosen = [t for t in chosen if present & set(t.codes)]
            # file sinks first (staged: see ``commits``), so a value one refuses fails the batch before any
            # other sink saw it; the user's functions and the driver's sinks after them
            for target in chosen:
                if isinstance(target.sink, FileSink):
                    self._write_target(batch, batch_id, part, target)
            for target in chosen:
                if not isinstance(target.sink, (FileSink, *DRIVER_SINKS)):
                    self._write_target(batch, batch_id, part, target)
            driver = [t for t in chosen if isinstance(t.sink, DRIVER_SINKS)]
            if driver:
                self._deliver(batch, batch_id, part, driver)
        finally:
            batch.unpersist()

    def complete_outputs(self, spark: Any) -> None:
        """At the end of a job, every file sink's dataset exists: one that received nothing gets an empty one
        (``path/batch=0``) with its schema, when that is known (declared, its stream's, an error output's, or
        inferred and kept by an earlier run), so that it reads back like any other output."""
        from panes.spark.session import is_connect

        for target in self.targets:
            sink = target.sink
            if not isinstance(sink, FileSink):
                continue
            local = None if is_connect(spark) else local_path(sink.path)
            if local is not None and os.path.isdir(local):
                continue  # it has output
            schema = target.schema
            if schema is None and self.schema_folder is not None:
                schema = load_schema(spark, self.schema_folder, target.key)
            if schema is None:
                continue
            writer = spark.createDataFrame([], schema.ddl()).write.mode("ignore").format(sink.format)
            if sink.format == "csv":
                writer = writer.option("header", "true")
            writer.save(os.path.join(sink.path, "batch=0"))

    def _reads_errors(self, target: SinkTarget) -> bool:
        errors = {t.error_code for t in self.targets if t.error_code is not None}
        return bool(errors & set(target.codes))

    def _deliver(self, batch: Any, batch_id: int, part: int, targets: list[SinkTarget]) -> None:
        """Collect the rows of the driver sinks (one action) and hand each sink its values in order; over
        Spark Connect, stage them for the client instead."""
        wanted = sorted({code for t in targets for code in t.codes})
        rows = batch.filter(F.col("ch").isin(wanted))
        if self.stage_folder is not None:
            rows.write.mode("overwrite").parquet(os.path.join(self.stage_folder, f"batch={batch_id}", f"part={part}"))
            return
        self._hand_over(self.session or batch.sparkSession, rows.toArrow(), targets)

    def _hand_over(self, spark: Any, table: pa.Table, targets: list[SinkTarget]) -> None:
        wanted = sorted({code for t in targets for code in t.codes})
        records: list[Record] = []
        for chunk in table.to_batches():
            records.extend(read_records(chunk, self.codes, channel_mask(chunk, wanted)))
        records.sort(key=lambda r: (r.phase, r.seq))
        for target in targets:
            mine = [r for r in records if self.codes.code[r.channel] in target.codes]
            if mine:
                deliver_records(spark, target.sink, mine)

    def deliver_staged(self, spark: Any, after: int) -> int:
        """Hand the driver sinks the rows staged by batches after ``after`` (in batch order); returns the last
        batch delivered (``after`` when none is new)."""
        assert self.stage_folder is not None
        try:
            staged = spark.read.parquet(self.stage_folder)
            batches = sorted(r[0] for r in staged.select("batch").distinct().collect() if r[0] > after)
        except Exception:  # nothing staged yet: Spark raises AnalysisException for a missing path
            return after
        targets = [t for t in self.targets if isinstance(t.sink, DRIVER_SINKS)]
        for batch_id in batches:
            for part in sorted(
                r[0] for r in staged.filter(F.col("batch") == batch_id).select("part").distinct().collect()
            ):
                rows = staged.filter((F.col("batch") == batch_id) & (F.col("part") == part)).drop("batch", "part")
                self._hand_over(spark, rows.toArrow(), targets)
        return batches[-1] if batches else after

    def _write_target(self, batch: Any, batch_id: int, part: int, target: SinkTarget) -> None:
        if isinstance(target.sink, KafkaSink):
            # the tasks serialize and write the records themselves (``panes.spark.kafka.sink``)
            writers = target.step.transformation.parallelism or 1
            run = self.run or uuid.uuid4().hex[:16]
            write_kafka(batch, batch_id, target.sink, target.name, self.codes, target.codes, writers, run)
            return
        if isinstance(target.sink, JdbcSink):
            # the tasks write the rows in transactions with their markers (``panes.spark.jdbc_sink``)
            writers = target.step.transformation.parallelism or 1
            run = self.run or uuid.uuid4().hex[:16]
            refused = write_jdbc(
                batch,
                batch_id,
                target.sink,
                target.step.transformation.name,
                target.key,
                self.stream_type(target.codes),
                self.codes,
                target.codes,
                target.error_code,
                writers,
                run,
            )
            if refused is not None:
                assert target.error_code is not None
                self.write(refused, batch_id, self.readers_of(target.error_code), part + 1)
                refused.unpersist()
            return
        values, errors = self.values(batch, target)
        if values is None:
            return
        sink = target.sink
        if isinstance(sink, FileSink) and sink.format == "text":
            # the tasks write the lines as the sink names its parts, into the staging folder (local paths)
            staging = staged_folder(sink.path, batch_id)
            shutil.rmtree(staging, ignore_errors=True)
            values.mapInArrow(text_part_writer(sink, batch_id), "file STRING").collect()
            self._staged.append(sink)
        elif isinstance(sink, FileSink):
            writer = values.write.mode("overwrite").format(sink.format)
            if sink.format == "csv":
                writer = writer.option("header", "true")
            if stages(values.sparkSession, sink.path):
                writer.save(staged_folder(sink.path, batch_id))
                self._staged.append(sink)
            else:
                writer.save(batch_folder(sink.path, batch_id))
        elif isinstance(sink, ForeachBatchSink):
            sink.function(values, batch_id)
        else:
            raise TypeError(f"the Spark runner cannot write to {sink!r}")
        if errors is not None:
            assert target.error_code is not None
            self.write(errors, batch_id, self.readers_of(target.error_code), part + 1)
            errors.unpersist()

    # -- values as columns ------------------------------------------------------------------------------------------

    def values(self, batch: Any, target: SinkTarget) -> tuple[Any, Any]:
        """The DataFrame of ``target``'s values as columns of its schema (``None`` when the batch has none and
        the schema is still unknown) and, when the sink has an error output, the DataFrame of refused values
        (rows of the error channel; persisted, for the caller to unpersist)."""
        rows = batch.filter(F.col("ch").isin(target.codes))
        schema = self.schema_of(target, rows)
        if schema is None:
            return None, None
        if not target.encodes and all(same_columns(self.codes.types[code], schema) for code in target.codes):
            return select_values(rows, target.codes, self.codes, schema), None
        output, errors = conversion_schema(target, self.codes, schema)
        converted = rows.mapInArrow(convert_function(target, self.codes, schema), Layout.ddl_of(output))
        if target.error_code is None:
            return _unprefixed(converted, schema.columns(), VALUE_PREFIX), None
        converted = converted.persist()
        refused = F.col(f"{ERROR_PREFIX}ch").isNotNull()
        good = _unprefixed(converted.filter(~refused), schema.columns(), VALUE_PREFIX)
        bad = _unprefixed(converted.filter(refused), errors.schema, ERROR_PREFIX)
        return good, bad

    def schema_of(self, target: SinkTarget, rows: Any) -> RecordType | None:
        """The target's schema: declared, stored by an earlier run, or inferred from ``rows`` (and stored)."""
        if target.schema is not None:
            return target.schema
        if self.schema_folder is not None and not target.stored:
            target.schema = load_schema(rows.sparkSession, self.schema_folder, target.key)
            target.stored = True
            if target.schema is not None:
                return target.schema
        sample = rows.orderBy("ph", "seq").limit(SAMPLE).toArrow()
        values = [r.value for chunk in sample.to_batches() for r in read_records(chunk, self.codes, _all(chunk))]
        if not values:
            return None
        schema = inferred_row_type(values)
        if self.schema_folder is not None:
            store_schema(rows.sparkSession, self.schema_folder, target.key, schema)
        target.schema = schema
        return schema


def _all(batch: pa.RecordBatch) -> Any:
    import numpy as np

    return np.ones(batch.num_rows, dtype=bool)


def _unprefixed(frame: Any, columns: pa.Schema, prefix: str) -> Any:
    return frame.select(*[F.col(f"`{prefix}{f.name}`").alias(f.name) for f in columns])


VALUE_PREFIX = "__v_"
ERROR_PREFIX = "__e_"


def conversion_schema(target: SinkTarget, codes: ChannelCodes, schema: RecordType) -> tuple[pa.Schema, Layout]:
    """What :func:`convert_function` returns: the schema's columns (prefixed :data:`VALUE_PREFIX`) and, for
    refused values, rows of the error channel in their layout (prefixed :data:`ERROR_PREFIX`); and that
    layout."""
    errors = Layout(codes, [] if target.error_code is None else [codes.channel[target.error_code]])
    fields = [pa.field(f"{VALUE_PREFIX}{f.name}", f.type) for f in schema.columns()]
    fields += [pa.field(f"{ERROR_PREFIX}{f.name}", f.type) for f in errors.schema]
    return pa.schema(fields), errors


def target_table(batches: list[pa.RecordBatch], target: SinkTarget, codes: ChannelCodes) -> pa.Table | None:
    """The rows of ``target``'s outputs in ``batches`` as a table of its schema's columns (``None``: none);
    a value that does not fit raises ``BadRecordError`` with the reason."""
    schema = target.schema
    assert schema is not None
    columns = schema.columns()
    parts = []
    for batch in batches:
        channel = batch.column("ch").to_numpy(zero_copy_only=False)
        for code in target.codes:
            mask = channel == code
            if not mask.any():
                continue
            column = batch.column(codes.column(code)).filter(pa.array(mask))
            channel_type = codes.types[code]
            if not target.encodes and same_columns(channel_type, schema):
                assert channel_type is not None
                arrays = [column] if channel_type.shape == "scalar" else column.flatten()
            else:
                conformed = []
                for value in codes.decode(code, column):
                    try:
                        conformed.append(schema.conform(sink_row(target.sink, value)))
                    except SchemaMismatchError as error:
                        raise BadRecordError(f"{refusal(target.name, schema, error)}; value: {value!r}") from error
                arrays = schema.encode(conformed).flatten()
            parts.append(pa.Table.from_arrays(arrays, schema=columns))
    return pa.concat_tables(parts) if parts else None


def text_part_writer(sink: FileSink, batch_id: int) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``mapInArrow`` function writing a task's lines of text sink ``sink`` to the batch's staging folder as
    its parts (``FileSink.part_name``), one row per file written."""

    @carrying_iterators
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from panes.datastream.file_format import write_text_parts

        context = TaskContext.get()
        partition = 0 if context is None else context.partitionId()
        lines = [line for batch in batches for line in batch.column(0).to_pylist()]
        if not lines:
            return
        staging = staged_folder(sink.path, batch_id)
        written = write_text_parts(lines, staging, sink, partition)
        yield pa.RecordBatch.from_pydict({"file": written}, schema=pa.schema([pa.field("file", pa.string())]))

    return run


def same_columns(channel_type: RecordType | None, schema: RecordType) -> bool:
    """Whether a channel's values are already the columns of ``schema`` (no conversion needed)."""
    return channel_type is not None and channel_type.columns() == schema.columns()


def select_values(rows: Any, codes: list[int], channel_codes: ChannelCodes, schema: RecordType) -> Any:
    """The values of typed channels whose columns are ``schema``'s, as those columns (Spark expressions only)."""
    columns = [F.col(channel_codes.column(code)) for code in codes]
    value = columns[0] if len(columns) == 1 else F.coalesce(*columns)
    scalar = any(t is not None and t.shape == "scalar" for t in (channel_codes.types[c] for c in codes))
    if scalar:
        return rows.select(value.alias(schema.columns().names[0]))
    return rows.select(value.alias("__value")).select("__value.*")


def convert_function(
    target: SinkTarget, codes: ChannelCodes, schema: RecordType
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``mapInArrow`` function turning the target's rows into its schema's columns; a value that does not fit
    raises (no error output) or becomes an ``ErrorRecord`` row on the error channel."""
    wanted = target.codes
    output, errors = conversion_schema(target, codes, schema)
    error_channel = None if target.error_code is None else codes.channel[target.error_code]
    columns = schema.columns()
    name = target.name
    sink = target.sink

    @carrying_iterators
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            good: list[Any] = []
            bad: list[Record] = []
            for record in read_records(batch, codes, channel_mask(batch, wanted)):
                try:
                    good.append(schema.conform(sink_row(sink, record.value)))
                except SchemaMismatchError as error:
                    reason = refusal(name, schema, error)
                    if error_channel is None:
                        raise BadRecordError(f"{reason}; value: {record.value!r}") from error
                    failure = ErrorRecord(record.value, record.timestamp, reason, "SchemaMismatchError", name)
                    bad.append(Record(error_channel, failure, record.timestamp, record.seq, record.phase))
            if good:
                struct = schema.encode(good)
                arrays = [struct.field(i) for i in range(len(columns))]
                arrays += [pa.nulls(len(good), f.type) for f in errors.schema]
                yield pa.RecordBatch.from_arrays(arrays, schema=output)
            if bad:
                arrays = [pa.nulls(len(bad), f.type) for f in columns] + list(errors.encode(bad).columns)
                yield pa.RecordBatch.from_arrays(arrays, schema=output)

    return run


def deliver_records(spark: Any, sink: Any, records: list[Record]) -> None:
    """Hand ``records`` (in order) to a driver sink."""
    if isinstance(sink, MemorySink):
        sink.rows.extend(as_row(r.value) for r in records)
        if sink.rows:
            declared = sink_type(sink)
            schema = declared if declared is not None else sink_row_type(infer_record_type(sink.rows))
            assert schema is not None
            struct = schema.encode([schema.conform(as_sink_row(row)) for row in sink.rows])
            table = pa.Table.from_arrays(
                [struct.field(i) for i in range(struct.type.num_fields)], schema=schema.columns()
            )
            spark.createDataFrame(table).createOrReplaceTempView(sink.table)
        return
    for record in records:
        if not deliver(sink, StreamRecord(record.value, record.timestamp)):
            raise TypeError(f"the Spark runner cannot deliver to {sink!r}")


# -- inferred schemas, kept with the checkpoint ----------------------------------------------------------------------


def load_schema(spark: Any, folder: str, key: str) -> RecordType | None:
    """The schema stored for sink ``key`` by an earlier run (``None`` when there is none)."""
    path = os.path.join(folder, key)
    try:
        rows = spark.read.text(path).collect()
    except Exception:  # Spark raises AnalysisException for a missing path
        return None
    text = "".join(row[0] for row in rows).strip()
    return RecordType.of(text) if text else None


def store_schema(spark: Any, folder: str, key: str, schema: RecordType) -> None:
    """Keep ``schema`` for sink ``key`` (written by Spark, so the checkpoint may live on any Hadoop filesystem)."""
    spark.createDataFrame([(schema.ddl(),)], "value STRING").coalesce(1).write.mode("overwrite").text(
        os.path.join(folder, key)
    )
