"""The rules deciding whether a changed job may restart from a checkpoint (``panes.datastream.fingerprint``).

Flink's rules (its documentation, "Savepoints": *Assigning Operator IDs*, and "State Schema Evolution"):
state is mapped to operators by uid, a default uid follows the operator's place in the graph, state no new
operator claims is refused, a new stateful operator starts empty; the state's layout must stay the same.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from panes.datastream import StreamEnvironment
from panes.datastream.fingerprint import (
    STATE_FORMAT,
    JobFingerprint,
    check_restart,
    fingerprint,
    operator_uids,
)
from panes.datastream.plan import Plan, resolve_types
from panes.errors import IncompatibleCheckpointError, UnsupportedOperationError
from panes.functions import AggregateFunction
from panes.spark.rescaling import RESCALED
from panes.state import ListStateDescriptor, ValueStateDescriptor
from panes.state.backend import VOID_NAMESPACE, HeapKeyedStateBackend
from panes.watermarks import PerKeyWatermarks, WatermarkStrategy
from panes.windowing import (
    CountEvictor,
    CountTrigger,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from tests.aggregates import Count


class Total(AggregateFunction[Any, int, int]):
    """The sum of the elements' ``n``: another accumulator class than ``Count``."""

    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + value["n"]

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, acc_a: int, acc_b: int) -> int:
        return acc_a + acc_b


ROWS = [{"user": "a", "ts": 10, "n": 1}, {"user": "b", "ts": 20, "n": 2}]


def job(
    *,
    size: int = 1000,
    assigner: Any = None,
    trigger: Any = None,
    evictor: Any = None,
    lateness: int = 0,
    evaluate: Callable[[Any], Any] | None = None,
    before: Callable[[Any], Any] | None = None,
    after: Callable[[Any], Any] | None = None,
    window_uid: str | None = None,
    key_type: str = "user STRING, ts BIGINT, n BIGINT",
    extra_keyed: bool = False,
    drop_window: bool = False,
    key_time: PerKeyWatermarks | None = None,
) -> Plan:
    """A typed stream, timestamps, optional steps, a keyed window (its pieces replaceable), a sink."""
    env = StreamEnvironment()
    stream = env.from_collection(ROWS, type_info=key_type).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    )
    if before is not None:
        stream = before(stream)
    if drop_window:
        stream.print()
        return env.plan()
    windowed = stream.key_by("user").window(assigner or TumblingEventTimeWindows.of(size))
    if trigger is not None:
        windowed = windowed.trigger(trigger)
    if evictor is not None:
        windowed = windowed.evictor(evictor)
    if lateness:
        windowed = windowed.allowed_lateness(lateness)
    if key_time is not None:
        windowed = windowed.watermark_per_key(key_time)
    result = evaluate(windowed) if evaluate is not None else windowed.aggregate(Count())
    if window_uid is not None:
        result = result.uid(window_uid)
    if after is not None:
        result = after(result)
    if extra_keyed:
        result = result.key_by(lambda v: v).reduce(lambda a, b: a)
    result.print()
    return env.plan()


def print_of(plan: Plan) -> JobFingerprint:
    return fingerprint(plan, resolve_types(plan), {"max_parallelism": 128})


def refusal(old: Plan, new: Plan, ordered: bool = False) -> IncompatibleCheckpointError:
    with pytest.raises(IncompatibleCheckpointError) as caught:
        check_restart(print_of(old), print_of(new), "checkpoint /tmp/c", ordered=ordered)
    return caught.value


def allowed(old: Plan, new: Plan, ordered: bool = False) -> None:
    check_restart(print_of(old), print_of(new), "checkpoint /tmp/c", ordered=ordered)


def window_uid(plan: Plan) -> str:
    uids = operator_uids(plan)
    return next(uids[t.id] for t in plan if getattr(t, "op_kind", None) == "window")


def test_the_same_job_built_again_has_the_same_fingerprint_and_restarts() -> None:
    assert print_of(job()) == print_of(job())
    allowed(job(), job(), ordered=True)


def test_a_changed_window_size_is_refused_naming_the_operator_and_the_old_and_new_assigner() -> None:
    error = refusal(job(size=10_000), job(size=20_000))
    uid = window_uid(job())
    assert uid.startswith("window#")
    assert error.operator == uid
    message = str(error)
    assert f"operator {uid!r} (Window(Aggregate))" in message
    assert "window assigner changed from TumblingEventTimeWindows(size=10000, offset=0) to" in message
    assert "TumblingEventTimeWindows(size=20000, offset=0)" in message
    assert "new checkpoint directory" in message and "restore the previous version" in message
    assert (uid, "window assigner", "TumblingEventTimeWindows(size=10000, offset=0)",
            "TumblingEventTimeWindows(size=20000, offset=0)") in error.changes  # fmt: skip
    assert isinstance(error, UnsupportedOperationError)


@pytest.mark.parametrize(
    ("what", "changed"),
    [
        ("trigger", {"trigger": CountTrigger.of(3)}),
        ("evictor", {"evictor": CountEvictor.of(2)}),
        ("allowed lateness (ms)", {"lateness": 500}),
        ("window function", {"evaluate": lambda w: w.process(lambda key, ctx, elements: [len(list(elements))])}),
        ("window function", {"evaluate": lambda w: w.aggregate(Total())}),
        ("key type", {"key_type": "user BIGINT, ts BIGINT, n BIGINT"}),
        ("event time", {"key_time": PerKeyWatermarks.for_monotonous_timestamps().with_max_lag(60_000)}),
    ],
)
def test_changes_of_what_the_window_state_depends_on_are_refused(what: str, changed: dict[str, Any]) -> None:
    error = refusal(job(), job(**changed))
    assert [c[1] for c in error.changes] == [what]
    assert error.operator == window_uid(job())


def test_the_allowed_lateness_of_processing_time_windows_does_not_shape_state() -> None:
    # Flink's WindowOperator cleans processing-time windows at their end whatever the allowed lateness
    old = job(assigner=TumblingProcessingTimeWindows.of(1000))
    allowed(old, job(assigner=TumblingProcessingTimeWindows.of(1000), lateness=500))


def test_function_bodies_sinks_and_stateless_steps_after_the_state_may_change() -> None:
    old = job(evaluate=lambda w: w.reduce(lambda a, b: a))
    allowed(old, job(evaluate=lambda w: w.reduce(lambda a, b: b)))
    allowed(job(), job(after=lambda s: s.map(lambda v: (v, 1)).filter(lambda v: True)))


def test_a_step_added_before_a_window_moves_its_default_uid_and_a_set_uid_keeps_it() -> None:
    added = {"before": lambda s: s.map(lambda v: v, output_type="user STRING, ts BIGINT, n BIGINT")}
    error = refusal(job(), job(**added))
    assert error.operator == window_uid(job())
    assert "has no step with that uid" in str(error) and f".uid({window_uid(job())!r})" in str(error)
    allowed(job(window_uid="counts"), job(window_uid="counts", **added), ordered=True)


def test_state_no_new_operator_claims_is_refused_and_a_new_stateful_operator_starts_empty() -> None:
    error = refusal(job(window_uid="counts"), job(drop_window=True))
    assert error.operator == "counts"
    allowed(job(window_uid="counts"), job(window_uid="counts", extra_keyed=True))
    # the Spark runner maps state to stateful operators by their order: no keyed step may be added there
    error = refusal(job(window_uid="counts"), job(window_uid="counts", extra_keyed=True), ordered=True)
    assert "keyed operators changed" in str(error) and "Spark" in str(error)


def test_another_state_format_or_runner_setting_is_refused() -> None:
    plan = job()
    stored = replace(print_of(plan), state_format=STATE_FORMAT - 1, panes_version="0.0.9")
    older = rf"panes 0\.0\.9 in state format {STATE_FORMAT - 1}"
    with pytest.raises(IncompatibleCheckpointError, match=older) as caught:
        check_restart(stored, print_of(plan), "checkpoint /tmp/c")
    assert caught.value.changes == ((None, "state format", str(STATE_FORMAT - 1), str(STATE_FORMAT)),)
    types = resolve_types(plan)
    with pytest.raises(IncompatibleCheckpointError, match="max_parallelism changed from 128 to 256"):
        check_restart(
            fingerprint(plan, types, {"max_parallelism": 128}), fingerprint(plan, types, {"max_parallelism": 256}), "c"
        )
    # what the runner redistributes itself (Spark's shard counts) may change
    check_restart(
        fingerprint(plan, types, {"num_shards": 4}), fingerprint(plan, types, {"num_shards": 6}), "c", rescaled=RESCALED
    )


def test_a_fingerprint_survives_its_json_form() -> None:
    found = print_of(job(lateness=100, evaluate=lambda w: w.aggregate(Total())))
    assert JobFingerprint.from_json(found.to_json()) == found
    assert JobFingerprint.from_json("{}").state_format == 0


def test_two_steps_with_one_uid_are_refused() -> None:
    with pytest.raises(ValueError, match="uid 'x' is set on two steps"):
        operator_uids(job(window_uid="x", after=lambda s: s.map(lambda v: v).uid("x")))


def test_a_state_registered_with_another_kind_than_the_checkpoint_holds_is_refused() -> None:
    backend = HeapKeyedStateBackend()
    backend.set_current_key("a")
    backend.get_partitioned_state(VOID_NAMESPACE, ValueStateDescriptor("seen")).update(3)
    snapshot = backend.snapshot()
    restored = HeapKeyedStateBackend()
    restored.owner = "KeyedProcess (1/1)"
    restored.restore(snapshot)
    with pytest.raises(IncompatibleCheckpointError, match=r"KeyedProcess \(1/1\): its state 'seen' is value state"):
        restored.get_partitioned_state(VOID_NAMESPACE, ListStateDescriptor("seen"))
    # the same kind restores; the kind is kept for the next snapshot even before it is registered again
    again = HeapKeyedStateBackend()
    again.restore(snapshot)
    assert again.snapshot()["kinds"] == {"seen": "value"}
    again.set_current_key("a")
    assert again.get_partitioned_state(VOID_NAMESPACE, ValueStateDescriptor("seen")).value() == 3
