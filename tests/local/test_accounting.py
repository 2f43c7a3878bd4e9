"""Every row accounted for on the local runner (``tests/accounting.py`` states the identity): many random
streams, and jobs stopped before the end of their input, whose open panes are read from the window's state."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from panes.datastream import ListSink, RuntimeExecutionMode, StreamEnvironment
from panes.local import LocalRunner
from tests.accounting import TIMESTAMPS, WINDOW, Case, build, cases, check, run

PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(
    case=st.booleans().flatmap(lambda tail: cases(late_tail=tail)),
    parallelism=st.sampled_from((1, 2)),
    mode=st.sampled_from((RuntimeExecutionMode.STREAMING, RuntimeExecutionMode.BATCH)),
)
def test_every_row_is_in_a_fired_pane_a_side_output_a_counter_or_open_state(
    case: Case, parallelism: int, mode: RuntimeExecutionMode
) -> None:
    env = StreamEnvironment(LocalRunner(clock="stepping"), parallelism=parallelism).set_runtime_mode(mode)
    outcome = run(env, case)
    check(case, outcome)
    if mode is RuntimeExecutionMode.BATCH:
        # keyed input sorted by timestamp and only the final watermark: nothing is late
        assert outcome.metrics["Window(Aggregate)"].late_dropped == 0 and not outcome.late


@PROPERTY
@given(case=cases(), stop=st.integers(0, 25))
def test_a_job_stopped_midway_holds_the_rest_in_open_panes(case: Case, stop: int) -> None:
    """Stopped after ``stop`` rows, before the final watermark: ``open`` is what the window's panes hold (read
    from its state: each pane's accumulator is the ids it collected), counted once with the fired ids."""
    fired_sink, late_sink, error_sink = ListSink(), ListSink(), ListSink()
    env = StreamEnvironment(LocalRunner(clock="stepping"))
    build(env, case, fired_sink, late_sink, error_sink)
    job = LocalRunner(clock="stepping").start(env.plan(), env.config())
    read = job.run(stop)
    metrics = job.metrics()
    window, stamps = metrics[WINDOW], metrics[TIMESTAMPS]

    (instance,) = [i for node in job.nodes for i in job.instances[id(node)] if node.transformation.name == WINDOW]
    operator = instance.operator
    contents = list(operator.backend.entries(operator.spec.state_descriptor.name))
    open_ids = {i for _, _, accumulator in contents for i in accumulator}
    assert window.open_panes == len(contents)

    fired = {i for _, _, ids in fired_sink.values for i in ids}
    assert window.late_out == len(late_sink.values)
    assert stamps.error_out + window.error_out == len(error_sink.values)
    assert stamps.records_in == read == len(case.rows[:read])
    accounted = len(fired | open_ids) + window.late_out + stamps.error_out + window.error_out + window.late_dropped
    assert read == accounted, (read, fired, open_ids, window, stamps)
