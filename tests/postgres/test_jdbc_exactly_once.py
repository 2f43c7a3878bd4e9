"""Exactly once per checkpoint on the local runner, against a real PostgreSQL: each snapshot and the end of the job
commit the sink's rows with a marker, a replay of committed checkpoints writes nothing, a failed job's open
checkpoint is rolled back, and a lost connection is taken up again without losing or doubling rows."""

from __future__ import annotations

from typing import Any

import pytest

from panes.connectors.jdbc import JdbcExecutionOptions, JdbcReplayError, JdbcSink
from panes.datastream import StreamEnvironment
from panes.errors import UserFunctionError
from panes.local.job import LocalJob
from panes.local.runner import LocalRunner
from tests.postgres.conftest import Database

INSERT = "INSERT INTO hits (batch, n) VALUES (?, ?)"
BATCHES = [[(b, n) for n in range(3)] for b in range(4)]
"""Four micro-batches of three rows: (batch, n)."""
ALL_ROWS = sorted(row for batch in BATCHES for row in batch)


def build(postgres: Database, batches: list[list[tuple[int, int]]] = BATCHES, **sink: Any) -> StreamEnvironment:
    env = StreamEnvironment("local")
    execution = JdbcExecutionOptions.builder().with_batch_size(1).with_max_retries(2).build()
    stream = env.from_micro_batches(batches, type_info="batch INT, n INT")
    stream.add_sink(JdbcSink.sink(INSERT, None, postgres.options(), execution, **sink)).uid("hits")
    return env


def start(env: StreamEnvironment, snapshot: bytes | None = None) -> LocalJob:
    return LocalRunner().start(env.plan(), env.config(), snapshot=snapshot)


def step(job: LocalJob, rows: int) -> None:
    """Step ``job`` until it read ``rows`` more rows."""
    goal = job.records_read + rows
    while job.records_read < goal:
        assert job.step()


def hits(postgres: Database) -> list[tuple[Any, ...]]:
    return postgres.execute("SELECT batch, n FROM hits ORDER BY batch, n")


def markers(postgres: Database) -> list[tuple[Any, ...]]:
    return postgres.execute(
        "SELECT sink_id, checkpoint_id, subtask, row_count FROM panes_sink_commits "
        "ORDER BY checkpoint_id, subtask, row_count"
    )


def test_a_replay_of_committed_checkpoints_writes_nothing_twice(postgres: Database) -> None:
    postgres.execute("CREATE TABLE hits (batch int, n int)")
    env = build(postgres)
    first = start(env)
    step(first, 4)
    before = first.snapshot()  # checkpoint 1: four rows committed with their marker
    assert hits(postgres) == ALL_ROWS[:4]
    step(first, 3)
    lost = first.snapshot()  # checkpoint 2: committed, but say this snapshot was lost in the crash that follows
    assert lost
    step(first, 2)
    first.abort()  # the crash: checkpoint 3's two rows, sent, are rolled back
    assert hits(postgres) == ALL_ROWS[:7]

    # restored from the snapshot before: checkpoint 2 is replayed (found, nothing written), the rest written once
    second = start(env, before)
    step(second, 3)
    second.snapshot()
    second.run()
    second.close()
    assert hits(postgres) == ALL_ROWS
    assert markers(postgres) == [("hits", 1, 0, 4), ("hits", 2, 0, 3), ("hits", 3, 0, 5)]

    # a replay of the whole run from the same snapshot: every checkpoint committed, nothing written
    third = start(env, before)
    step(third, 3)
    third.snapshot()
    third.run()
    third.close()
    assert hits(postgres) == ALL_ROWS

    # a job started afresh is a new run: it writes its rows again
    env.execute()
    assert hits(postgres) == sorted(ALL_ROWS * 2)
    assert len(markers(postgres)) == 4


def test_a_replay_that_brings_other_rows_fails_rather_than_write_twice(postgres: Database) -> None:
    postgres.execute("CREATE TABLE hits (batch int, n int)")
    env = build(postgres)
    first = start(env)
    step(first, 4)
    before = first.snapshot()
    first.run()
    first.close()
    assert hits(postgres) == ALL_ROWS

    other = [[(b, n + 10) for b, n in batch] for batch in BATCHES]  # the same job over other input
    second = start(build(postgres, other), before)
    second.run()
    with pytest.raises(JdbcReplayError) as failure:
        second.close()
    assert str(failure.value).startswith(
        "Sink: JdbcSink (1/1): checkpoint 2 of run "
    ) and "was committed before with 8 rows, and its replay brought 8 other rows" in str(failure.value)
    second.abort()
    assert hits(postgres) == ALL_ROWS


def test_without_a_commit_table_a_replay_writes_its_rows_again(postgres: Database) -> None:
    postgres.execute("CREATE TABLE hits (batch int, n int)")
    env = build(postgres, commit_table=None)
    first = start(env)
    step(first, 4)
    before = first.snapshot()
    first.run()
    first.close()
    second = start(env, before)
    second.run()
    second.close()
    assert hits(postgres) == sorted(ALL_ROWS + ALL_ROWS[4:])  # at least once
    assert postgres.execute("SELECT to_regclass('panes_sink_commits') IS NULL") == [(True,)]


def test_a_failed_job_leaves_nothing_of_its_open_checkpoint(postgres: Database) -> None:
    postgres.execute("CREATE TABLE hits (batch int, n int)")
    env = StreamEnvironment("local")
    execution = JdbcExecutionOptions.builder().with_batch_size(1).build()

    def fail_on_the_eighth(row: dict[str, int]) -> dict[str, int]:
        if (row["batch"], row["n"]) == (2, 1):
            raise RuntimeError("bad row")
        return row

    stream = env.from_micro_batches(BATCHES, type_info="batch INT, n INT")
    stream.map(fail_on_the_eighth, output_type="batch INT, n INT").add_sink(
        JdbcSink.sink(INSERT, None, postgres.options(), execution)
    )
    with pytest.raises(UserFunctionError, match=r"bad row"):
        env.execute()
    assert hits(postgres) == []  # seven rows were sent, one at a time, and rolled back with the job


def test_a_lost_connection_is_taken_up_again_without_losing_or_doubling_rows(postgres: Database) -> None:
    postgres.execute("CREATE TABLE hits (batch int, n int)")
    env = build(postgres)
    job = start(env)
    step(job, 4)
    job.snapshot()
    step(job, 3)  # three rows sent into checkpoint 2's open transaction
    terminated = postgres.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
        "AND application_name = 'panes'"
    )
    assert terminated == [(True,)]
    job.run()  # the next send finds the connection gone: checkpoint 2 is sent again on a new one
    job.close()
    assert hits(postgres) == ALL_ROWS
    assert markers(postgres) == [("hits", 1, 0, 4), ("hits", 2, 0, 8)]


def test_each_parallel_instance_commits_its_own_checkpoints(postgres: Database) -> None:
    postgres.execute("CREATE TABLE hits (batch int, n int)")
    env = StreamEnvironment("local")
    execution = JdbcExecutionOptions.builder().with_batch_size(2).build()
    stream = env.from_micro_batches(BATCHES, type_info="batch INT, n INT")
    stream.add_sink(JdbcSink.sink(INSERT, None, postgres.options(), execution)).uid("hits").set_parallelism(2)
    first = start(env)
    step(first, 6)
    before = first.snapshot()
    first.run()
    first.close()
    second = start(env, before)
    second.run()
    second.close()
    assert hits(postgres) == ALL_ROWS
    # rows are dealt to the two instances in turn: each commits its half at the snapshot and at the end
    assert markers(postgres) == [("hits", 1, 0, 3), ("hits", 1, 1, 3), ("hits", 2, 0, 3), ("hits", 2, 1, 3)]


def test_without_a_commit_table_rows_are_committed_as_they_are_sent(
    postgres: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    import panes.connectors.postgres.writer as writer

    postgres.execute("CREATE TABLE hits (batch int, n int)")
    clock = iter(range(0, 10**6, 5))  # seconds: every reading is 5 s after the one before
    monkeypatch.setattr(writer, "_now", lambda: float(next(clock)))
    env = StreamEnvironment("local")
    by_time = JdbcExecutionOptions.builder().with_batch_size(0).with_batch_interval_ms(4_000).build()
    stream = env.from_micro_batches(BATCHES, type_info="batch INT, n INT")
    stream.add_sink(JdbcSink.sink(INSERT, None, postgres.options(), by_time, commit_table=None))
    job = start(env)
    seen = []
    for _ in range(3):
        step(job, 1)
        seen.append(len(hits(postgres)))
    job.run()
    job.close()
    # no size of its own: each row waited 5 s (more than the interval), so each went, and was committed, at once
    assert seen == [1, 2, 3]
    assert hits(postgres) == ALL_ROWS


def test_a_commit_table_made_before_the_refused_column_is_brought_up_to_date(postgres: Database) -> None:
    """A commit table an earlier panes made has no ``refused`` column: the sink adds it and writes as usual, the
    earlier markers kept (their ``refused`` is ``NULL``)."""
    postgres.execute("CREATE TABLE hits (batch int, n int)")
    postgres.execute(
        "CREATE TABLE panes_sink_commits (sink_id text NOT NULL, run_id text NOT NULL, "
        "checkpoint_id bigint NOT NULL, subtask integer NOT NULL, row_count bigint NOT NULL, digest text NOT NULL, "
        "committed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (sink_id, run_id, checkpoint_id, subtask))"
    )
    postgres.execute("INSERT INTO panes_sink_commits VALUES ('old', 'run', 1, 0, 3, 'digest')")
    build(postgres).execute()
    assert hits(postgres) == ALL_ROWS
    assert markers(postgres) == [("old", 1, 0, 3), ("hits", 1, 0, 12)]
    assert postgres.execute("SELECT count(*) FROM panes_sink_commits WHERE refused IS NOT NULL") == [(0,)]
