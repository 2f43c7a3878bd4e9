"""Event time per key (``WindowedStream.watermark_per_key``, ``panes.watermarks.per_key``) on the operator harness:
the scenarios whose expected output real Flink produced for each key alone (``tests/scenarios/per_key``), the same
output after a restore or a rescaling at any step, and its defining properties on random input."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from panes.operators.rescaling import Owner
from panes.testing.scenario import Scenario, collect_result, comparable, emission_order_per_key, key_of
from panes.time import LONG_MAX
from panes.watermarks.per_key import PerKeyWatermarks
from panes.windowing.implementation import EVICTING, GENERAL
from tests.conftest import DERIVED_SCENARIOS
from tests.implementations import Feeder, harness_for, replay_on, verdict

PER_KEY = DERIVED_SCENARIOS / "per_key"
SCENARIOS = Scenario.load_all(PER_KEY)
assert SCENARIOS, f"no scenario in {PER_KEY}"


def per_key(result: dict[str, Any]) -> dict[str, Any]:
    return comparable(emission_order_per_key(result))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_each_key_gets_what_flink_gives_for_its_elements_alone(scenario: Scenario) -> None:
    """Flink's output for each key alone (``NN.flink.json``); for quiet keys (processing time, which Flink cannot
    replay) the output derived by hand in the scenario's derivation (``NN.expected.json``)."""
    assert scenario.expected is not None
    assert per_key(replay_on(scenario, harness_for(scenario))) == per_key(scenario.expected)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_one_watermark_for_the_stream_gives_another_answer(scenario: Scenario) -> None:
    """Each scenario is one where time per key matters: without it (the stream's one watermark) the output differs."""
    plain = copy.deepcopy(scenario)
    del plain.config["watermark_per_key"]
    assert scenario.expected is not None
    assert per_key(replay_on(plain, harness_for(plain))) != per_key(scenario.expected)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_only_the_general_operators_keep_time_per_key(scenario: Scenario) -> None:
    implementation = EVICTING if scenario.config.get("evictor") else GENERAL
    assert verdict(scenario, implementation) is None
    for other in ("aligned", "columnar aligned", "columnar sessions"):
        assert verdict(scenario, other) is not None


def now_before(steps: list[tuple[str, Any]], index: int) -> int:
    """The processing time the steps before ``index`` reached (a restored operator's clock goes on from it)."""
    return max((item for kind, item in steps[:index] if kind == "processing_time"), default=0)


def steps_of(scenario: Scenario) -> list[tuple[str, Any]]:
    return [*scenario.steps(), ("watermark", LONG_MAX)]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_restored_from_a_snapshot_and_its_changes_at_any_step_it_goes_on_the_same(scenario: Scenario) -> None:
    """The operator tracks its changes; at every step, one restored from the first snapshot and the changes since
    emits what the uninterrupted one emits from there on (each key's heap, watermark and the forgetting of keys
    come back exactly)."""
    steps = steps_of(scenario)
    whole = harness_for(scenario)
    whole.operator.track_changes()
    Feeder().step(whole, *steps[0])
    snapshot = whole.snapshot()
    changes: list[bytes] = []
    for index in range(1, len(steps)):
        changes.append(whole.operator.snapshot_changes())
        restored = harness_for(scenario)
        restored.clock.set_current_time(now_before(steps, index))
        restored.operator.restore_state(snapshot, changes)
        feeder = Feeder()
        for kind, item in steps[index:]:
            feeder.step(restored, kind, item)
        assert collect_result(feeder.items) == collect_result(feeder_tail(scenario, index)), index
        Feeder().step(whole, *steps[index])


def feeder_tail(scenario: Scenario, start: int) -> list[tuple[str, Any]]:
    """What the uninterrupted operator emits from step ``start`` on."""
    harness = harness_for(scenario)
    feeder = Feeder()
    for position, (kind, item) in enumerate(steps_of(scenario)):
        if position == start:
            feeder.items.clear()
        feeder.step(harness, kind, item)
    return feeder.items


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_rescaled_at_any_step_each_key_goes_on_at_its_owner(scenario: Scenario, count: int) -> None:
    """Snapshots rescaled to ``count`` instances: each key's timers and watermark move with it, and each key's
    output from there on is what the single instance gives (in the key's own order)."""
    steps = steps_of(scenario)
    owner = Owner(128, count)
    for start in range(1, len(steps), 3):
        whole = harness_for(scenario)
        for kind, item in steps[:start]:
            Feeder().step(whole, kind, item)
        parts = []
        for blob in whole.operator.rescale_snapshots([whole.snapshot()], owner, count):
            part = harness_for(scenario)
            part.clock.set_current_time(now_before(steps, start))
            part.restore(blob)
            parts.append(part)
        feeder = Feeder()
        for kind, item in steps[start:]:
            targets = [parts[owner(key_of(item))]] if kind == "element" else parts
            for target in targets:
                feeder.step(target, kind, item)
        expected = collect_result(feeder_tail(scenario, start))
        assert per_key(collect_result(feeder.items)) == per_key(expected), start


# -- a keyed process function's timers ---------------------------------------------------------------------------

TIMER_SCENARIOS = Scenario.load_all(PER_KEY / "timers")
assert TIMER_SCENARIOS, "no per-key timer scenario"


@pytest.mark.parametrize("runner", ["harness", "local"])
@pytest.mark.parametrize("scenario", TIMER_SCENARIOS, ids=[s.name for s in TIMER_SCENARIOS])
def test_a_keyed_process_function_s_timers_fire_by_each_key_s_time(scenario: Scenario, runner: str) -> None:
    """``KeyedStream.watermark_per_key``: each key's records (elements with the watermark they saw, timers with the
    watermark that fired them) are Flink's for that key's elements alone."""
    from tests.timer_scenarios import by_key, run_on_harness, run_on_local

    assert scenario.expected is not None
    got = run_on_harness(scenario) if runner == "harness" else run_on_local(scenario)
    assert by_key(got) == by_key(scenario.expected["output"])


# -- properties -------------------------------------------------------------------------------------------------

ASSIGNERS = {
    "tumbling": {"type": "tumbling_event_time", "size_ms": 10},
    "sliding": {"type": "sliding_event_time", "size_ms": 12, "slide_ms": 4},
    "sessions": {"type": "event_time_session", "gap_ms": 5},
}


@st.composite
def per_key_scenarios(draw: st.DrawFn, max_lag: int | None = None) -> Scenario:
    """Random elements of up to 3 keys, each key's clock offset by up to 300 ms from the others."""
    keys = draw(st.lists(st.sampled_from("abc"), min_size=1, max_size=30))
    offsets = {key: draw(st.integers(0, 300)) for key in "abc"}
    events = [
        {"key": key, "value": index, "ts": offsets[key] + draw(st.integers(0, 40))} for index, key in enumerate(keys)
    ]
    config = {
        "assigner": ASSIGNERS[draw(st.sampled_from(sorted(ASSIGNERS)))],
        "trigger": None,
        "evictor": None,
        "allowed_lateness_ms": draw(st.sampled_from([0, 3, 10])),
        "late_side_output": True,
        "watermark": {"type": "bounded_out_of_orderness", "max_ooo_ms": draw(st.sampled_from([0, 2, 8]))},
        "watermark_per_key": {"max_lag_ms": draw(st.integers(0, 400)) if max_lag is None else max_lag},
    }
    return Scenario("random", "", config, events)


def run(scenario: Scenario) -> dict[str, Any]:
    return replay_on(scenario, harness_for(scenario))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(per_key_scenarios(max_lag=0))
def test_with_no_lag_allowed_every_key_runs_on_the_stream_s_watermark(scenario: Scenario) -> None:
    """``max_lag`` 0: every key's time is the stream's watermark (no key's own is ahead of the stream's), so the
    output is the one watermark's, but for the order in which keys firing at one watermark leave."""
    plain = copy.deepcopy(scenario)
    del plain.config["watermark_per_key"]
    assert per_key(run(scenario)) == per_key(run(plain))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(per_key_scenarios(max_lag=10**9))
def test_each_key_alone_is_the_window_of_its_own_elements(scenario: Scenario) -> None:
    """With a lag that never binds, each key's output is the (stream-watermark) window run on that key's
    elements alone: the definition the Flink-produced scenarios check against real Flink."""
    together = per_key(run(scenario))
    for key in {event["key"] for event in scenario.events}:
        alone = copy.deepcopy(scenario)
        del alone.config["watermark_per_key"]
        alone.events = [event if event["key"] == key else {"watermark": -(2**63)} for event in scenario.events]
        mine = per_key(run(alone))
        assert [p for p in together["main"] if p["key"] == key] == mine["main"]
        assert [e for e in together["late"] if e["key"] == key] == mine["late"]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(per_key_scenarios())
def test_no_element_is_lost(scenario: Scenario) -> None:
    """Every element ends in a fired pane or in the late output (the input ends with the final watermark, so no
    pane stays open), whatever the lag."""
    result = run(scenario)
    fired = {seq for pane in result["main"] for seq in pane["seqs"]}
    late = {element["seq"] for element in result["late"]}
    assert fired | late == set(range(len(scenario.events)))
    assert not fired & late


# -- construction -------------------------------------------------------------------------------------------------


def test_invalid_per_key_watermarks_raise_with_what_to_change() -> None:
    with pytest.raises(ValueError, match="negative"):
        PerKeyWatermarks.for_bounded_out_of_orderness(-1)
    with pytest.raises(ValueError, match="negative"):
        PerKeyWatermarks.for_monotonous_timestamps().with_max_lag(-5)


def test_the_floor_is_the_stream_s_watermark_minus_the_lag_and_the_end_of_input_passes_everything() -> None:
    key_time = PerKeyWatermarks.for_bounded_out_of_orderness(10).with_max_lag(100)
    assert key_time.key_watermark(50) == 39
    assert key_time.floor(1000) == 900
    assert key_time.floor(-(2**63)) == -(2**63)
    assert key_time.floor(LONG_MAX) == LONG_MAX
