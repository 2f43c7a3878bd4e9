"""The shard runtime without Spark (``panes.spark.shard``): the log a shard's state is stored as, a columnar
window's log written by an earlier panes, and the one phase loop both hosts run."""

from __future__ import annotations

import pickle
from typing import Any

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from panes.datastream import StreamEnvironment
from panes.functions import Aggregates, Count, Sum
from panes.operators.rescaling import Owner
from panes.spark.layout import ChannelCodes, Layout, Record, channel_mask, read_records
from panes.spark.linear import linearize
from panes.spark.shard import ShardDefinition, shard_host
from panes.spark.shard.columnar_host import ColumnarHost
from panes.spark.shard.log import COMPACT_SLACK, next_entry
from panes.spark.shard.phases import run_phases
from panes.time import LONG_MAX
from panes.watermarks import WatermarkStrategy
from panes.windowing import EventTimeSessionWindows, TumblingEventTimeWindows, WindowRow

WINDOWS = {"tumbling": TumblingEventTimeWindows.of(10), "sessions": EventTimeSessionWindows.with_gap(5)}


def columnar_step(window: str) -> tuple[ShardDefinition, Layout, Any, Any]:
    """A keyed count+sum over ``window`` (it runs on columns), the layout of its input rows, its source and its
    results."""
    env = StreamEnvironment("local")
    source = env.from_collection([], type_info="k STRING, ts BIGINT, v BIGINT")
    stamped = source.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    )
    results = stamped.key_by("k").window(WINDOWS[window]).aggregate(Aggregates(n=Count(), v=Sum("v")), WindowRow())
    results.print()
    steps = linearize(env.plan())
    codes = ChannelCodes.of_steps(steps)
    (keyed,) = [s for s in steps if s.kind == "keyed"]
    return (
        ShardDefinition("runtime", keyed, codes, Layout(codes, codes.code), 1, 128),
        Layout(codes, codes.code),
        stamped,
        results,
    )


def rows(layout: Layout, stream: Any, elements: list[tuple[str, int]], first_seq: int) -> list[pa.RecordBatch]:
    channel = (stream.transformation.id, None)
    records = [Record(channel, {"k": k, "ts": ts, "v": ts}, ts, first_seq + i, 1) for i, (k, ts) in enumerate(elements)]
    return [layout.encode(records)]


def values(out: list[pa.RecordBatch], definition: ShardDefinition, results: Any) -> list[Any]:
    code = definition.codes.code[(results.transformation.id, None)]
    return [r.value for batch in out for r in read_records(batch, definition.codes, channel_mask(batch, [code]))]


BATCHES = [
    ([("a", 1), ("b", 2), ("a", 12)], 0),
    ([("b", 13), ("c", 14), ("a", 25)], 11),
    ([("c", 26), ("a", 31)], 20),
]


def test_a_columnar_window_restores_the_log_an_earlier_panes_wrote() -> None:
    """Earlier versions stored each entry of a columnar window's log as a pickled pair (the operator's bytes, a
    count); a checkpoint holding such a log is read, and the shard goes on as if never stopped."""
    for window in WINDOWS:
        definition, layout, stream, results = columnar_step(window)
        host = shard_host(definition, 0)
        assert isinstance(host, ColumnarHost)
        entries: list[bytes] = []
        seq = 1
        for elements, watermark in BATCHES[:2]:
            host.run(rows(layout, stream, elements, seq), watermark, 0)
            seq += len(elements)
            entries.append(host.snapshot() if not entries else host.changes())
        legacy = [pickle.dumps((entry, 40 + i), protocol=pickle.HIGHEST_PROTOCOL) for i, entry in enumerate(entries)]
        elements, watermark = BATCHES[2]
        outputs = []
        for log in (entries, legacy):
            restored = shard_host(definition, 0)
            restored.restore(log[0], log[1:])
            out = restored.run(rows(layout, stream, elements, seq), watermark, 0)
            out += restored.run([], LONG_MAX, 0)
            outputs.append(values(out, definition, results))
        original = host.run(rows(layout, stream, elements, seq), watermark, 0) + host.run([], LONG_MAX, 0)
        assert outputs[0] == outputs[1] == values(original, definition, results), window
        assert outputs[0], window

        halves = host_rescaled(definition, [entries[0]]), host_rescaled(definition, [legacy[0]])
        assert halves[0] == halves[1], window


def host_rescaled(definition: ShardDefinition, snapshots: list[bytes]) -> list[int]:
    """What two new shards' snapshots hold (their open panes) after ``snapshots`` were rescaled to them."""
    parts = shard_host(definition, 0).rescale(snapshots, Owner(definition.max_parallelism, 2), 2)
    counts = []
    for part in parts:
        host = shard_host(definition, 0)
        host.restore(part)
        counts.append(host.open_panes())
    return counts


def test_the_log_is_compacted_when_the_changes_outgrow_the_snapshot_and_when_nothing_is_held() -> None:
    definition, layout, stream, _ = columnar_step("tumbling")
    host = shard_host(definition, 0)
    host.run(rows(layout, stream, [("a", 1)], 1), 0, 0)
    first = next_entry(host, True, 0, 0)
    assert first.snapshot and first.stored == first.snapshot_bytes == len(first.data)
    host.run(rows(layout, stream, [("b", 2)], 2), 0, 0)
    appended = next_entry(host, False, first.stored, first.snapshot_bytes)
    assert not appended.snapshot and appended.stored == first.stored + len(appended.data)
    host.run(rows(layout, stream, [("c", 3)], 3), 0, 0)
    grown = first.snapshot_bytes * 3 + COMPACT_SLACK + 1
    compacted = next_entry(host, False, grown, first.snapshot_bytes)
    assert compacted.snapshot and compacted.stored == len(compacted.data)
    host.run([], LONG_MAX, 0)
    assert host.open_panes() == 0 and host.timer_count() == 0
    emptied = next_entry(host, False, compacted.stored + 10, compacted.snapshot_bytes)
    assert emptied.snapshot, "a shard holding nothing replaces its log by its (tiny) snapshot"


@given(st.integers(0, 3), st.booleans())
def test_the_phase_loop_feeds_then_advances_in_flinks_order(batch: int, then: bool) -> None:
    seen: list[tuple[str, Any, int]] = []
    run_phases(
        ("early", "late"),
        lambda part, phase: seen.append(("feed", part, phase)),
        lambda mark, phase: seen.append(("advance", mark, phase)),
        watermark=5,
        then=9 if then else None,
        batch=batch,
    )
    expected = [("feed", "early", 2 * batch), ("advance", 5, 2 * batch), ("feed", "late", 2 * batch + 1)]
    if then:
        expected.append(("advance", 9, 2 * batch + 1))
    assert seen == expected


def test_both_hosts_take_the_rows_before_the_watermark_first() -> None:
    """A phase-0 row of a window the micro-batch's watermark closes is counted in it; a phase-1 row of the same
    window comes after the watermark and is late, on the columnar host and the element-by-element one alike."""
    definition, layout, stream, results = columnar_step("tumbling")
    channel = (stream.transformation.id, None)
    early = Record(channel, {"k": "a", "ts": 1, "v": 1}, 1, 1, 0)
    late = Record(channel, {"k": "a", "ts": 2, "v": 2}, 2, 2, 1)
    columnar = shard_host(definition, 0)
    from panes.spark.shard.record_host import RecordHost

    element = RecordHost(definition, 0)
    answers = []
    for host in (columnar, element):
        out = host.run([layout.encode([late, early])], 20, 0)
        answers.append([(v["n"], v["v"]) for v in values(out, definition, results)])
    assert answers[0] == answers[1] == [(1, 1)]
