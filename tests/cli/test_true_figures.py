"""The figures a run reports count what they say (``docs/metrics.md``): rows in are records, not the files a
source read; error rows include a source's bad lines; results leave out the rows of a late data table. Here on
the local runner and on Spark's progress entries as the job would report them; the same job on Spark is in
``tests/spark/test_metrics.py``."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow.parquet as pq

from panes.cli.run import step_summary
from panes.datastream import StreamEnvironment
from panes.datastream.late_table import writes_late_table
from panes.live import LineView, ProgressTotals, progress_line
from panes.local import LocalRunner
from panes.spark.metrics import BatchProgress, JobMetrics
from panes.time import LONG_MIN
from tests.figures_job import BAD_LINES, LATE, RECORDS, RESULTS, SOURCE, build, write_input


def test_the_local_runner_counts_records_and_every_bad_line(tmp_path: Path) -> None:
    env = StreamEnvironment(LocalRunner(advance="per_element"))  # a watermark after each element: 3 comes late
    results, errors = build(env, write_input(tmp_path / "in"), tmp_path / "late")
    result = env.execute()
    assert results.values == RESULTS and len(errors.values) == BAD_LINES
    assert pq.read_table(tmp_path / "late").num_rows == LATE
    assert result.details["records_read"] == RECORDS
    assert result.details["source_errors"] == {SOURCE: BAD_LINES}
    assert step_summary(result.metrics, result.details["source_errors"]) == [
        "panes: what each step did:",
        f"  {SOURCE}: {BAD_LINES} unreadable inputs to the error output",
        "  Timestamps/Watermarks: 4 in, 4 out",
        "  latest: 4 in, 2 out, 1 late to a late output",  # key a's window, and c's at the end of input
        "  Late data table: 1 in, 1 out",
        "  Filter: 2 in, 1 out",
    ]


def test_a_job_without_bad_lines_reports_no_source_errors(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.json").write_text('{"k":"a","ts":1}\n')
    env = StreamEnvironment(LocalRunner())
    build(env, folder, tmp_path / "late")
    result = env.execute()
    assert result.details["source_errors"] == {}
    assert step_summary(result.metrics, {})[1].startswith("  Timestamps/Watermarks")


def test_the_late_data_table_is_not_among_the_results(tmp_path: Path) -> None:
    env = StreamEnvironment(LocalRunner())
    build(env, tmp_path / "in", tmp_path / "late")
    writers = [t.name for t in env.plan().transformations() if writes_late_table(t)]
    assert writers == ["Late data table"]


def _entry(batch: int, files: int, observed: dict[str, int]) -> dict[str, object]:
    """A progress entry as Spark gives it for a micro-batch of ``files`` files of the source (step 0), whose
    first fused call counted ``observed`` (``metrics.SOURCE_FIELDS`` of step 0, counters of the steps)."""
    return {"batchId": batch, "numInputRows": files, "observedMetrics": {"panes-c1": observed}}


def test_spark_progress_counts_the_records_of_the_files_and_their_bad_lines() -> None:
    """Spark's ``numInputRows`` of a file source counts files: the rows in are the records the first fused call
    made of them, and its bad lines are error rows, next to the steps' own."""
    metrics = JobMetrics({1: "latest", 2: "Late data table", 3: "Filter"}, frozenset({3}), {0: SOURCE})
    first = metrics.add(_entry(0, 1, {"m0_spark_rows": 1, "m0_records_out": 3, "m0_error_out": 2, "m1_records_in": 3}))
    second = metrics.add(
        _entry(
            1,
            1,
            {
                "m0_spark_rows": 1,
                "m0_records_out": 1,
                "m0_error_out": 1,
                "m1_records_out": 1,
                "m1_late_out": 1,
                "m2_records_out": 1,
                "m3_records_out": 1,
            },
        )
    )
    assert (first.input_rows, first.source_errors, first.results) == (3, 2, 0)
    assert (second.input_rows, second.source_errors, second.results) == (1, 1, 1)  # not the late table's row
    assert metrics.source_errors() == {SOURCE: BAD_LINES}
    assert metrics.as_dict()["sources"] == {SOURCE: {"records_out": 4, "error_out": 3, "spark_rows": 2}}
    totals = ProgressTotals()
    totals.add(first)
    totals.add(second)
    assert (totals.rows_in, totals.results, totals.error_rows) == (RECORDS, 1, BAD_LINES)
    assert progress_line(second, totals).endswith("; so far 1 late rows to late outputs, 3 error rows")


def test_a_pipe_shows_a_batch_of_bad_lines_only() -> None:
    pipe = io.StringIO()
    with LineView(pipe) as view:
        view(BatchProgress(0, 4, 100, LONG_MIN, {}, 0))
        view(BatchProgress(1, 0, 100, LONG_MIN, {}, 0, source_errors=2))
    lines = pipe.getvalue().splitlines()
    assert lines[1] == "batch 1: 0 rows in, 0 results, watermark -inf (none yet) (0.1 s); so far 2 error rows"
