"""The Python functions Spark runs for each kind of step (shipped to executors with cloudpickle).

Each takes and returns Arrow record batches of panes rows (``codec``). Rows of channels a step does not
read pass through untouched, as do rows of channels it reads that a later step also reads.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from panes.elements import StreamRecord
from panes.errors import BadRecordError, ErrorRecord
from panes.operators.base import extract_key
from panes.spark.codec import END, END_MS, ROW_SCHEMA, ChannelCodes, decode, encode, to_spark_time
from panes.spark.host import Row, StepHost
from panes.spark.linear import Step
from panes.spark.microbatch import rate_watermarks, shard_of
from panes.time import LONG_MIN
from panes.watermarks import TimestampsAndWatermarksOperator

Raw = tuple[int, bytes, Any, int, int]


def split(batch: pa.RecordBatch, step: Step, codes: ChannelCodes) -> tuple[list[Row], list[Raw]]:
    """The rows ``step`` reads (decoded) and the rows that pass (raw)."""
    consumed = set(codes.codes(step.consumed))
    keep = set(codes.codes(step.passthrough))
    columns = [batch.column(i).to_pylist() for i in range(5)]
    mine: list[Row] = []
    passing: list[Raw] = []
    channel = codes.channel
    from panes.spark.codec import loads

    for code, blob, ts, seq, ph in zip(*columns, strict=True):
        if code in consumed:
            mine.append((channel[code], loads(blob), ts, seq, ph))
            if code in keep:
                passing.append((code, blob, ts, seq, ph))
        else:
            passing.append((code, blob, ts, seq, ph))
    return mine, passing


def by_batch(rows: list[Row]) -> dict[int, list[Row]]:
    groups: dict[int, list[Row]] = defaultdict(list)
    for row in rows:
        groups[row[4] // 2].append(row)
    return groups


def stateless_function(
    step: Step, codes: ChannelCodes
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``mapInArrow`` function of a non-keyed operator: one operator instance per partition."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        host = StepHost(step)
        for batch in batches:
            mine, passing = split(batch, step, codes)
            out: list[Row] = []
            for index, rows in sorted(by_batch(mine).items()):
                out.extend(host.process(rows, LONG_MIN, 0, index))
            yield encode(out, codes, passing)
        host.close()

    return run


WM_SCHEMA = ROW_SCHEMA.append(pa.field("wm", pa.int64()))


def timestamps_function(
    step: Step, codes: ChannelCodes, sources: set[int]
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``mapInArrow`` function of a timestamps step: assigns timestamps and rates each row with the watermark
    its generator emits after it (column ``wm``, shifted Spark ms; null when none). End-of-input sentinels
    of ``sources`` are rated ``END_MS``."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        factory = step.transformation.operator_factory  # type: ignore[attr-defined]
        operator: TimestampsAndWatermarksOperator = factory()
        from panes.spark.microbatch import _Capture

        operator.setup(_Capture([]))
        operator.open()
        for batch in batches:
            mine, passing = split(batch, step, codes)
            stamped: list[Row] = []
            ratings: list[Any] = []
            for row in mine:
                out, rating = rate_watermarks(operator, [row], step)
                stamped.extend(out)
                value = None if not rating or rating[0] == LONG_MIN else to_spark_time(rating[0])
                ratings.extend([value] * len(out))
            pass_ratings = [END_MS if code == END and seq in sources else None for code, _, _, seq, _ in passing]
            rows = encode(stamped, codes, passing)
            yield pa.RecordBatch.from_arrays(
                [*rows.columns, pa.array(ratings + pass_ratings, pa.int64())], schema=WM_SCHEMA
            )

    return run


SHARD_SCHEMA = ROW_SCHEMA.append(pa.field("shard", pa.int32()))


def keying_function(
    step: Step, codes: ChannelCodes, num_shards: int, max_parallelism: int
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``mapInArrow`` function adding each row's shard before a keyed step: the shard of its key for rows
    the step reads, any shard for rows that pass. A key that cannot be extracted is a bad record: an
    ``ErrorRecord`` on the step's error output, or a failure when it has none."""
    error_tag = step.transformation.error_tag
    inputs = step.channel_input()
    consumed = set(codes.codes(step.consumed))
    channel = codes.channel
    own = step.transformation.id

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from panes.spark.codec import loads

        for batch in batches:
            codes_column = batch.column(0).to_pylist()
            values = batch.column(1).to_pylist()
            timestamps = batch.column(2).to_pylist()
            orders = batch.column(3).to_pylist()
            shards: list[int] = []
            errors: list[Row] = []
            keep: list[int] = []
            for i, code in enumerate(codes_column):
                if code in consumed:
                    selector = step.key_selectors[inputs[channel[code]]]
                    assert selector is not None
                    try:
                        key = extract_key(selector, loads(values[i]))
                    except BadRecordError as error:
                        if error_tag is None:
                            raise
                        failure = ErrorRecord(
                            loads(values[i]),
                            timestamps[i],
                            f"{error} ({error.__cause__!r})",
                            type(error).__name__,
                            step.transformation.name,
                        )
                        errors.append(((own, error_tag.tag_id), failure, timestamps[i], orders[i], 1))
                        continue
                    shards.append(shard_of(key, num_shards, max_parallelism))
                else:
                    shards.append(orders[i] % num_shards)
                keep.append(i)
            kept = batch.take(pa.array(keep, pa.int64())) if len(keep) != batch.num_rows else batch
            if errors and (own, error_tag.tag_id if error_tag else None) in codes.code:
                kept = pa.concat_batches([kept, encode(errors, codes)]) if kept.num_rows else encode(errors, codes)
                shards.extend(0 for _ in errors)
            yield pa.RecordBatch.from_arrays([*kept.columns, pa.array(shards, pa.int32())], schema=SHARD_SCHEMA)

    return run


def keyed_shard_function(
    step: Step, codes: ChannelCodes, num_shards: int, max_parallelism: int, watermarks: list[int], now: int
) -> Callable[[Any, Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``applyInArrow`` function of a keyed step over bounded input: one shard, every batch in order, batch
    ``b`` processed at ``watermarks[b]`` (the bounded path's ``[LONG_MIN, last watermark, LONG_MAX]``)."""

    def run(key: Any, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        shard = int(key[0].as_py())
        mine: list[Row] = []
        passing: list[Raw] = []
        for batch in batches:
            rows, raw = split(batch.drop_columns(["shard"]), step, codes)
            mine.extend(rows)
            passing.extend(raw)
        host = StepHost(step, shard, num_shards, max_parallelism)
        groups = by_batch(mine)
        out: list[Row] = []
        for index, watermark in enumerate(watermarks):
            out.extend(host.process(groups.get(index, []), watermark, now, index))
        host.close()
        yield encode(out, codes, passing)

    return run


def decode_values(batch: pa.RecordBatch, codes: ChannelCodes) -> list[tuple[int, StreamRecord[Any]]]:
    """``(code, record)`` of every known row of ``batch`` (for sinks)."""
    return [(code, StreamRecord(row[1], row[2])) for code, row in decode(batch, codes) if row is not None]
