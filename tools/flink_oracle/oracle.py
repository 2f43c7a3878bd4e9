"""The Flink oracle: run scenario files through real Apache Flink and write the output Flink produced.

A scenario file is run by ``FlinkScenario.java`` beside this script: Flink's own DataStream API and operators,
local, parallelism 1, STREAMING mode (BATCH for a scenario whose config says ``"mode": "BATCH"``), what the
operator emitted recorded in order. Three families: window scenarios
(``tests/scenarios/NN_name.scenario.json``, the format of ``panes.testing.scenario``: a keyed window recording
each pane whole and the late elements), keyed-timer scenarios (``tests/scenarios/timers``, ``"kind":
"keyed_timers"``: a ``KeyedProcessFunction`` registering and deleting the event-time timers each element lists,
recording every element and timer with the watermark it saw; ``tests/timer_scenarios.py`` has the rules) and
two-input scenarios (``tests/scenarios/two_input``, ``"kind"`` ``connected_timers``, ``broadcast_timers``,
``interval_join``, ``window_join`` or ``window_co_group``, run by ``TwoInputScenario.java``: each event names its
``side``, each side has its own punctuated watermarks; ``tests/two_input_scenarios.py`` has the rules).
This script compiles that program against the jars of a PyFlink installation, numbers what it printed as the
scenario files do (``fire_index``, ``emit_seq``; ``panes.testing.scenario.collect_result``) and writes
``NN_name.flink.json`` beside the scenario, with a ``meta`` entry saying which Flink produced it. The tests read
the stored files and never need Flink (``tests/core/test_flink_oracle_files.py`` checks their provenance).

Needs Java 17 (``javac``) and PyFlink (``pip install apache-flink==2.3.0`` in a virtual environment of its own),
plus the project's environment for ``panes.testing``::

    python tools/flink_oracle/oracle.py --pyflink-python /path/to/flink/bin/python tests/scenarios/*.scenario.json
    python tools/flink_oracle/oracle.py --pyflink-python ... --check FILE...   # compare, write nothing

panes' composite triggers have no Flink counterpart, but a trigger with the same rule can be written in Flink's
Trigger API: ``OracleTriggers.java`` beside this script holds such hand-written triggers, each the twin of a Python
one in ``tests/composite_oracles.py``. A scenario of panes' own triggers names the Flink trigger that stands in for
its trigger (and its accumulation mode: discarding is Flink's ``PurgingTrigger`` around it) in a top-level
``"flink_trigger"`` entry, in the format of the config's ``trigger`` plus ``{"type": "oracle", "class": NAME,
"args": [...]}`` for a trigger of ``OracleTriggers.java``; panes still runs the config's own trigger. The written
file's ``meta`` says which trigger Flink ran (``flink_trigger``, as Java, and ``flink_trigger_source``). Pane info
(``"pane_info": true``) has no Flink counterpart either: Flink's file holds everything else, and the pane info of
each firing is derived by hand in ``NN_name.pane_info.json`` beside it (``panes.testing.scenario`` merges the two).

Not every scenario can be replayed: processing time is the wall clock in a Flink job (scenarios with
``{"processing_time": T}`` events), retracting accumulation emits rows (retractions) no Flink window emits, and a
panes trigger or accumulation mode without a ``flink_trigger`` has no Flink form. Those are refused with the reason
and keep their hand-derived ``.expected.json`` (``ContinuousProcessingTimeProbe.java`` beside this script runs the
processing-time scenario 51 on Flink with the wall clock instead, by hand).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "src"))

from panes.testing.scenario import collect_result  # noqa: E402

FLINK_TRIGGERS = {"count", "purging", "continuous_event_time", "event_time"}
FLINK_ASSIGNERS = {
    "tumbling_event_time",
    "sliding_event_time",
    "event_time_session",
    "global",
    "global_end_of_stream",
    "count_tumbling",
    "count_sliding",
}
MAX = 9223372036854775807
JAVA_SOURCES = ("FlinkScenario.java", "TwoInputScenario.java", "OracleTriggers.java")
ORACLE_TRIGGERS_SOURCE = "tools/flink_oracle/OracleTriggers.java"
RECORDING_KINDS = {
    "keyed_timers",
    "connected_timers",
    "broadcast_timers",
    "interval_join",
    "window_join",
    "window_co_group",
}
"""Scenario kinds whose expected output is the function's records in order (``output``), not panes."""
TWO_INPUT_KINDS = RECORDING_KINDS - {"keyed_timers"}


def not_replayable(scenario: dict[str, Any]) -> str | None:
    """Why real Flink cannot produce this scenario's output, or ``None`` when it can."""
    config = scenario["config"]
    if "watermark_per_key" in config and config["watermark"]["type"] not in ("bounded_out_of_orderness", "monotonous"):
        return "a key makes its own watermark with a bounded_out_of_orderness or monotonous rule only"
    if any("processing_time" in event for event in scenario["events"]):
        return "it moves processing time, which is the wall clock in a Flink job"
    if config.get("kind", "window") == "keyed_timers":
        return None
    if config.get("kind") in TWO_INPUT_KINDS:
        return _two_input_not_replayable(scenario)
    accumulation = config.get("accumulation", "accumulating")
    if accumulation == "retracting":
        return "a retracting window emits retractions, which no Flink window does"
    if config["assigner"]["type"] not in FLINK_ASSIGNERS:
        return f"no Flink assigner for {config['assigner']['type']!r}"
    stand_in = scenario.get("flink_trigger")
    if stand_in is None:
        if accumulation != "accumulating":
            return f"the accumulation mode {accumulation!r} is panes' own and no flink_trigger stands in for it"
        unknown = [kind for kind in _trigger_kinds(config.get("trigger")) if kind not in FLINK_TRIGGERS]
        if unknown:
            return f"the trigger {unknown[0]!r} is panes' own and no flink_trigger stands in for it"
        return None
    unknown = [kind for kind in _trigger_kinds(stand_in) if kind not in FLINK_TRIGGERS | {"oracle"}]
    if unknown:
        raise ValueError(f"the flink_trigger names {unknown[0]!r}, which is not a Flink trigger")
    if accumulation == "discarding" and stand_in["type"] != "purging":
        raise ValueError("a discarding scenario's flink_trigger is Flink's PurgingTrigger around the trigger")
    return None


def _trigger_kinds(spec: dict[str, Any] | None) -> list[str]:
    """The trigger types of ``spec`` and of the triggers it wraps (``inner``, ``parts``, ``main``, ...)."""
    if spec is None:
        return []
    wrapped = [spec[name] for name in ("inner", "main", "until", "early", "late") if spec.get(name)]
    wrapped += spec.get("parts", [])
    return [spec["type"], *(kind for part in wrapped for kind in _trigger_kinds(part))]


def describe_trigger(spec: dict[str, Any]) -> str:
    """A Flink trigger spec (a ``flink_trigger``) as the Java expression that builds it in ``FlinkScenario.java``."""
    kind = spec["type"]
    if kind == "oracle":
        args = ", ".join(str(arg).lower() if isinstance(arg, bool) else str(arg) for arg in spec.get("args", []))
        return f"{spec['class']}({args})"
    if kind == "count":
        return f"CountTrigger.of({spec['count']})"
    if kind == "purging":
        return f"PurgingTrigger.of({describe_trigger(spec['inner'])})"
    if kind == "event_time":
        return "EventTimeTrigger.create()"
    if kind == "continuous_event_time":
        return f"ContinuousEventTimeTrigger.of(Duration.ofMillis({spec['interval_ms']}))"
    raise ValueError(f"no Flink trigger for {kind!r}")


def _two_input_not_replayable(scenario: dict[str, Any]) -> str | None:
    """Which input of a Flink two-input task is read next is a race; ``TwoInputScenario.java`` gates the source so
    the order is the scenario's, which needs each side's watermarks in the events, ending side by side."""
    if scenario["config"]["watermark"]["type"] != "punctuated":
        return "a two-input scenario's watermarks are punctuated, each side its own"
    ends = [(event.get("side"), event.get("watermark")) for event in scenario["events"][-2:]]
    if ends != [(1, MAX), (2, MAX)]:
        return "a two-input scenario ends with side 1's watermark Long.MAX_VALUE, then side 2's"
    return None


def flink_lib(pyflink_python: str) -> Path:
    """The ``lib`` folder of the PyFlink installation of ``pyflink_python``."""
    code = "import os, pyflink; print(os.path.join(os.path.dirname(pyflink.__file__), 'lib'))"
    return Path(subprocess.run([pyflink_python, "-c", code], check=True, capture_output=True, text=True).stdout.strip())


def flink_version(lib: Path) -> str:
    (dist,) = lib.glob("flink-dist-*.jar")
    match = re.fullmatch(r"flink-dist-(.+)\.jar", dist.name)
    assert match is not None
    return match.group(1)


def compile_program(lib: Path, into: Path) -> None:
    subprocess.run(
        ["javac", "-nowarn", "-d", str(into), "-cp", f"{lib}/*", *(str(HERE / name) for name in JAVA_SOURCES)],
        check=True,
        capture_output=True,
    )


def run_flink(lib: Path, classes: Path, scenario_file: Path) -> list[dict[str, Any]]:
    """What Flink's window operator emitted for the scenario, in order (``kind`` ``main`` or ``late``)."""
    done = subprocess.run(
        ["java", "-cp", f"{lib}/*:{classes}", "FlinkScenario", str(scenario_file)],
        check=False,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"Flink failed on {scenario_file.name}:\n{done.stderr[-4000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def expected_output(scenario: dict[str, Any], emitted: list[dict[str, Any]], version: str) -> dict[str, Any]:
    """The expected-output file of ``scenario`` for what Flink ``emitted``: for a window scenario its panes and
    late elements numbered as the scenario files do, for a keyed-timer or two-input one the function's records in
    order (``emit_seq``)."""
    meta = {
        "engine": "java",
        "apache_flink": version,
        "parallelism": 1,
        "mode": scenario["config"].get("mode", "STREAMING"),
        "final_watermark": MAX,
        "watermark": scenario["config"]["watermark"],
        "produced_by": "tools/flink_oracle",
    }
    if "flink_trigger" in scenario:  # a hand-written Flink trigger stood in for panes' own
        meta["flink_trigger"] = describe_trigger(scenario["flink_trigger"])
        if "oracle" in _trigger_kinds(scenario["flink_trigger"]):
            meta["flink_trigger_source"] = ORACLE_TRIGGERS_SOURCE
    if scenario["config"].get("kind", "window") in RECORDING_KINDS:
        output = [{**item, "emit_seq": seq} for seq, item in enumerate(emitted)]
        return {"output": output, "meta": meta}
    entries: list[tuple[str, Any]] = []
    for item in emitted:
        if item["kind"] == "late":
            entries.append(("late", (item["key"], item["value"], item["ts"], item["seq"])))
            continue
        values, seqs = item["values_in_order"], item["seqs_in_order"]
        pane = {
            "key": item["key"],
            "window_start": item["window_start"],
            "window_end": item["window_end"],
            "values": sorted(values),
            "count": len(values),
            "sum": sum(values),
            "watermark": item["watermark"],
            "end_of_input": item["watermark"] == MAX,
            "seqs": sorted(seqs),
            "values_in_order": values,
            "seqs_in_order": seqs,
            "ts_in_order": item["ts_in_order"],
        }
        if "window_type" in item:
            pane["window_type"] = item["window_type"]
        entries.append(("main", pane))
    result: dict[str, Any] = dict(collect_result(entries))
    result["main"].sort(key=lambda p: (p["key"], p["window_start"] or 0, p["window_end"] or 0, p["fire_index"]))
    result["meta"] = meta
    return result


def effective_watermarks(scenario: dict[str, Any], key: Any) -> list[tuple[int, int | None]]:
    """Event time per key, as ``panes.watermarks.per_key`` defines it, written here without panes: ``key``'s
    stream of its own, as ``(seq, None)`` for each of its elements and ``(seq, W)`` for each watermark its
    effective time ``max(own, stream - max_lag)`` reaches (only increasing ones; ``seq`` is the event after which
    it moves). ``own`` is the rule of the scenario's watermark over the key's elements, ``stream`` the same rule
    over all elements (Flink's generator, after each element)."""
    spec = scenario["config"]["watermark"]
    delay = spec.get("max_ooo_ms", 0) if spec["type"] == "bounded_out_of_orderness" else 0
    lag = scenario["config"]["watermark_per_key"]["max_lag_ms"]
    own = stream = effective = -MAX - 1
    steps: list[tuple[int, int | None]] = []
    for seq, event in enumerate(scenario["events"]):
        if "ts" not in event:
            continue  # a per-key scenario's stream watermark comes from its elements
        candidate = max(event["ts"], -MAX + delay) - delay - 1
        if event["key"] == key:
            steps.append((seq, None))
            own = max(own, candidate)
        stream = max(stream, candidate)
        reached = max(own, stream - lag)
        if reached > effective:
            effective = reached
            steps.append((seq, effective))
    return steps


def run_per_key(lib: Path, classes: Path, scenario: dict[str, Any], version: str) -> dict[str, Any]:
    """The expected output of a ``watermark_per_key`` scenario: for each key, Flink's output for that key's
    elements run as a stream of their own, its watermarks punctuated at the key's effective time
    (:func:`effective_watermarks`), with seqs pointing into the whole scenario's events (:func:`per_key_output`)."""
    keys = list(dict.fromkeys(event["key"] for event in scenario["events"] if "key" in event))
    emitted: dict[Any, list[dict[str, Any]]] = {}
    for key in keys:
        events: list[dict[str, Any]] = []
        seqs: list[int] = []
        for seq, watermark in effective_watermarks(scenario, key):
            events.append(dict(scenario["events"][seq]) if watermark is None else {"watermark": watermark})
            seqs.append(seq)
        with tempfile.NamedTemporaryFile("w", suffix=".scenario.json", delete=False) as handle:
            json.dump({"config": key_alone(scenario), "events": events}, handle)
        emitted[key] = run_flink(lib, classes, Path(handle.name))
        Path(handle.name).unlink()
        for item in emitted[key]:
            if "seq" in item:  # a late element, or an element a keyed-timer function recorded
                item["seq"] = seqs[item["seq"]]
            if "seqs_in_order" in item:  # a pane
                item["seqs_in_order"] = [seqs[seq] for seq in item["seqs_in_order"]]
    return per_key_output(scenario, emitted, version)


def key_alone(scenario: dict[str, Any]) -> dict[str, Any]:
    """The config Flink runs one key of a ``watermark_per_key`` scenario with: its own, watermarks punctuated."""
    config = {name: value for name, value in scenario["config"].items() if name != "watermark_per_key"}
    return {**config, "watermark": {"type": "punctuated"}}


def per_key_output(scenario: dict[str, Any], emitted: dict[Any, list[dict[str, Any]]], version: str) -> dict[str, Any]:
    """The expected-output file of a ``watermark_per_key`` scenario from what Flink ``emitted`` for each key alone
    (in order): each key's output numbered on its own (``emit_seq`` counts the key's emissions,
    ``panes.testing.scenario.emission_order_per_key``), then all keys' panes and late elements together, or, for
    a keyed-timer scenario, all keys' records, key after key."""
    recording = scenario["config"].get("kind", "window") in RECORDING_KINDS
    result: dict[str, Any] = {"output": []} if recording else {"main": [], "late": []}
    for items in emitted.values():
        own = expected_output({"config": key_alone(scenario)}, items, version)
        for part, entries in result.items():
            entries.extend(own[part])
    if not recording:
        result["main"].sort(key=lambda p: (p["key"], p["window_start"] or 0, p["window_end"] or 0, p["fire_index"]))
        result["late"].sort(key=lambda element: element["seq"])
    meta = expected_output(scenario, [], version)["meta"]
    meta["per_key"] = "each key's elements alone, its effective watermarks punctuated (effective_watermarks)"
    result["meta"] = meta
    return result


def render(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pyflink-python", required=True, help="the Python of a PyFlink 2.3.0 installation")
    parser.add_argument("--check", action="store_true", help="compare with the stored files, write nothing")
    parser.add_argument("scenarios", nargs="+", type=Path, help="NN_name.scenario.json files")
    args = parser.parse_args(argv)
    lib = flink_lib(args.pyflink_python)
    version = flink_version(lib)
    differences = 0
    with tempfile.TemporaryDirectory() as classes:
        compile_program(lib, Path(classes))
        for scenario_file in args.scenarios:
            scenario = json.loads(scenario_file.read_text())
            name = scenario_file.name.removesuffix(".scenario.json")
            reason = not_replayable(scenario)
            if reason is not None:
                print(f"{name}: not replayed on Flink: {reason}")
                continue
            if "watermark_per_key" in scenario["config"]:
                result = run_per_key(lib, Path(classes), scenario, version)
            else:
                result = expected_output(scenario, run_flink(lib, Path(classes), scenario_file), version)
            target = scenario_file.with_name(f"{name}.flink.json")
            if args.check:
                same = target.exists() and _without_timings(json.loads(target.read_text())) == _without_timings(result)
                differences += not same
                print(f"{name}: {'the stored file is what Flink ' + version + ' produces' if same else 'DIFFERS'}")
            else:
                target.write_text(render(result))
                print(f"{name}: wrote {target.name}")
    return 1 if differences else 0


def _without_timings(result: dict[str, Any]) -> dict[str, Any]:
    """A stored result without what varies from run to run or names the producer (the shared examples record
    their build and execution seconds)."""
    meta = {k: v for k, v in result.get("meta", {}).items() if k not in ("build_s", "execute_s", "produced_by")}
    return {**result, "meta": meta}


if __name__ == "__main__":
    sys.exit(main())
