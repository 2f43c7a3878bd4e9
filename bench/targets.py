"""The speed targets, each with what was measured and whether it is met, from the figures the benchmarks wrote.

    .venv/bin/python bench/targets.py       # reads bench/measured/*.json, writes the table into bench/RESULTS.md

``bench/suite.py --json bench/measured/suite.json``, ``bench/startup.py --json bench/measured/startup.json``,
``bench/latency.py --json bench/measured/latency.json`` and ``bench/kafka_pipeline.py --json
bench/measured/kafka_pipeline.json`` and ``bench/local_runner.py --json bench/measured/local_runner.json`` write the
figures (``bench/regenerate.py`` runs all of them in turn). A target whose figure is missing (its case was not run)
says so rather than guessing. The per-core figures put panes' events per second on one core next to Flink's Nexmark
window queries (12,000-40,000 events/s per core: q7 tumbling 12,300, q5 sliding 22,100, q11 session 39,700 on
RocksDB).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from measure import write_section  # noqa: E402

MEASURED = HERE / "measured"
BEGIN, END = "<!-- targets.py writes from here -->", "<!-- targets.py to here -->"
NEXMARK_PER_CORE = {"tumbling": 12_300, "sliding": 22_100, "session": 39_700}
"""Flink's Nexmark results, events/s per core (q7, q5, q11), for the per-core rows."""


@dataclass(frozen=True)
class Target:
    """One target: what it asks, how to read the figure from the measurements, and the bound."""

    text: str
    measure: Callable[[dict[str, Any]], list[float | None]]
    at_least: float | None = None
    at_most: float | None = None
    unit: str = "x"
    unit_of: Callable[[dict[str, Any]], str] | None = None
    """The unit the measurements give, when they say (``bench/local_runner.py --clock cpu``: events per CPU s)."""

    def row(self, measured: dict[str, Any]) -> str:
        values = self.measure(measured)
        unit = self.unit if self.unit_of is None else self.unit_of(measured)
        shown = " / ".join("not run" if v is None else self.show(v, unit) for v in values)
        if any(v is None for v in values):
            verdict = "not measured"
        elif all(self.meets(v) for v in values if v is not None):
            verdict = "**met**"
        else:
            verdict = "not met"
        return f"| {self.text} | {shown} | {verdict} |"

    def show(self, value: float, unit: str | None = None) -> str:
        unit = self.unit if unit is None else unit
        return f"{value:.2f}x" if unit == "x" else f"{value:,.0f} {unit}" if value >= 100 else f"{value:.1f} {unit}"

    def meets(self, value: float) -> bool:
        return (self.at_least is None or value >= self.at_least) and (self.at_most is None or value <= self.at_most)


PER_KEY_SUFFIX = ", time per key"
"""How ``workload.Case.name`` ends for a case with event time per key, which no target here names (the JSON has no
other field that tells it from the stream-time case of the same window, keys and function)."""


def stream_time_cases(measured: dict[str, Any]) -> list[dict[str, Any]]:
    """The suite's cases whose event time is the stream's (the targets' cases)."""
    return [found for found in measured.get("suite", {}).get("cases", []) if not found["name"].endswith(PER_KEY_SUFFIX)]


def case(measured: dict[str, Any], window: str, keys: int, function: str, field: str) -> float | None:
    for found in stream_time_cases(measured):
        if (found["window"], found["keys"], found["function"]) == (window, keys, function) and found["identical"]:
            return float(found[field])
    return None


def ratios(window: str, keys: list[int]) -> Callable[[dict[str, Any]], list[float | None]]:
    return lambda m: [case(m, window, k, "count_sum", "ratio") for k in keys]


def rate(function: str) -> Callable[[dict[str, Any]], list[float | None]]:
    return lambda m: [case(m, "tumbling", 10_000, function, "panes_events_per_s")]


def local(function: str) -> Callable[[dict[str, Any]], list[float | None]]:
    def read(m: dict[str, Any]) -> list[float | None]:
        rates = m.get("suite", {}).get("local_events_per_s") or {}
        return [rates.get(function)]

    return read


def local_runner(function: str) -> Callable[[dict[str, Any]], list[float | None]]:
    """The local runner's rate of ``function`` measured by ``bench/local_runner.py --json`` (no Spark)."""
    return lambda m: [(m.get("local_runner", {}).get("local_events_per_s") or {}).get(function)]


def local_runner_unit(measured: dict[str, Any]) -> str:
    """``ev/s``, or ``ev/CPU s`` when ``bench/local_runner.py`` timed its runs by CPU time (``--clock cpu``)."""
    return "ev/CPU s" if measured.get("local_runner", {}).get("clock") == "cpu" else "ev/s"


def startup(field: str) -> Callable[[dict[str, Any]], list[float | None]]:
    return lambda m: [m.get("startup", {}).get(field)]


def latency(keys: list[int]) -> Callable[[dict[str, Any]], list[float | None]]:
    """panes' median warm micro-batch over native's at each key count (``bench/latency.py``)."""

    def read(m: dict[str, Any]) -> list[float | None]:
        rows = {row["keys"]: row for row in m.get("latency", {}).get("rows", []) if row["identical"]}
        return [float(rows[k]["ratio"]) if k in rows else None for k in keys]

    return read


def kafka(sides: list[str]) -> Callable[[dict[str, Any]], list[float | None]]:
    """panes' events/s over native's through Kafka and back (``bench/kafka_pipeline.py``), per delivery guarantee;
    none when the outputs were not identical."""

    def read(m: dict[str, Any]) -> list[float | None]:
        found = m.get("kafka_pipeline", {})
        ratios = found.get("ratios", {}) if found.get("identical") else {}
        return [ratios.get(side) for side in sides]

    return read


TARGETS = [
    Target(
        "session gap 30 s count+sum >= 1.0x native, 100 / 10,000 / 100,000 keys",
        ratios("session", [100, 10_000, 100_000]),
        1.0,
    ),
    Target("tumbling count+sum at 100,000 keys >= 2.0x native", ratios("tumbling", [100_000]), 2.0),
    Target(
        "count+sum at 100 keys >= 1.0x native: tumbling / sliding / session",
        lambda m: [case(m, w, 100, "count_sum", "ratio") for w in ("tumbling", "sliding", "session")],
        1.0,
    ),
    Target("Python ProcessWindowFunction, tumbling, 10,000 keys >= 50,000 ev/s", rate("python"), 50_000, unit="ev/s"),
    Target("reduce(lambda), tumbling, 10,000 keys >= 80,000 ev/s", rate("reduce"), 80_000, unit="ev/s"),
    Target("user AggregateFunction, tumbling, 10,000 keys >= 80,000 ev/s", rate("aggregate"), 80_000, unit="ev/s"),
    Target(
        "(issue 45) reduce(lambda) / a Python AggregateFunction, tumbling, 10,000 keys >= 50,000 ev/s each",
        lambda m: rate("reduce")(m) + rate("aggregate")(m),
        50_000,
        unit="ev/s",
    ),
    Target(
        "README pipeline on Spark < 15 s wall, session start included", startup("readme_wall_s"), at_most=15, unit="s"
    ),
    Target("the demo's first micro-batch < 5 s", startup("demo_first_batch_s"), at_most=5, unit="s"),
    Target(
        "a warm micro-batch at most 1.2x native's (median), 100 / 100,000 keys",
        latency([100, 100_000]),
        at_most=1.2,
    ),
    Target(
        "(issue 40) Kafka -> tumbling count+sum, 10,000 keys -> Kafka >= 1.0x native, exactly once / at least once",
        kafka(["panes EXACTLY_ONCE", "panes AT_LEAST_ONCE"]),
        1.0,
    ),
    Target("local runner, tumbling count+sum >= 200,000 ev/s", local("count_sum"), 200_000, unit="ev/s"),
    Target(
        "local runner, element by element (ProcessWindowFunction) >= 50,000 ev/s", local("python"), 50_000, unit="ev/s"
    ),
    Target(
        "(issue 45) local runner, tumbling count+sum, 10,000 keys >= 100,000 ev/s (bench/local_runner.py)",
        local_runner("count_sum"),
        100_000,
        unit="ev/s",
        unit_of=local_runner_unit,
    ),
    Target(
        "(issue 45) local runner, Python ProcessWindowFunction, 10,000 keys >= 30,000 ev/s (bench/local_runner.py)",
        local_runner("python"),
        30_000,
        unit="ev/s",
        unit_of=local_runner_unit,
    ),
]


def per_core(measured: dict[str, Any]) -> list[str]:
    """panes' events/s per core by window kind (its count+sum cases of 10 s windows), beside Flink's Nexmark
    per-core figures."""
    cores = measured.get("suite", {}).get("cores") or 1
    lines = []
    for window, nexmark in NEXMARK_PER_CORE.items():
        figures = [
            (found["keys"], found["panes_events_per_s"] / cores)
            for found in stream_time_cases(measured)
            if found["window"] == window and found["function"] == "count_sum" and found.get("size_ms") == 10_000
        ]
        shown = ", ".join(f"{rate:,.0f} at {keys:,} keys" for keys, rate in figures) or "not run"
        lines.append(f"| {window} count+sum | {shown} | {nexmark:,} |")
    return lines


def table(measured: dict[str, Any]) -> str:
    sources = "; ".join(
        f"`{measured[name]['command']}` on {measured[name]['date']}"
        for name in ("suite", "startup", "latency", "kafka_pipeline", "local_runner")
        if name in measured
    )
    return "\n".join(
        [
            f"Written by `.venv/bin/python bench/targets.py` from {sources or 'no measurements'}.",
            "",
            "| target (issue 23 unless named) | measured | |",
            "|---|---|---|",
            *(target.row(measured) for target in TARGETS),
            "",
            "Events per second per core (the whole query over the machine's cores, both shared by the JVM and the "
            "Python workers), beside Flink's Nexmark window queries on RocksDB:",
            "",
            "| window | panes ev/s per core | Flink Nexmark ev/s per core |",
            "|---|---|---|",
            *per_core(measured),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--measured", default=str(MEASURED), help="folder of suite.json and startup.json")
    parser.add_argument("--output", default=str(HERE / "RESULTS.md"))
    args = parser.parse_args()
    measured = {
        path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(Path(args.measured).glob("*.json"))
    }
    block = table(measured)
    print(block)
    write_section(Path(args.output), BEGIN, END, block, heading="Targets", at_top=True)


if __name__ == "__main__":
    main()
