"""A local job restored from a snapshot of a changed job: incompatible changes are refused, compatible ones run
on and give what the job would have given had the change been there from the snapshot on."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import pytest

from panes.datastream import KeyedProcessFunction, ListSink, StreamEnvironment
from panes.datastream.fingerprint import STATE_FORMAT, operator_uids
from panes.errors import IncompatibleCheckpointError
from panes.local import LocalRunner
from panes.local.job import LocalJob
from panes.state import ListStateDescriptor, ValueStateDescriptor
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows

EVENTS = [(f"k{i % 3}", i * 170, i) for i in range(30)]
CUT = 13


def weight(event: tuple[str, int, int]) -> tuple[str, int, int]:
    return event


def heavier(event: tuple[str, int, int]) -> tuple[str, int, int]:
    return (event[0], event[1], event[2] * 10)


def build(
    mapper: Callable[[Any], Any] = weight,
    size: int = 1000,
    parallelism: int = 2,
    window_uid: str | None = None,
    added: bool = False,
    running: ListSink | None = None,
) -> tuple[StreamEnvironment, ListSink]:
    env = StreamEnvironment(LocalRunner(clock="stepping", advance="per_element"), parallelism=parallelism)
    stream = env.from_collection(EVENTS).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])
    )
    stream = stream.map(mapper)
    if added:
        stream = stream.filter(lambda e: True)
    sums = (
        stream.key_by(lambda e: e[0])
        .window(TumblingEventTimeWindows.of(size))
        .reduce(lambda a, b: (a[0], max(a[1], b[1]), a[2] + b[2]))
    )
    if window_uid is not None:
        sums = sums.uid(window_uid)
    sink = ListSink()
    sums.sink_to(sink)
    if running is not None:
        # a new keyed step: a rolling maximum of the window sums per key
        sums.key_by(lambda e: e[0]).reduce(lambda a, b: a if a[2] >= b[2] else b).sink_to(running)
    return env, sink


def start(env: StreamEnvironment, snapshot: bytes | None = None) -> LocalJob:
    runner = LocalRunner(clock="stepping", advance="per_element")
    return runner.start(env.plan(), env.config(), snapshot=snapshot)


def snapshot_after_cut(**settings: Any) -> tuple[bytes, list[Any]]:
    env, sink = build(**settings)
    first = start(env)
    first.run(CUT)
    return first.snapshot(), list(sink.values)


def test_a_changed_window_size_is_refused_naming_the_window() -> None:
    snapshot, _ = snapshot_after_cut()
    env, _ = build(size=2000)
    with pytest.raises(IncompatibleCheckpointError) as caught:
        start(env, snapshot)
    uids = operator_uids(env.plan())
    window = next(uids[t.id] for t in env.plan() if getattr(t, "op_kind", None) == "window")
    assert caught.value.operator == window
    assert "TumblingEventTimeWindows(size=1000, offset=0) to TumblingEventTimeWindows(size=2000" in str(caught.value)


def test_a_changed_map_function_runs_on_from_the_snapshot() -> None:
    snapshot, before = snapshot_after_cut()
    env, sink = build(mapper=heavier)
    restored = start(env, snapshot)
    restored.run()
    restored.close()
    # what one run gives whose map changes at the cut: the first CUT events weigh 1, the others 10
    seen = {event[2]: index for index, event in enumerate(EVENTS)}
    reference_env, reference = build(mapper=lambda e: weight(e) if seen[e[2]] < CUT else heavier(e))
    whole = start(reference_env)
    whole.run()
    whole.close()
    assert sorted(before + list(sink.values)) == sorted(reference.values)
    assert any(v[2] >= 10 for v in list(sink.values)) and before


def test_a_stateless_step_added_before_a_window_with_a_uid_runs_on() -> None:
    snapshot, before = snapshot_after_cut(window_uid="sums")
    env, sink = build(window_uid="sums", added=True)
    restored = start(env, snapshot)
    restored.run()
    reference_env, reference = build(window_uid="sums")
    whole = start(reference_env)
    whole.run()
    assert before and sorted(before + list(sink.values)) == sorted(reference.values)


def test_a_new_keyed_step_starts_with_empty_state() -> None:
    snapshot, before = snapshot_after_cut(window_uid="sums")
    running = ListSink()
    env, sink = build(window_uid="sums", running=running)
    start(env, snapshot).run()
    reference_env, reference = build(window_uid="sums")
    start(reference_env).run()
    assert before and sorted(before + list(sink.values)) == sorted(reference.values)
    # the new step saw only the sums fired after the restore: a rolling maximum over those
    best: dict[str, tuple[str, int, int]] = {}
    expected = []
    for value in sink.values:
        key = value[0]
        best[key] = value if key not in best or value[2] > best[key][2] else best[key]
        expected.append(best[key])
    assert sorted(running.values) == sorted(expected)


def test_a_changed_parallelism_of_steps_that_are_not_keyed_is_refused_by_the_local_runner() -> None:
    snapshot, _ = snapshot_after_cut()
    env, _ = build(parallelism=3)  # the map and the sink too (the window's state would be redistributed)
    refused = r"step 'map#2': parallelism 2 in the snapshot, 3 now"
    with pytest.raises(IncompatibleCheckpointError, match=refused) as caught:
        start(env, snapshot)
    assert "window" not in str(caught.value).split("changed (keep")[1].split("To run")[0]


def test_a_snapshot_of_another_state_format_is_refused() -> None:
    snapshot, _ = snapshot_after_cut()
    old = pickle.loads(snapshot)
    del old["state_format"]
    old["version"] = 1  # what panes wrote before it kept fingerprints
    env, _ = build()
    refused = f"state format 1, and this panes reads state format {STATE_FORMAT}"
    with pytest.raises(IncompatibleCheckpointError, match=refused):
        start(env, pickle.dumps(old))


class Remember(KeyedProcessFunction[str, Any, Any]):
    """Keeps the last value per key in state ``last`` (of ``kind``)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def open(self, runtime_context: Any) -> None:
        if self.kind == "value":
            self.last = runtime_context.get_state(ValueStateDescriptor("last"))
        else:
            self.last = runtime_context.get_list_state(ListStateDescriptor("last"))

    def process_element(self, value: Any, ctx: Any) -> Any:
        if self.kind == "value":
            self.last.update(value)
        else:
            self.last.add(value)
        return None


def test_a_state_of_another_kind_under_the_same_name_is_refused_when_registered() -> None:
    def remembering(kind: str) -> StreamEnvironment:
        env = StreamEnvironment(LocalRunner(clock="stepping", advance="per_element"))
        env.from_collection(EVENTS).key_by(lambda e: e[0]).process(Remember(kind)).print()
        return env

    first = start(remembering("value"))
    first.run(5)
    snapshot = first.snapshot()
    with pytest.raises(IncompatibleCheckpointError, match="its state 'last' is value state in the checkpoint"):
        start(remembering("list"), snapshot)
