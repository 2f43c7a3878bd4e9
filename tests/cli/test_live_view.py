"""The live view of a streaming job on a terminal (``panes.live``): the totals it shows are the batches'
counters summed (gauges arrive as changes, so their sums are current values), drawn with rich."""

from __future__ import annotations

import io

from panes.cli.run import RunOptions, progress_view
from panes.live import LineView, LiveView, ProgressTotals
from panes.spark.metrics import BatchProgress
from panes.time import LONG_MIN

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z
BATCHES = [
    BatchProgress(0, 100, 2_000, LONG_MIN, {"Window": {"records_in": 100, "open_panes": 4, "state_bytes": 2048}}, 0),
    BatchProgress(
        1,
        50,
        500,
        START + 10_000,
        {"Window": {"records_in": 50, "records_out": 4, "open_panes": -3, "late_out": 2, "error_out": 1}},
        4,
    ),
]


def test_totals_sum_counters_and_gauge_changes() -> None:
    totals = ProgressTotals()
    for batch in BATCHES:
        totals.add(batch)
    window = totals.steps["Window"]
    assert (totals.batches, totals.rows_in, totals.results, totals.watermark) == (2, 150, 4, START + 10_000)
    assert (window["records_in"], window["records_out"], window["open_panes"]) == (150, 4, 1)
    assert (window["late_out"], window["error_out"], window["state_bytes"]) == (2, 1, 2048)
    assert totals.rate == 100.0  # 50 rows in 0.5 s


def test_the_live_view_redraws_the_table_on_a_terminal() -> None:
    screen = io.StringIO()
    with LiveView(screen) as view:
        for batch in BATCHES:
            view(batch)
    drawn = screen.getvalue()
    assert "\x1b[" in drawn, "drawn with terminal control sequences"
    assert "watermark" in drawn and "2026-01-01T00:00:10Z" in drawn and "none yet" in drawn
    last = drawn[drawn.rindex("150 rows in") :]
    for column in ("step", "open panes", "late out", "late dropped", "errors", "timers", "state"):
        assert all(word in last for word in column.split()), column  # 80 columns: headers may wrap
    assert "Window" in last and "2.0 KiB" in last and "100 rows/s" in last and "4 results" in last
    assert "rebuilt" not in last  # no operator was rebuilt: no column for it
    with LiveView(screen) as view:
        view(BatchProgress(2, 0, 100, START + 20_000, {"Window": {"restores": 2, "restore_ms": 40}}, 0))
    assert "rebuilt" in screen.getvalue()[screen.getvalue().rindex("0 rows in") :]


def test_a_pipe_gets_one_line_per_batch_and_quiet_nothing() -> None:
    pipe = io.StringIO()
    with LineView(pipe) as view:
        for batch in BATCHES:
            view(batch)
    lines = pipe.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines] == ["batch 0", "batch 1"]
    assert lines[1].endswith("so far 1 open panes, 2 late rows to late outputs, 1 error rows")
    spark = RunOptions(job="job.py", runner="spark")
    assert isinstance(progress_view(spark, io.StringIO()), LineView)
    assert progress_view(RunOptions(job="job.py", runner="spark", quiet=True), io.StringIO()) is None


def test_the_live_table_shows_step_names_whole_in_80_columns() -> None:
    screen = io.StringIO()
    names = ["Window(Count) page counts", "Timestamps/Watermarks"]
    with LiveView(screen) as view:
        view(BatchProgress(0, 10, 100, START, {name: {"records_in": 10} for name in names}, 0))
    drawn = screen.getvalue()
    last = drawn[drawn.rindex("10 rows in") :]
    assert all(name in last for name in names), last


def test_a_pipe_skips_the_batches_in_which_nothing_happened() -> None:
    pipe = io.StringIO()
    with LineView(pipe) as view:
        view(BatchProgress(0, 0, 100, LONG_MIN, {}, 0))  # the first batch always says where the job is
        view(BatchProgress(1, 5, 100, START, {}, 1))
        view(BatchProgress(2, 0, 100, START, {}, 0))  # nothing: no line
        view(BatchProgress(3, 0, 100, START + 1_000, {}, 0))  # the watermark moved: a line
        view(BatchProgress(4, 0, 100, START + 1_000, {}, 2))  # results (timers): a line
    assert [line.split(":")[0] for line in pipe.getvalue().splitlines()] == [
        "batch 0",
        "batch 1",
        "batch 3",
        "batch 4",
    ]
