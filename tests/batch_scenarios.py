"""Window scenarios in BATCH execution mode (``tests/scenarios/batch``), whose output Flink 2.3.0 produced: the
same panes, fired once at the end of input, each with its elements in timestamp order.

Among elements of one key with equal timestamps the orders differ, deliberately (``docs/runtime-modes.md``):
panes keeps their arrival order; Flink's sort is not stable, so its order among them is the sorter's.
:func:`check_against_flink` checks both facts, the second on the stored output, so the documented difference
rests on what Flink produced."""

from __future__ import annotations

from collections import Counter
from typing import Any

from panes.datastream import ListSink, RuntimeExecutionMode, StreamEnvironment
from panes.testing.scenario import Scenario, collect_result
from tests.conftest import DERIVED_SCENARIOS
from tests.scenario_api import input_elements, scenario_pipeline

SCENARIOS = Scenario.load_all(DERIVED_SCENARIOS / "batch")


def run_in_batch_mode(scenario: Scenario, runner: Any) -> dict[str, Any]:
    """The scenario on ``runner`` in BATCH execution mode, as ``collect_result`` numbers it."""
    env = StreamEnvironment(runner, runtime_mode=RuntimeExecutionMode.BATCH)
    tagged = scenario_pipeline(env, env.from_collection(input_elements(scenario)), scenario)
    sink = ListSink()
    tagged.sink_to(sink)
    env.execute(f"batch {scenario.name}")
    return collect_result(sink.values)


def _ties_in_arrival_order(pane: dict[str, Any]) -> bool:
    """Whether the pane's elements of equal timestamp came in arrival (``seq``) order."""
    by_time: dict[int, list[int]] = {}
    for ts, seq in zip(pane["ts_in_order"], pane["seqs_in_order"], strict=True):
        by_time.setdefault(ts, []).append(seq)
    return all(seqs == sorted(seqs) for seqs in by_time.values())


def _without_tie_order(pane: dict[str, Any]) -> dict[str, Any]:
    """The pane, its elements in timestamp order with what each timestamp holds as a multiset."""
    held = Counter(zip(pane["ts_in_order"], pane["seqs_in_order"], pane["values_in_order"], strict=True))
    rest = {k: v for k, v in pane.items() if k not in ("values_in_order", "seqs_in_order", "ts_in_order", "emit_seq")}
    return {**rest, "ts_in_order": pane["ts_in_order"], "held": held}


def check_against_flink(scenario: Scenario, result: dict[str, Any], per_pane_order: bool = True) -> None:
    """Flink's windows, each with its elements in timestamp order and ties in arrival order."""
    assert scenario.expected is not None
    flink = scenario.expected
    assert result["late"] == flink["late"] == []
    ours = [_without_tie_order(p) for p in result["main"]]
    theirs = [_without_tie_order(p) for p in flink["main"]]
    if not per_pane_order:  # a runner whose shards emit in no order across keys
        ours, theirs = sorted(ours, key=repr), sorted(theirs, key=repr)
    assert ours == theirs
    assert all(pane["ts_in_order"] == sorted(pane["ts_in_order"]) for pane in result["main"])
    assert all(_ties_in_arrival_order(pane) for pane in result["main"])


def flink_reordered_ties(scenario: Scenario) -> bool:
    """Whether Flink's stored output has a pane whose elements of equal timestamp are not in arrival order."""
    assert scenario.expected is not None
    return not all(_ties_in_arrival_order(pane) for pane in scenario.expected["main"])
