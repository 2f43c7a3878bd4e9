"""Step metrics on Spark (``docs/metrics.md``): the job of ``tests/metrics_jobs.py`` counts on Spark what it
counts on the local runner, bounded (Observations) and streaming (each micro-batch's observed metrics)."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import ListSink, StreamEnvironment
from tests.metrics_jobs import ROWS, build, check


@pytest.mark.parametrize("micro_batches", [False, True], ids=["bounded", "streaming"])
def test_every_kind_of_step_counts_on_spark_what_it_counts_locally(spark: Any, micro_batches: bool) -> None:
    from panes.spark import SparkRunner

    batches: list[Any] = []
    env = StreamEnvironment(SparkRunner(spark, num_shards=2, on_progress=batches.append))
    sinks = build(env, micro_batches)
    result = env.execute("metrics")
    check(result, sinks)
    if micro_batches:
        # a batch's results are what the main sink received: not what the steps before it passed on, nor
        # the error side output
        assert batches and sum(batch.results for batch in batches) == len(sinks[0].values)
        # rows in are the source's records: not its end-of-input sentinel
        assert sum(batch.input_rows for batch in batches) == len(ROWS)
        # the keyed steps keep their state in Spark's state store, and say how much
        assert result.metrics["remember"].state_bytes > 0
        per_batch = result.details["metrics"]["per_batch"]
        assert sum(batch.get("positive", {}).get("records_in", 0) for batch in per_batch) == 6


def test_gauges_after_a_restart_are_the_state_now(spark: Any, tmp_path: Any) -> None:
    """A restarted query's open panes are what its shards hold, not the changes since the restart (which were
    negative when the restart fired windows opened before it)."""
    from panes.spark import SparkRunner
    from panes.watermarks import WatermarkStrategy
    from panes.windowing import TumblingEventTimeWindows

    def run(batches: list[list[tuple[str, int]]]) -> int:
        env = StreamEnvironment(SparkRunner(spark, num_shards=1, checkpoint_location=str(tmp_path / "cp")))
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])
        env.from_micro_batches(batches, end_of_input=False).assign_timestamps_and_watermarks(strategy).key_by(
            lambda e: e[0]
        ).window(TumblingEventTimeWindows.of(100)).reduce(lambda a, b: a).name("firsts").sink_to(ListSink())
        return env.execute().get_metrics("firsts").open_panes

    first = [[(f"k{i}", 10 + i) for i in range(8)]]
    # eight windows open (one per key; the watermark stays below their ends)
    assert run(first) == 8
    # restarted (the source resumes after the lists it had read): an element at 150 opens a window and, in the
    # empty batch after it, its watermark fires the eight older ones
    assert run([*first, [("k0", 150)], []]) == 1


def test_progress_figures_of_a_file_source_are_records_errors_and_results(spark: Any, tmp_path: Any) -> None:
    """A streaming JSON folder read one file per micro-batch: the progress's rows in are the files' records (not
    the files), its error rows the bad lines, its results the window's rows (not the late data table's);
    ``tests/figures_job.py`` says why each figure is what it is."""
    import pyarrow.parquet as pq

    from panes.live import ProgressTotals, progress_line
    from panes.spark import SparkRunner
    from tests.figures_job import BAD_LINES, LATE, RECORDS, RESULTS, SOURCE, build, write_input

    batches: list[Any] = []
    runner = SparkRunner(
        spark,
        num_shards=1,
        trigger="available_now",
        checkpoint_location=str(tmp_path / "cp"),
        on_progress=batches.append,
    )
    env = StreamEnvironment(runner)
    results, errors = build(env, write_input(tmp_path / "in"), tmp_path / "late", streaming=True)
    result = env.execute("figures")
    # a.json, then b.json, whose record of key a comes after the watermark passed its window
    assert results.values == RESULTS and len(errors.values) == BAD_LINES
    assert pq.read_table(tmp_path / "late").num_rows == LATE
    totals = ProgressTotals()
    for batch in batches:
        totals.add(batch)
    assert [batch.input_rows for batch in batches][:2] == [3, 1]
    assert (totals.rows_in, totals.error_rows, totals.results) == (RECORDS, BAD_LINES, len(RESULTS))
    # key c's window stays open: the folder does not end
    line = progress_line(batches[-1], totals)
    assert line.endswith(f"so far 1 open panes, {LATE} late rows to late outputs, {BAD_LINES} error rows"), line
    assert result.details["source_errors"] == {SOURCE: BAD_LINES}


def test_a_trigger_that_found_nothing_to_read_costs_the_next_micro_batch_none_of_its_counts(
    spark: Any, tmp_path: Any
) -> None:
    """Spark reports a trigger that found nothing to read under the id of the micro-batch it did not run (here on
    every such trigger: ``noDataProgressEventInterval`` 0, 10 s by default); the micro-batch that later runs under
    that id is counted all the same (``metrics.ran_micro_batch``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from panes.spark import SparkRunner
    from panes.spark.metrics import ran_micro_batch

    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(pa.table({"k": ["a", "b", "a"]}), folder / "0.parquet")
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "0")
    runner = SparkRunner(spark, num_shards=1, trigger="continuous", quiet=True)
    env = StreamEnvironment(runner)
    sink = ListSink()
    env.from_files(str(folder), schema="k STRING", streaming=True).map(lambda row: row["k"]).sink_to(sink)
    job = runner.start(env.plan(), env.config(), "idle triggers")
    try:
        job.process_all_available()
        idle = next((p for p in _progress_until(job, lambda p: not ran_micro_batch(p))), None)
        assert idle is not None, "Spark reported no trigger that found nothing to read"
        pq.write_table(pa.table({"k": ["c", "d"]}), folder / "1.parquet")
        job.process_all_available()
        ran = [p for p in job.progress() if p["batchId"] == idle["batchId"]]
        assert ran and all(ran_micro_batch(p) for p in ran)  # the micro-batch that ran under the idle one's id
        assert sorted(sink.values) == ["a", "a", "b", "c", "d"]
        assert job.metrics()["Map"].records_in == 5
    finally:
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")
        job.stop()
        job.cleanup()


def _progress_until(job: Any, found: Any, seconds: float = 30.0) -> Any:
    """Spark's progress entries of ``job``'s query (every trigger's, not only the micro-batches panes counts), as
    they come, until one is ``found`` or ``seconds`` passed."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        entries = list(job.query.recentProgress)
        hit = [p for p in entries if found(p)]
        if hit:
            yield hit[0]
            return
        job.query.awaitTermination(0.05)
