"""The rows between Spark steps (``panes.spark.layout``) and the fused row-local call, without a SparkSession:
the functions Spark runs are plain Python over Arrow batches."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from panes.datastream import StreamEnvironment
from panes.spark.fused import Chain, chain_function
from panes.spark.layout import (
    END,
    ChannelCodes,
    Layout,
    Record,
    channel_mask,
    pack,
    read_records,
    unpack,
)
from panes.spark.linear import linearize
from panes.spark.shard.phases import phase_order
from panes.types import RecordType, Row, Types

TYPED = RecordType.of("user STRING, n BIGINT")
assert TYPED is not None
CODES = ChannelCodes(
    {(1, None): TYPED, (2, None): None, (2, "late"): RecordType.of(Types.ROW_NAMED(["x"], [Types.INT()]))}
)


def test_records_of_typed_and_pickled_channels_round_trip_through_one_batch() -> None:
    layout = Layout(CODES, CODES.code)
    records = [
        Record((1, None), {"user": "u", "n": 3}, 10, 1, 1),
        Record((2, None), ("any", {"python": object.__name__}), None, 2, 0),
        Record((2, "late"), Row(x=7), 5, 3, 1),
        Record((1, None), {"user": "v", "n": None}, 11, 4, 1),
    ]
    batch = layout.encode(records)
    assert batch.schema.names == ["ch", "ts", "seq", "ph", "c0", "c1", "c2"]
    assert batch.schema.field("c0").type == TYPED.arrow_type and batch.schema.field("c1").type == pa.binary()
    assert read_records(batch, CODES, np.ones(4, dtype=bool)) == records
    # a row fills only its own channel's column
    assert batch.column("c0").null_count == 2 and batch.column("c1").null_count == 3


def test_rows_of_another_layout_are_adapted_and_payloads_keep_them() -> None:
    small = Layout(CODES, [(1, None)])
    wide = Layout(CODES, CODES.code)
    rows = small.encode([Record((1, None), {"user": "u", "n": 1}, 1, 1, 1)])
    adapted = wide.adapt(rows)
    assert adapted.schema == wide.schema and adapted.column("c1").null_count == 1
    (back,) = list(unpack(pack([adapted], wide.schema)))
    assert back.equals(adapted)
    assert channel_mask(back, [0]).tolist() == [True]


def test_a_fused_call_decodes_only_what_its_steps_read() -> None:
    env = StreamEnvironment("local")
    source = env.from_collection([], type_info="user STRING, n BIGINT")
    doubled = source.map(lambda v: {"user": v["user"], "n": v["n"] * 2}, output_type="user STRING, n BIGINT")
    kept = doubled.filter(lambda v: v["n"] > 2)
    kept.print()
    source.print()  # the source's rows also pass on, untouched, to a sink
    steps = linearize(env.plan())
    codes = ChannelCodes.of_steps(steps)
    chain = Chain(steps=[s for s in steps if s.kind == "stateless"], source=(source.transformation.id, None))
    out = Layout(codes, [(source.transformation.id, None), (kept.transformation.id, None)])
    frame = pa.RecordBatch.from_pydict({"user": ["a", "b"], "n": [1, 5]})
    batches = list(chain_function(chain, codes, out, 2, 128)(iter([frame])))
    assert all(b.schema == out.schema for b in batches)
    got = sorted(
        (r.channel == (kept.transformation.id, None), r.value["user"], r.value["n"], r.seq)
        for b in batches
        for r in read_records(b, codes, np.ones(b.num_rows, dtype=bool))
    )
    # the map's results that pass the filter, and the source's rows (decoded here only because the map reads them)
    assert got == [(False, "a", 1, 1), (False, "b", 5, 2), (True, "b", 10, 2)]
    assert END not in {int(c) for b in batches for c in b.column("ch").to_pylist()}


@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 40), st.integers(-20, 20)), max_size=30, unique_by=lambda r: r[1]
    )
)
def test_a_shard_takes_phase_0_then_phase_1_each_in_stream_or_batch_order(rows: list[tuple[int, int, int]]) -> None:
    phases = np.array([r[0] for r in rows], dtype=np.int32)
    seqs = np.array([r[1] for r in rows], dtype=np.int64)
    stamps = np.array([r[2] for r in rows], dtype=np.int64)
    for timestamps, key in (
        (None, lambda i: (rows[i][0] % 2, rows[i][1])),
        (stamps, lambda i: (rows[i][0] % 2, rows[i][2], rows[i][1])),
    ):
        first, second = phase_order(phases, seqs, timestamps)
        expected = sorted(range(len(rows)), key=key)
        assert [*first.tolist(), *second.tolist()] == expected
        assert all(rows[i][0] % 2 == 0 for i in first.tolist()) and all(rows[i][0] % 2 == 1 for i in second.tolist())
