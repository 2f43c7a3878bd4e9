"""The stored outputs real Flink produced (``*.flink.json``): where they came from, and that a scenario keeps a
hand-derived expected output only when real Flink cannot run it (``tools/flink_oracle``); a scenario of panes' own
triggers runs on Flink with the hand-written Java trigger its ``flink_trigger`` names, and the pane info Flink has
no counterpart for is derived by hand beside Flink's output (``NN_name.pane_info.json``)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import CONFORMANCE, DERIVED_SCENARIOS

ROOT = Path(__file__).resolve().parents[2]


def oracle_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("flink_oracle", ROOT / "tools" / "flink_oracle" / "oracle.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ORACLE = oracle_module()
SCENARIO_FILES = [
    *sorted(CONFORMANCE.glob("*.scenario.json")),
    *sorted(DERIVED_SCENARIOS.glob("*.scenario.json")),
    *sorted((DERIVED_SCENARIOS / "timers").glob("*.scenario.json")),
    *sorted((DERIVED_SCENARIOS / "two_input").glob("*.scenario.json")),
    *sorted((DERIVED_SCENARIOS / "batch").glob("*.scenario.json")),
    *sorted((DERIVED_SCENARIOS / "sorted_input").glob("*.scenario.json")),
    *sorted((DERIVED_SCENARIOS / "per_key").glob("*.scenario.json")),
    *sorted((DERIVED_SCENARIOS / "per_key" / "timers").glob("*.scenario.json")),
]


def stored(scenario_file: Path, suffix: str) -> Path:
    return scenario_file.with_name(scenario_file.name.replace(".scenario.json", f".{suffix}.json"))


@pytest.mark.parametrize("scenario_file", SCENARIO_FILES, ids=lambda path: path.name.split(".")[0])
def test_a_scenario_has_flink_s_output_unless_flink_cannot_run_it(scenario_file: Path) -> None:
    scenario = json.loads(scenario_file.read_text())
    reason = ORACLE.not_replayable(scenario)
    flink, derived = stored(scenario_file, "flink"), stored(scenario_file, "expected")
    pane_info = stored(scenario_file, "pane_info")
    if reason is None:
        assert flink.exists() and not derived.exists(), "run tools/flink_oracle/oracle.py on it"
        # Flink's output has no pane info: a scenario recording it derives that part by hand, beside Flink's file
        assert pane_info.exists() == bool(scenario["config"].get("pane_info"))
    else:
        assert derived.exists() and not flink.exists() and not pane_info.exists(), reason


@pytest.mark.parametrize(
    "scenario_file",
    [f for f in SCENARIO_FILES if "flink_trigger" in json.loads(f.read_text())],
    ids=lambda path: path.name.split(".")[0],
)
def test_a_flink_trigger_stands_in_only_for_panes_own_and_names_a_java_trigger(scenario_file: Path) -> None:
    scenario = json.loads(scenario_file.read_text())
    own = {k: v for k, v in scenario.items() if k != "flink_trigger"}
    # without it Flink could not run the scenario: its trigger or accumulation mode is panes' own
    assert ORACLE.not_replayable(own) is not None
    java = (ROOT / "tools" / "flink_oracle" / "OracleTriggers.java").read_text()
    named = re.findall(r'"class": "(\w+)"', json.dumps(scenario["flink_trigger"]))
    assert named
    for name in named:
        assert f"public static final class {name} extends Trigger<Object, Window>" in java
        assert f'case "{name}":' in java
    meta = json.loads(stored(scenario_file, "flink").read_text())["meta"]
    assert meta["flink_trigger"] == ORACLE.describe_trigger(scenario["flink_trigger"])
    assert meta["flink_trigger_source"] == "tools/flink_oracle/OracleTriggers.java"


FIRING = re.compile(r"\b([a-z]) \[([\d, ]*)\] \(fire (\d+), (EARLY|ON_TIME|LATE)\b")
"""A firing as a derivation writes it: ``a [1, 2, 3] (fire 1, ON_TIME``."""


@pytest.mark.parametrize(
    "scenario_file",
    [f for f in SCENARIO_FILES if stored(f, "pane_info").exists()],
    ids=lambda path: path.name.split(".")[0],
)
def test_the_hand_derived_pane_info_beside_flink_s_output_is_the_derivation_s(scenario_file: Path) -> None:
    """Each firing's pane info, checked against Flink's panes and the scenario's derivation: its timing is the one
    the derivation gives the firing (found by key, contents and fire index), its index counts the window's
    firings before it (none is a retraction), and it is the last only when it fired at the window's cleanup."""
    scenario = json.loads(scenario_file.read_text())
    flink = json.loads(stored(scenario_file, "flink").read_text())
    entries = json.loads(stored(scenario_file, "pane_info").read_text())["panes"]
    derived = {
        (m[1], tuple(int(v) for v in m[2].split(", ")), int(m[3])): m[4].lower().replace("_", " ")
        for line in scenario["derivation"]
        for m in FIRING.finditer(line)
    }
    lateness = scenario["config"].get("allowed_lateness_ms", 0)
    panes = {(p["key"], p["window_start"], p["window_end"], p["fire_index"]): p for p in flink["main"]}
    assert len(entries) == len(panes) == len(derived)
    for entry in entries:
        pane = panes[entry["key"], entry["window_start"], entry["window_end"], entry["fire_index"]]
        assert entry["pane_timing"] == derived[pane["key"], tuple(pane["values"]), pane["fire_index"]]
        assert entry["pane_index"] == pane["fire_index"]
        assert entry["pane_is_last"] == (pane["end_of_input"] or pane["watermark"] >= pane["window_end"] - 1 + lateness)


@pytest.mark.parametrize(
    "flink_file",
    [stored(f, "flink") for f in SCENARIO_FILES if stored(f, "flink").exists()],
    ids=lambda path: path.name.split(".")[0],
)
def test_a_stored_flink_output_says_which_flink_produced_it_and_is_the_oracle_s_rendering(flink_file: Path) -> None:
    result: dict[str, Any] = json.loads(flink_file.read_text())
    meta = result["meta"]
    scenario = json.loads(flink_file.with_name(flink_file.name.replace(".flink.json", ".scenario.json")).read_text())
    provenance = (meta["engine"], meta["apache_flink"], meta["parallelism"], meta["mode"])
    assert provenance == ("java", "2.3.0", 1, scenario["config"].get("mode", "STREAMING"))
    assert meta["watermark"] == scenario["config"]["watermark"]
    # what the oracle writes from the same emissions (in emit order, as the Java program printed them)
    if "watermark_per_key" in scenario["config"]:  # each key's output from a Flink run of its own
        by_key: dict[Any, list[dict[str, Any]]] = {}
        if "output" in result:  # keyed timers: each key's records, key after key
            items = [{k: v for k, v in record.items() if k != "emit_seq"} for record in result["output"]]
        else:
            items = [{"kind": "main", **pane} for pane in result["main"]]
            items += [{"kind": "late", **element} for element in result["late"]]
            items.sort(key=lambda item: item["emit_seq"])
        for item in items:
            by_key.setdefault(item["key"], []).append(item)
        assert meta["produced_by"] == "tools/flink_oracle"
        assert ORACLE.render(ORACLE.per_key_output(scenario, by_key, meta["apache_flink"])) == flink_file.read_text()
        return
    if "output" in result:  # a keyed-timer or two-input scenario
        emitted = [{k: v for k, v in item.items() if k != "emit_seq"} for item in result["output"]]
    else:
        emitted = [{"kind": "main", **pane} for pane in result["main"]]
        emitted += [{"kind": "late", **element} for element in result["late"]]
        emitted.sort(key=lambda item: item["emit_seq"])
    rebuilt = ORACLE.expected_output(scenario, emitted, meta["apache_flink"])
    assert meta["produced_by"] == "tools/flink_oracle"
    assert ORACLE.render(rebuilt) == flink_file.read_text()  # byte for byte
