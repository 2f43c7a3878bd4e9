"""Which of a micro-batch's rows a keyed step's shard reads, and which pass it by."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from panes.spark.layout import ChannelCodes, channel_mask, unpack
from panes.spark.linear import Step


def payload_batches(payloads: Iterable[bytes]) -> list[pa.RecordBatch]:
    return [batch for payload in payloads for batch in unpack(payload)]


def split(
    batches: list[pa.RecordBatch], step: Step, codes: ChannelCodes, shard: int = 0
) -> tuple[list[pa.RecordBatch], list[pa.RecordBatch]]:
    """The rows ``step`` reads, and the rows that pass on (those no step reads here, and those a later step
    reads too). Rows of a broadcast input reach every shard; only shard 0 passes them on."""
    read = codes.codes(step.consumed)
    passthrough = set(step.passthrough)
    if shard != 0 and step.broadcast_input is not None:
        passthrough -= set(step.inputs[step.broadcast_input])
    keep = codes.codes(passthrough)
    mine: list[pa.RecordBatch] = []
    passing: list[pa.RecordBatch] = []
    for batch in batches:
        mask = channel_mask(batch, read)
        if mask.any():
            mine.append(batch if mask.all() else batch.filter(pa.array(mask)))
        passes = ~mask | channel_mask(batch, keep) if keep else ~mask
        if passes.all():
            passing.append(batch)
        elif passes.any():
            passing.append(batch.filter(pa.array(passes)))
    return mine, passing
