"""Runtime execution modes on the local runner: the shared cases (``tests/runtime_mode_cases.py``), how the
mode is chosen, and what BATCH execution refuses."""

from __future__ import annotations

import pytest

from panes.datastream import ListSink, RuntimeExecutionMode, StreamEnvironment
from panes.local import LocalRunner
from tests.runtime_mode_cases import BATCH, CASES, EXPECTED, comparable, end_of_stream_count_evictor

RUNS = [(name, mode) for name, expected in EXPECTED.items() for mode in expected]


@pytest.mark.parametrize(("name", "mode"), RUNS, ids=[f"{n}-{m.value.lower()}" for n, m in RUNS])
def test_cases_give_flinks_results(name: str, mode: RuntimeExecutionMode) -> None:
    env = StreamEnvironment(LocalRunner(), runtime_mode=mode)
    sink = CASES[name](env)
    result = env.execute(name)
    assert result.details["mode"] == mode.value.lower()
    assert comparable(sink.values) == comparable(EXPECTED[name][mode])


def test_automatic_runs_bounded_input_in_batch_and_unbounded_in_streaming() -> None:
    env = StreamEnvironment(LocalRunner(), runtime_mode=RuntimeExecutionMode.AUTOMATIC)
    sink = end_of_stream_count_evictor(env)
    assert env.execute().details["mode"] == "batch"
    assert comparable(sink.values) == comparable(EXPECTED["end_of_stream_count_evictor"][BATCH])

    env = StreamEnvironment(LocalRunner(max_records=4), runtime_mode=RuntimeExecutionMode.AUTOMATIC)
    endless = ListSink()
    env.from_generator(lambda i: ("k", i)).key_by(lambda x: x[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).sink_to(
        endless
    )
    assert env.execute().details["mode"] == "streaming"
    assert endless.values == [("k", 0), ("k", 1), ("k", 3), ("k", 6)]


def test_batch_refuses_an_unbounded_source() -> None:
    env = StreamEnvironment(LocalRunner(max_records=4), runtime_mode=RuntimeExecutionMode.BATCH)
    env.from_generator(lambda i: i).sink_to(ListSink())
    with pytest.raises(ValueError, match=r"BATCH needs bounded sources, but \['Generator Source'\]"):
        env.execute()


def test_the_mode_must_be_a_runtime_execution_mode() -> None:
    with pytest.raises(TypeError, match="RuntimeExecutionMode"):
        StreamEnvironment().set_runtime_mode("BATCH")  # type: ignore[arg-type]
    env = StreamEnvironment().set_runtime_mode(RuntimeExecutionMode.BATCH)
    assert env.get_runtime_mode() is RuntimeExecutionMode.BATCH
    assert StreamEnvironment().get_runtime_mode() is RuntimeExecutionMode.STREAMING


def test_batch_keyed_reduce_emits_the_final_value_with_the_max_timestamp() -> None:
    env = StreamEnvironment(LocalRunner(), runtime_mode=RuntimeExecutionMode.BATCH)
    sink = ListSink()
    env.from_collection([("b", 1), ("a", 2), ("b", 3)]).key_by(lambda x: x[0]).reduce(
        lambda x, y: (x[0], x[1] + y[1])
    ).sink_to(sink)
    env.execute()
    # keys in their natural order, one result each, at Long.MAX_VALUE (Flink's BatchGroupedReduceOperator)
    assert [(r.value, r.timestamp) for r in sink.records] == [(("a", 2), 2**63 - 1), (("b", 4), 2**63 - 1)]


def test_batch_jobs_cannot_be_snapshotted() -> None:
    env = StreamEnvironment(LocalRunner(), runtime_mode=RuntimeExecutionMode.BATCH)
    env.from_collection([1]).sink_to(ListSink())
    job = LocalRunner().start(env.plan(), env.config())
    with pytest.raises(RuntimeError, match="BATCH"):
        job.snapshot()
