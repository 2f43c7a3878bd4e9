"""How rows find their shard before a keyed step (the keying a fused call ends with).

A key goes to shard ``key_group * shards // max_parallelism`` (``panes.keygroups``: Flink's subtask that owns the
key's key group), whether its rows are records (:func:`shard_rows`) or typed columns hashed with numpy
(:func:`shards_of_columns`); a row of a broadcast input goes to every shard, any other row by its ordering number.
A fused call that keys its rows returns one ``(shard, payload)`` row per shard with rows (the rows as one Arrow
IPC payload, ``layout.pack``), and a carrier row (shard ``-1``) with the batch's watermark rating when it rates
watermarks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa

from panes.errors import ErrorRecord, located
from panes.functions.aggregators import FieldKey
from panes.keygroups import assign_key_to_parallel_operator, key_groups, operator_index_for_key_group
from panes.operators.keys import extract_key
from panes.operators.metrics import OperatorCounters
from panes.spark.layout import ChannelCodes, Layout, Record, pack
from panes.spark.linear import Step


@dataclass(frozen=True)
class Keying:
    """The keying before the keyed ``step``: its rows (in ``layout``, channels ``codes``) go to ``num_shards`` shards
    over ``max_parallelism`` key groups, as ``(shard, payload)`` rows in ``schema``, followed by a carrier row when
    the call rates watermarks (``timestamps``). The keyed step's own shards take a ``ShardDefinition``, whose layout
    is that of the rows the step returns."""

    step: Step
    codes: ChannelCodes
    layout: Layout
    num_shards: int
    max_parallelism: int
    schema: pa.Schema
    timestamps: bool

    @cached_property
    def by_column(self) -> bool:
        """Whether the step's keys are fields of typed records (``key_by("field")``): shards by column (worked out
        once, not per batch)."""
        return keys_by_column(self.step, self.codes)


def shard_rows(
    step: Step,
    rows: list[Record],
    num_shards: int,
    max_parallelism: int,
    cache: dict[Any, int],
    counters: OperatorCounters | None = None,
) -> tuple[list[Record], list[int]]:
    """Each row's shard before the keyed ``step``: its key's shard for rows the step reads (``cache`` remembers
    keys), every shard for rows of a broadcast input (listed once per shard), any shard for rows passing by and
    rows of a non-keyed input. A row without a key (``panes.operators.keys``) is the step's failure,
    as an operator reports it (``panes.errors``): an ``ErrorRecord`` on the step's error output when there is
    one (dropped when nobody reads it), the located error raised otherwise. Refused rows count as records in
    and error records out of the step in ``counters``, when given."""
    error_tag = step.transformation.error_tag
    error_channel = None if error_tag is None else (step.transformation.id, error_tag.tag_id)
    inputs = step.input_of
    selectors = step.key_selectors
    broadcast = step.broadcast_input
    every_shard = list(range(num_shards))
    kept: list[Record] = []
    shards: list[int] = []
    for row in rows:
        channel, value, ts, seq, ph = row
        index = inputs.get(channel)
        if index is not None and index == broadcast:
            # a broadcast element reaches every shard (every instance), in its place among the shard's rows
            kept.extend([row] * num_shards)
            shards.extend(every_shard)
            continue
        selector = None if index is None else selectors[index]
        if selector is None:
            # a row passing by, or an element of a non-keyed input: spread by its ordering number
            kept.append(row)
            shards.append(seq % num_shards)
            continue
        try:
            key = extract_key(selector, value)
        except Exception as error:
            failure = located(error, step.transformation.name)
            if error_tag is None:
                raise failure from failure.__cause__
            if counters is not None:
                counters.records_in += 1
                counters.error_out += 1
            if error_channel in step.needed_outputs:
                kept.append(Record(error_channel, ErrorRecord.of(failure, value, ts), ts, seq, ph))
                shards.append(0)
            continue
        shard = cache.get(key)
        if shard is None:
            shard = cache[key] = assign_key_to_parallel_operator(key, max_parallelism, num_shards)
        kept.append(row)
        shards.append(shard)
    return kept, shards


def keys_by_column(keyed: Step, codes: ChannelCodes) -> bool:
    """Whether the keyed step's keys are fields of typed records (``key_by("field")``): shards by column."""
    for channel in keyed.consumed:
        selector = keyed.key_selectors[keyed.input_of[channel]]
        record_type = codes.types.get(codes.code[channel])
        if not isinstance(selector, FieldKey) or record_type is None or record_type.shape == "scalar":
            return False
        if not isinstance(selector.field, str) or record_type.arrow_type.get_field_index(selector.field) < 0:
            return False
    return True


def has_null_keys(batch: pa.RecordBatch, keyed: Step, codes: ChannelCodes) -> bool:
    """Whether a row the keyed step reads has a null key column (``keys_by_column`` steps): such a batch takes
    the record path, where null keys are bad records (``panes.operators.keys``)."""
    return any(keys.null_count for _, keys in _key_columns(batch, keyed, codes))


def _key_columns(batch: pa.RecordBatch, keyed: Step, codes: ChannelCodes) -> Iterator[tuple[np.ndarray, pa.Array]]:
    """For each channel the keyed step reads (``keys_by_column`` steps) with rows in ``batch``: the mask of its
    rows and their key column."""
    channel = batch.column("ch").to_numpy(zero_copy_only=False)
    for code_channel in keyed.consumed:
        code = codes.code[code_channel]
        mine = channel == code
        if not mine.any():
            continue
        selector = keyed.key_selectors[keyed.input_of[code_channel]]
        assert isinstance(selector, FieldKey)
        yield mine, batch.column(codes.column(code)).filter(pa.array(mine)).field(selector.field)


def shards_of_columns(keying: Keying, batch: pa.RecordBatch, top: int | None) -> pa.RecordBatch:
    """The batch's rows as one payload per shard, keys hashed to shards with numpy (as :func:`shards_out`
    does for records); rows the keyed step does not read go by their ordering number."""
    layout, num_shards, max_parallelism = keying.layout, keying.num_shards, keying.max_parallelism
    rows = layout.adapt(batch)
    shards = rows.column("seq").to_numpy(zero_copy_only=False) % num_shards
    for mine, keys in _key_columns(rows, keying.step, keying.codes):
        shards[mine] = operator_index_for_key_group(max_parallelism, num_shards, key_groups(keys, max_parallelism))
    order = np.argsort(shards, kind="stable")
    ordered = rows.take(pa.array(order))
    sorted_shards = shards[order]
    present, starts = np.unique(sorted_shards, return_index=True)
    ends = np.append(starts[1:], len(order)) if len(order) else starts
    payloads = [
        pack([ordered.slice(a, b - a)], layout.schema) for a, b in zip(starts.tolist(), ends.tolist(), strict=True)
    ]
    return payload_rows(keying, present.tolist(), payloads, top)


def shards_out(
    keying: Keying,
    rows: list[Record],
    rest: pa.RecordBatch | None,
    cache: dict[Any, int],
    top: int | None,
    counters: OperatorCounters | None = None,
) -> pa.RecordBatch:
    """One ``(shard, payload)`` row per shard that has rows: the keyed step's rows by their key's shard, other
    rows spread by their ordering number; plus the carrier row when the chain rates watermarks. Rows refused
    for their key count in ``counters`` (the keyed step's)."""
    layout, num_shards = keying.layout, keying.num_shards
    rows, shards = shard_rows(keying.step, rows, num_shards, keying.max_parallelism, cache, counters)
    by_shard: dict[int, list[Record]] = defaultdict(list)
    for row, shard in zip(rows, shards, strict=True):
        by_shard[shard].append(row)
    passing: dict[int, pa.RecordBatch] = {}
    if rest is not None and rest.num_rows:
        adapted = layout.adapt(rest)
        spread = adapted.column("seq").to_numpy(zero_copy_only=False) % num_shards
        for shard in np.unique(spread):
            passing[int(shard)] = adapted.filter(pa.array(spread == shard))
    ordered = sorted(set(by_shard) | set(passing))
    payloads = []
    for shard in ordered:
        parts = [layout.encode(by_shard[shard])] if by_shard.get(shard) else []
        if shard in passing:
            parts.append(passing[shard])
        payloads.append(pack(parts, layout.schema))
    return payload_rows(keying, ordered, payloads, top)


def payload_rows(keying: Keying, shards: list[int], payloads: list[bytes], top: int | None) -> pa.RecordBatch:
    """The ``(shard, payload)`` rows ``keying`` returns, in its schema; with timestamps, then the carrier row
    (shard ``-1``, no payload) holding the batch's watermark rating ``top`` in ``wm``."""
    arrays = [pa.array(shards, pa.int32()), pa.array(payloads, pa.binary())]
    if keying.timestamps:
        arrays = [
            pa.concat_arrays([arrays[0], pa.array([-1], pa.int32())]),
            pa.concat_arrays([arrays[1], pa.array([b""], pa.binary())]),
            pa.array([None] * len(shards) + [top], pa.int64()),
        ]
    return pa.RecordBatch.from_arrays(arrays, schema=keying.schema)
