"""Runs of elements at once on the local runner (``panes.local.runs``, ``panes.windowing.runs``) give exactly the
output of element by element: the same records with the same timestamps in the same order on every sink (main
results, late data, error records), the same metrics, and a state that resumes element by element identically."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from panes.datastream import ListSink, OutputTag, StreamEnvironment
from panes.datastream.plan import Plan
from panes.functions import AggregateFunction, Aggregates, Count, Sum
from panes.local import LocalRunner
from panes.local.job import LocalJob
from panes.watermarks import WatermarkStrategy
from panes.windowing import (
    ProcessWindowFunction,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
    WindowRow,
)
from panes.windowing.implementation import takes_runs

LATE: OutputTag[Any] = OutputTag("late")
ERRORS: OutputTag[Any] = OutputTag("errors")
SCHEMA = "key STRING, ts BIGINT, value BIGINT"


class Listing(ProcessWindowFunction[Any, Any, Any, Any]):
    """The pane's values in arrival order; fails on a pane holding the value 13 (to the error output)."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        values = [element["value"] for element in elements]
        if 13 in values:
            raise ValueError("13 in the pane")
        window = context.window()
        yield {"key": key, "start": window.start, "values": values, "at": context.current_watermark()}


class FragileSum(AggregateFunction[Any, Any, Any]):
    """A sum whose ``add`` fails on the value -5 (the element then is not in its pane)."""

    def create_accumulator(self) -> Any:
        return 0

    def add(self, value: Any, accumulator: Any) -> Any:
        if value["value"] == -5:
            raise ValueError("no -5")
        return accumulator + value["value"]

    def get_result(self, accumulator: Any) -> Any:
        return accumulator

    def merge(self, a: Any, b: Any) -> Any:
        return a + b


def build(
    batches: list[list[dict[str, Any]]], window: str, lateness: int, function: str, disorder: int, runs: bool
) -> tuple[StreamEnvironment, Plan, list[ListSink], LocalRunner]:
    runner = LocalRunner(runs=runs)
    env = StreamEnvironment(runner)
    stamped = env.from_micro_batches(batches, type_info=SCHEMA).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(disorder).with_timestamp_assigner("ts")
    )
    assigner: Any = TumblingEventTimeWindows.of(100) if window == "tumbling" else SlidingEventTimeWindows.of(100, 40)
    windowed = (
        stamped.key_by("key").window(assigner).allowed_lateness(lateness).side_output_late_data(LATE)
    ).side_output_errors(ERRORS)
    if function == "aggregates":
        results = windowed.aggregate(Aggregates(n=Count(), total=Sum("value")), WindowRow(key="key", start="start"))
    elif function == "pane info":  # the firing's pane info in each row (late firings within the lateness count)
        results = windowed.aggregate(Aggregates(n=Count(), total=Sum("value")), WindowRow(start="start", pane="pane"))
    elif function == "aggregates alone":  # no window function: the aggregates' dict itself
        results = windowed.aggregate(Aggregates(n=Count(), total=Sum("value")))
    elif function == "one aggregate":  # a scalar result in WindowRow's column "value"
        results = windowed.aggregate(Aggregates(total=Sum("value")).as_scalar(), WindowRow(key="key", end=None))
    elif function == "process":
        results = windowed.process(Listing())
    elif function == "fragile":
        results = windowed.aggregate(FragileSum(), lambda key, window, sums: [(key, window.start, s) for s in sums])
    elif function in ("aggregates mapped", "aggregates rebalanced"):  # rows on to a step, or spread round-robin
        results = windowed.aggregate(Aggregates(n=Count(), total=Sum("value")), WindowRow(key="key", start="start"))
    else:
        results = windowed.reduce(lambda a, b: {**a, "value": a["value"] * 3 + b["value"]})
    sinks = [ListSink(), ListSink(), ListSink()]
    if function == "aggregates mapped":
        results.map(lambda row: {**row, "twice": row["n"] * 2}).sink_to(sinks[0])
    elif function == "aggregates rebalanced":
        results.rebalance().sink_to(sinks[0])
    else:
        results.sink_to(sinks[0])
    results.get_side_output(LATE).sink_to(sinks[1])
    results.get_side_output(ERRORS).sink_to(sinks[2])
    return env, env.plan(), sinks, runner


def outputs(sinks: list[ListSink]) -> list[list[tuple[Any, Any]]]:
    """Every sink's records as (value, timestamp), error records as their element, reason and window."""

    def plain(value: Any) -> Any:
        if hasattr(value, "reason"):
            return ("error", value.value, value.timestamp, value.reason, value.window)
        return value

    return [[(plain(r.value), r.timestamp) for r in sink.records] for sink in sinks]


def unpickled(snapshot: Any) -> Any:
    """A job snapshot's content, each operator's pickled state unpickled and objects as their attributes, to
    compare two snapshots."""
    if isinstance(snapshot, bytes) and snapshot[:1] == b"\x80":
        return unpickled(pickle.loads(snapshot))
    if isinstance(snapshot, dict):
        return {key: unpickled(value) for key, value in snapshot.items()}
    if type(snapshot) in (list, tuple):
        return type(snapshot)(unpickled(value) for value in snapshot)
    if getattr(type(snapshot), "__eq__", None) is object.__eq__ and not isinstance(snapshot, type):
        names = [name for cls in type(snapshot).__mro__ for name in getattr(cls, "__slots__", ())]
        fields = {name: getattr(snapshot, name) for name in names if hasattr(snapshot, name)}
        return (type(snapshot).__name__, unpickled({**getattr(snapshot, "__dict__", {}), **fields}))
    return snapshot


keys = st.sampled_from(["a", "b", "c", "d", "e", "f", None])
events = st.builds(
    lambda key, ts, value: {"key": key, "ts": ts, "value": value},
    keys,
    st.integers(0, 700),
    st.sampled_from([1, 2, 3, 13, -5, 7]),
)
micro_batches = st.lists(st.lists(events, max_size=25), min_size=1, max_size=6)


@settings(max_examples=250, deadline=None)
@given(
    batches=micro_batches,
    window=st.sampled_from(["tumbling", "sliding"]),
    lateness=st.sampled_from([0, 60, 250]),
    function=st.sampled_from(
        [
            "aggregates",
            "process",
            "fragile",
            "reduce",
            "pane info",
            "aggregates alone",
            "one aggregate",
            "aggregates mapped",
            "aggregates rebalanced",
        ]
    ),
    disorder=st.sampled_from([0, 30, 200]),
)
def test_runs_give_the_output_of_element_by_element(
    batches: list[list[dict[str, Any]]], window: str, lateness: int, function: str, disorder: int
) -> None:
    env, plan, expected_sinks, runner = build(batches, window, lateness, function, disorder, runs=False)
    reference = runner.start(plan, env.config())
    assert reference._runs is None
    reference.run()
    expected_metrics = reference.metrics(state_bytes=False)
    reference.close()

    env, plan, sinks, runner = build(batches, window, lateness, function, disorder, runs=True)
    job = runner.start(plan, env.config())
    assert job._runs is not None  # the shape takes runs
    job.run()
    assert job.metrics(state_bytes=False) == expected_metrics
    job.close()
    assert outputs(sinks) == outputs(expected_sinks)
    assert sum(len(sink.records) for sink in sinks) > 0 or not any(batches)


@settings(max_examples=100, deadline=None)
@given(
    batches=micro_batches,
    lateness=st.sampled_from([0, 250]),
    function=st.sampled_from(["aggregates", "process", "pane info"]),
    cuts=st.lists(st.integers(1, 30), max_size=6),
)
def test_state_after_runs_resumes_element_by_element(
    batches: list[list[dict[str, Any]]], lateness: int, function: str, cuts: list[int]
) -> None:
    """Runs of any length (``run(max_records)``) leave the state element by element leaves: a snapshot taken
    between them (timer heap included, whose array decides the order of ties) resumes one by one identically."""
    env, plan, expected_sinks, runner = build(batches, "sliding", lateness, function, 30, runs=False)
    reference = runner.start(plan, env.config())
    reference.run()
    reference.close()

    env, plan, _, one_runner = build(batches, "sliding", lateness, function, 30, runs=False)
    one_by_one = one_runner.start(plan, env.config())
    env, plan, sinks, runner = build(batches, "sliding", lateness, function, 30, runs=True)
    job = runner.start(plan, env.config())
    for cut in cuts:
        job.run(cut)
        one_by_one.run(cut)
        # the same state between runs: panes, their pane info, the timer heap's array
        assert unpickled(job.snapshot()) == unpickled(one_by_one.snapshot())
    snapshot = job.snapshot()
    resumed = LocalJob(plan, runner.clock_for(plan, env.config()), snapshot=snapshot, runs=False)
    resumed.clock.set_current_time(job.clock.get_current_processing_time())  # type: ignore[attr-defined]
    resumed.run()
    resumed.close()
    assert outputs(sinks) == outputs(expected_sinks)


def test_runs_are_taken_where_the_shape_allows_only() -> None:
    """The benchmark's shape takes runs; a window with a trigger of its own, or a source whose records also go
    elsewhere, runs element by element."""
    from panes.windowing import CountTrigger

    batches = [[{"key": "a", "ts": 1, "value": 1}]]
    env, plan, _, runner = build(batches, "tumbling", 0, "aggregates", 0, runs=True)
    assert runner.start(plan, env.config())._runs is not None

    env = StreamEnvironment(LocalRunner())
    stamped = env.from_micro_batches(batches, type_info=SCHEMA).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(0).with_timestamp_assigner("ts")
    )
    windowed = stamped.key_by("key").window(TumblingEventTimeWindows.of(100))
    windowed.trigger(CountTrigger.of(2)).reduce(lambda a, b: a).sink_to(ListSink())
    job = LocalRunner().start(env.plan(), env.config())
    assert job._runs is None
    window = next(i.operator for i in job._all_instances() if type(i.operator).__name__ == "WindowOperator")
    assert takes_runs(window) == "it has a trigger of its own"

    env = StreamEnvironment(LocalRunner())
    source = env.from_micro_batches(batches, type_info=SCHEMA)
    source.sink_to(ListSink())
    stamped = source.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(0).with_timestamp_assigner("ts")
    )
    stamped.key_by("key").window(TumblingEventTimeWindows.of(100)).reduce(lambda a, b: a).sink_to(ListSink())
    assert LocalRunner().start(env.plan(), env.config())._runs is None


@pytest.mark.parametrize("function", ["aggregates", "process"])
def test_ties_fire_in_the_heap_order_of_element_by_element(function: str) -> None:
    """Many keys whose panes end together, registered out of order across runs: the firing order (Flink's heap
    order of ties) is element by element's, which here is not the keys' order nor their arrival order."""
    batches = [
        [{"key": f"k{(i * 7) % 23}", "ts": (i * 37) % 500, "value": i} for i in range(start, start + 40)]
        for start in range(0, 400, 40)
    ]
    env, plan, expected_sinks, runner = build(batches, "tumbling", 0, function, 100, runs=False)
    runner.start(plan, env.config()).run()
    env, plan, sinks, runner = build(batches, "tumbling", 0, function, 100, runs=True)
    job = runner.start(plan, env.config())
    job.run()
    assert outputs(sinks) == outputs(expected_sinks)
    fired = [value for value, _ in outputs(sinks)[0]]
    first_window = [row["key"] for row in fired if row["start"] == 0]
    assert first_window != sorted(first_window)


class Counted(ProcessWindowFunction[Any, Any, Any, Any]):
    """The pane's count, or the text ``"seven"`` (which does not fit a BIGINT column) for a pane holding 7."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        values = [element["value"] for element in elements]
        yield {"key": key, "start": context.window().start, "n": "seven" if 7 in values else len(values)}


def build_to_files(
    batches: list[list[dict[str, Any]]], folder: str, errors: bool, runs: bool, function: str = "process"
) -> tuple[StreamEnvironment, Plan, ListSink, LocalRunner]:
    """Counts per tumbling window declared ``key STRING, start BIGINT, n BIGINT`` written as Parquet (the sink
    takes them as they come, see ``LocalFileSink.canonical``); those that do not fit go to an error output
    (``errors``) or fail the job."""
    runner = LocalRunner(runs=runs)
    env = StreamEnvironment(runner)
    stamped = env.from_micro_batches(batches, type_info=SCHEMA).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(30).with_timestamp_assigner("ts")
    )
    windowed = stamped.key_by("key").window(TumblingEventTimeWindows.of(100)).side_output_late_data(LATE)
    if errors:
        windowed = windowed.side_output_errors(ERRORS)
    if function == "process":
        results = windowed.process(Counted(), output_type="key STRING, start BIGINT, n BIGINT")
    else:  # built-in aggregates, whose rows are declared with a BIGINT sum: one past 64 bits does not fit
        results = windowed.aggregate(Aggregates(n=Count(), total=Sum("value")), WindowRow(key="key", start="start"))
    results.sink_to_files(folder)
    side = ListSink()
    if errors:
        results.get_side_output(ERRORS).sink_to(side)
    return env, env.plan(), side, runner


def written(folder: str) -> list[dict[str, Any]]:
    import pyarrow.dataset as ds

    return ds.dataset(folder, format="parquet").to_table().to_pylist()  # type: ignore[no-any-return]


large_events = st.builds(  # two 2**62 in a pane: a sum past 64 bits
    lambda key, ts, value: {"key": key, "ts": ts, "value": value},
    st.sampled_from(["a", "b", None]),
    st.integers(0, 250),
    st.sampled_from([1, 7, 2**62]),
)


@settings(max_examples=60, deadline=None)
@given(
    batches=st.one_of(micro_batches, st.lists(st.lists(large_events, max_size=25), min_size=1, max_size=6)),
    errors=st.booleans(),
    function=st.sampled_from(["process", "aggregates"]),
)
@example(  # a sum past 64 bits between two that fit, to the error output
    batches=[[{"key": k, "ts": t, "value": v} for k, t, v in [("a", 5, 1), ("b", 6, 2**62), ("b", 7, 2**62)]]],
    errors=True,
    function="aggregates",
)
def test_a_file_sink_fed_by_runs_writes_what_element_by_element_writes(
    batches: list[list[dict[str, Any]]], errors: bool, function: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The rows a file sink keeps as they come (its input is conformed to its row type upstream) are the rows
    element by element writes, in order; a result that does not fit its declared type goes to the error output
    at its place, or fails both jobs alike."""
    found: list[Any] = []
    for runs in (False, True):
        folder = str(tmp_path_factory.mktemp("out") / "rows")
        env, plan, side, runner = build_to_files(batches, folder, errors, runs, function)
        job = runner.start(plan, env.config())
        assert (job._runs is not None) == runs
        try:
            job.run()
            job.close()
        except Exception as error:
            found.append(("failed", type(error).__name__, str(error)))
            continue
        assert job.metrics(state_bytes=False) is not None
        found.append((written(folder), outputs([side]), job.metrics(state_bytes=False)))
    assert found[0] == found[1]


@settings(max_examples=40, deadline=None)
@given(
    keys=st.lists(st.integers(0, 80), min_size=1, max_size=200),
    times=st.lists(st.sampled_from([5, 50, 105, 150, 250]), min_size=1, max_size=200),
    function=st.sampled_from(["aggregates", "process"]),
    cuts=st.lists(st.integers(1, 60), max_size=4),
)
def test_ties_across_many_keys_and_snapshots_mid_run_match_element_by_element(
    keys: list[int], times: list[int], function: str, cuts: list[int]
) -> None:
    """Many keys whose panes end at a few equal times (ties all through the heap), taken in runs cut anywhere and
    snapshotted between them: resumed element by element, the firing order and output are element by
    element's."""
    elements = [{"key": f"k{key}", "ts": times[i % len(times)], "value": i} for i, key in enumerate(keys)]
    batches = [elements[: len(elements) // 2], elements[len(elements) // 2 :]]
    env, plan, expected_sinks, runner = build(batches, "tumbling", 0, function, 300, runs=False)
    runner.start(plan, env.config()).run()

    env, plan, sinks, runner = build(batches, "tumbling", 0, function, 300, runs=True)
    job = runner.start(plan, env.config())
    for cut in cuts:
        job.run(cut)
    resumed = LocalJob(plan, runner.clock_for(plan, env.config()), snapshot=job.snapshot(), runs=False)
    resumed.clock.set_current_time(job.clock.get_current_processing_time())  # type: ignore[attr-defined]
    resumed.run()
    resumed.close()
    assert outputs(sinks) == outputs(expected_sinks)


@settings(max_examples=40, deadline=None)
@given(
    batches=micro_batches,
    broken=st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 24), st.sampled_from([None, "text", 2**70])), max_size=2
    ),
)
def test_a_timestamp_that_cannot_be_read_fails_runs_as_element_by_element(
    batches: list[list[dict[str, Any]]], broken: list[tuple[int, int, Any]]
) -> None:
    """Elements whose timestamp field is ``None``, text or past a ``long`` (read together where every one is an
    ``int``, else one by one): the job fails at the same element with the same error, after the same output."""
    batches = [[dict(element) for element in batch] for batch in batches]
    for batch_index, element_index, stamp in broken:
        batch = batches[batch_index % len(batches)]
        if batch:
            batch[element_index % len(batch)]["ts"] = stamp
    found: list[Any] = []
    for runs in (False, True):
        runner = LocalRunner(runs=runs)
        env = StreamEnvironment(runner)
        windowed = (
            env.from_micro_batches(batches)
            .assign_timestamps_and_watermarks(
                WatermarkStrategy.for_bounded_out_of_orderness(30).with_timestamp_assigner("ts")
            )
            .key_by("key")
            .window(TumblingEventTimeWindows.of(100))
            .side_output_errors(ERRORS)
        )
        results = windowed.aggregate(Aggregates(n=Count(), total=Sum("value")), WindowRow(key="key", start="start"))
        sinks = [ListSink(), ListSink()]
        results.sink_to(sinks[0])
        results.get_side_output(ERRORS).sink_to(sinks[1])
        job = runner.start(env.plan(), env.config())
        assert (job._runs is not None) == runs
        try:
            job.run()
            failure = None
        except Exception as error:
            failure = (type(error).__name__, str(error))
        found.append((failure, outputs(sinks)))
    assert found[0] == found[1]
