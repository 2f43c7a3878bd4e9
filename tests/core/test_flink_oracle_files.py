"""The stored outputs real Flink produced (``*.flink.json``): where they came from, and that a scenario keeps a
hand-derived expected output only when real Flink cannot run it (``tools/flink_oracle``)."""

from __future__ import annotations

import importlib.util
import json
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
]


def stored(scenario_file: Path, suffix: str) -> Path:
    return scenario_file.with_name(scenario_file.name.replace(".scenario.json", f".{suffix}.json"))


@pytest.mark.parametrize("scenario_file", SCENARIO_FILES, ids=lambda path: path.name.split(".")[0])
def test_a_scenario_has_flink_s_output_unless_flink_cannot_run_it(scenario_file: Path) -> None:
    scenario = json.loads(scenario_file.read_text())
    reason = ORACLE.not_replayable(scenario)
    flink, derived = stored(scenario_file, "flink"), stored(scenario_file, "expected")
    if reason is None:
        assert flink.exists() and not derived.exists(), "run tools/flink_oracle/oracle.py on it"
    else:
        assert derived.exists() and not flink.exists(), reason


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
    if "output" in result:  # a keyed-timer or two-input scenario
        emitted = [{k: v for k, v in item.items() if k != "emit_seq"} for item in result["output"]]
    else:
        emitted = [{"kind": "main", **pane} for pane in result["main"]]
        emitted += [{"kind": "late", **element} for element in result["late"]]
        emitted.sort(key=lambda item: item["emit_seq"])
    rebuilt = ORACLE.expected_output(scenario, emitted, meta["apache_flink"])
    assert meta["produced_by"] == "tools/flink_oracle"
    assert ORACLE.render(rebuilt) == flink_file.read_text()  # byte for byte
