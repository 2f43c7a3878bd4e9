"""The ``from_micro_batches`` source's Spark data source (``panes.spark.sources``), without a SparkSession: what
Spark pickles into its read tasks carries one list, not all of them."""

from __future__ import annotations

import pickle

import pyarrow as pa

from panes.spark.layout import ChannelCodes, Layout, Record, pack
from panes.spark.sources import PanesMicroBatches, _BatchPartition, _encode_batches, _MicroBatchReader
from panes.types import RecordType

TYPED = RecordType.of("user STRING, n BIGINT")
assert TYPED is not None
CODES = ChannelCodes({(1, None): TYPED})
LAYOUT = Layout(CODES, [(1, None)])


def source_of(lists: int, rows: int) -> PanesMicroBatches:
    payloads = []
    for index in range(lists):
        records = [Record((1, None), {"user": f"u{index}-{row}", "n": row}, row, row + 1, 1) for row in range(rows)]
        payloads.append(pack([LAYOUT.encode(records)], LAYOUT.schema))
    return PanesMicroBatches({"batches": _encode_batches(payloads), "schema": LAYOUT.ddl()})


def read_function_size(source: PanesMicroBatches) -> tuple[int, _MicroBatchReader]:
    """The pickled size of what Spark's read function holds (the data source and its reader), and the reader."""
    reader = source.streamReader(None)
    assert isinstance(reader, _MicroBatchReader)
    return len(pickle.dumps((source, reader))), reader


def test_each_partition_carries_its_own_list_and_reads_it_back() -> None:
    source = source_of(lists=3, rows=4)
    reader = source.streamReader(None)
    assert isinstance(reader, _MicroBatchReader)
    start = reader.initialOffset()
    end = reader.latestOffset(start, None)
    (partition,) = reader.partitions(start, end)
    shipped = pickle.loads(pickle.dumps(reader))
    rows = pa.Table.from_batches(list(shipped.read(pickle.loads(pickle.dumps(partition)))))
    assert rows.column("c0").to_pylist() == [{"user": f"u0-{row}", "n": row} for row in range(4)]
    later = reader.partitions(end, reader.latestOffset(end, None))
    assert [(type(p), p.index) for p in later if isinstance(p, _BatchPartition)] == [(_BatchPartition, 1)]


def test_what_a_read_task_receives_does_not_grow_with_the_other_lists() -> None:
    few, _ = read_function_size(source_of(lists=2, rows=200))
    many, reader = read_function_size(source_of(lists=200, rows=200))
    assert reader.count == 200  # the planning reader still holds every list
    assert many < few + 1_000, (few, many)
