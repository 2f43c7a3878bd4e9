"""Late data tables and reconciliation (``panes.datastream.late_table``, ``panes.datastream.reconcile``).

The property: for any stream with elements too late even for the allowed lateness, the streaming job's results
(a retracting window, so that applying every row in order leaves each window's latest result) with the
corrections ``reconcile`` computes from the job's late table applied on top give exactly what one BATCH run over
all the data gives, for tumbling windows and sessions (whose corrections may also mend sessions the stream split
without late data, as the last test shows).
"""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from panes.cli.main import main
from panes.datastream import ListSink, RuntimeExecutionMode, StreamEnvironment
from panes.datastream.reconcile import reconcile
from panes.functions import Sum
from panes.watermarks import WatermarkStrategy
from panes.windowing import EventTimeSessionWindows, TumblingEventTimeWindows, WindowRow

SCHEMA = "k STRING, v BIGINT, ts BIGINT"
ASSIGNERS = {
    "tumbling": lambda: TumblingEventTimeWindows.of(10),
    "session": lambda: EventTimeSessionWindows.with_gap(4),
}

elements = st.tuples(st.sampled_from("ab"), st.integers(0, 60), st.integers(1, 9))
streams = st.lists(st.lists(elements, max_size=6), min_size=1, max_size=6)


def job(batches: list[list[Any]], assigner: str, lateness: int, late: str, sink: ListSink, retracting: bool) -> Any:
    def build(env: StreamEnvironment) -> None:
        rows = [[{"k": k, "v": v, "ts": ts} for k, ts, v in batch] for batch in batches]
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
        stream = env.from_micro_batches(rows, type_info=SCHEMA).assign_timestamps_and_watermarks(strategy)
        windowed = stream.key_by("k").window(ASSIGNERS[assigner]()).allowed_lateness(lateness).late_data_table(late)
        if retracting:
            windowed = windowed.retracting_fired_panes()
        windowed.aggregate(Sum("v"), WindowRow()).sink_to(sink)

    return build


def applied(rows: list[dict[str, Any]], table: Counter[str] | None = None) -> Counter[str]:
    """A table (a multiset of results) after applying ``rows``: retractions remove, the others add."""
    table = Counter() if table is None else Counter(table)
    for row in rows:
        result = repr({name: value for name, value in row.items() if name != "retract"})
        if row["retract"]:
            assert table[result] > 0, f"a correction retracts {result}, which the table does not hold"
            table[result] -= 1
        else:
            table[result] += 1
    return +table


@pytest.mark.parametrize("assigner", sorted(ASSIGNERS))
@settings(max_examples=60, deadline=None)
@given(batches=streams, lateness=st.sampled_from([0, 5]))
def test_corrections_applied_to_the_streamed_results_give_the_batch_result(
    assigner: str, batches: list[list[Any]], lateness: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        late = f"{folder}/late"
        streamed = ListSink()
        env = StreamEnvironment()
        job(batches, assigner, lateness, late, streamed, retracting=True)(env)
        env.execute()
        corrections = reconcile(job(batches, assigner, lateness, late, ListSink(), retracting=True), late)
        complete = ListSink()
        batch = StreamEnvironment().set_runtime_mode(RuntimeExecutionMode.BATCH)
        job(batches, assigner, lateness, late + "-unused", complete, retracting=False)(batch)
        batch.execute()
    expected = Counter(repr(row) for row in complete.values)
    assert applied(corrections.rows, applied(streamed.values)) == expected
    if assigner != "session":  # a stream's sessions can differ from BATCH's with nothing late (the last test)
        assert (corrections.late_elements == 0) <= (corrections.rows == [])  # nothing late: nothing to correct


def test_the_late_table_holds_each_too_late_element_with_its_step_and_windows(tmp_path: Path) -> None:
    batches = [[("a", 1, 1), ("a", 15, 2)], [("a", 2, 3), ("b", 30, 4)], [("a", 12, 5), ("a", 33, 6)]]
    env = StreamEnvironment()
    job(batches, "tumbling", 0, str(tmp_path / "late"), ListSink(), retracting=False)(env)
    env.execute()
    rows = ds.dataset(tmp_path / "late", format="parquet", partitioning="hive").to_table().to_pylist()
    found = sorted((r["k"], r["v"], r["event_time"], r["window_starts"], r["window_ends"], r["step_uid"]) for r in rows)
    # watermark 15 after batch 0 (monotonous: max - 1 = 14): ts 2 and 12 are too late for [0, 10) and [10, 20)
    assert found == [("a", 3, 2, [0], [10], "window#2"), ("a", 5, 12, [10], [20], "window#2")]


def test_the_cli_writes_corrections_that_say_what_they_did(tmp_path: Path, capsys: Any) -> None:
    job_file = tmp_path / "job.py"
    late = tmp_path / "late"
    job_file.write_text(
        "from panes.functions import Sum\n"
        "from panes.watermarks import WatermarkStrategy\n"
        "from panes.windowing import TumblingEventTimeWindows, WindowRow\n"
        "BATCHES = [[{'k': 'a', 'v': 1, 'ts': 1}, {'k': 'a', 'v': 2, 'ts': 15}], [{'k': 'a', 'v': 3, 'ts': 2}]]\n"
        "def build(env):\n"
        "    (env.from_micro_batches(BATCHES, type_info='k STRING, v BIGINT, ts BIGINT')\n"
        "     .assign_timestamps_and_watermarks(\n"
        "         WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner('ts'))\n"
        "     .key_by('k').window(TumblingEventTimeWindows.of(10))\n"
        f"     .late_data_table({str(late)!r})\n"
        "     .aggregate(Sum('v'), WindowRow()).print('sums'))\n"
    )
    assert main(["run", str(job_file)]) == 0
    output = tmp_path / "corrections.parquet"
    assert main(["reconcile", str(job_file), "--late", str(late), "--output", str(output)]) == 0
    assert "1 late element of step window#2: 1 result retracted, 1 new result, written" in capsys.readouterr().out
    rows = ds.dataset(output, format="parquet").to_table().to_pylist()
    assert rows == [
        {"key": "a", "window_start": 0, "window_end": 10, "value": 1, "retract": True},
        {"key": "a", "window_start": 0, "window_end": 10, "value": 4, "retract": False},
    ]
    assert main(["reconcile", str(job_file), "--late", str(tmp_path / "elsewhere"), "--output", str(output)]) == 1
    assert "no window step of this job writes its late data table" in capsys.readouterr().err


def test_sessions_are_corrected_also_where_the_stream_split_one_without_late_data(tmp_path: Path) -> None:
    # a@0 and a@5 are two sessions (gap 4); watermark 4 cleans up [0, 4); a@1 then joins [5, 9) as [1, 9): nothing
    # is late, yet the stream emits [0, 4) and [1, 9) where BATCH has one session [0, 9); the corrections retract
    # both and add the one
    batches = [[("a", 0, 1), ("a", 5, 1)], [("a", 1, 1)]]
    late = str(tmp_path / "late")
    streamed = ListSink()
    env = StreamEnvironment()
    job(batches, "session", 0, late, streamed, retracting=False)(env)
    env.execute()
    complete = ListSink()
    batch = StreamEnvironment().set_runtime_mode(RuntimeExecutionMode.BATCH)
    job(batches, "session", 0, late + "-unused", complete, retracting=False)(batch)
    batch.execute()
    assert sorted((r["window_start"], r["window_end"], r["value"]) for r in streamed.values) == [(0, 4, 1), (1, 9, 2)]
    assert [(r["window_start"], r["window_end"], r["value"]) for r in complete.values] == [(0, 9, 3)]
    corrections = reconcile(job(batches, "session", 0, late, ListSink(), retracting=False), late)
    assert corrections.late_elements == 0
    assert [(r["window_start"], r["window_end"], r["value"], r["retract"]) for r in corrections.rows] == [
        (0, 4, 1, True),
        (1, 9, 2, True),
        (0, 9, 3, False),
    ]
