"""Run Flink's own PyFlink DataStream examples on real PyFlink and on panes, ported by changing imports only,
and compare what each prints.

Needs a PyFlink installation (``pip install apache-flink==2.3.0`` in a virtual environment of its own; Java 17)
and the project's environment (``scripts/bootstrap.sh``). The examples are read from PyFlink's installed
package (``pyflink/examples/datastream``), never copied into this project; each is run twice on its default
input (no arguments): once with PyFlink's interpreter as it is, once with panes' interpreter after its
``from pyflink... import ...`` statements were rewritten to the panes modules the migration guide
(``docs/migrating-from-pyflink.md``) maps each name to. Usage::

    python tools/pyflink_examples.py --pyflink-python /path/to/flink-venv/bin/python [example ...]

It prints one line per example (same output, or the first difference) and exits 1 when any differs. PyFlink
runs an example at its default parallelism (the machine's cores) unless the example sets one: then its print
sink prefixes each line with the subtask (``1> ``) and parallel subtasks' records meet in an order that depends
on scheduling; such output counts as the same when its lines, without the prefixes, are panes' lines.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

EXAMPLES = (
    "basic_operations",
    "event_time_timer",
    "process_json_data",
    "state_access",
    "word_count",
    "windowing/tumbling_time_window",
    "windowing/sliding_time_window",
    "windowing/session_with_gap_window",
    "windowing/session_with_dynamic_gap_window",
    "windowing/tumbling_count_window",
)
"""The examples that run on their default input without an external system (Kafka, Elasticsearch, ...); the
Kafka ones run with ``tools/pyflink_kafka_examples.py``, against a broker."""

MODULES = {
    "pyflink.datastream": "panes.datastream",
    "pyflink.datastream.functions": "panes.functions",
    "pyflink.datastream.window": "panes.windowing",
    "pyflink.datastream.state": "panes.state",
    "pyflink.common.time": "panes.time",
    "pyflink.common.typeinfo": "panes.types",
    "pyflink.common.watermark_strategy": "panes.watermarks",
    "pyflink.datastream.connectors.file_system": "panes.connectors.file_system",
    "pyflink.datastream.connectors.kafka": "panes.connectors.kafka",
    "pyflink.common.serialization": "panes.common.serialization",
    "pyflink.datastream.formats.json": "panes.datastream.formats.json",
    "pyflink.datastream.formats.csv": "panes.datastream.formats.csv",
    "pyflink.datastream.formats.avro": "panes.datastream.formats.avro",
}
"""The migration guide's module table (one PyFlink module, one panes module)."""

COMMON = {
    "Types": "panes.types",
    "Row": "panes.types",
    "WatermarkStrategy": "panes.watermarks",
    "Time": "panes.time",
    "Duration": "panes.time",
    "Instant": "panes.time",
    "Encoder": "panes.connectors.file_system",
    "SimpleStringSchema": "panes.common.serialization",
    "ByteArraySchema": "panes.common.serialization",
}
"""``pyflink.common`` re-exports names of several modules: each name's panes module."""


NOISE = ("Using Any for unsupported type", "PYFLINK_CYTHON_ENABLED", "No module named google.cloud")
"""Lines PyFlink (and the Beam runtime under it) print to stdout about themselves, not the job's output."""

SUBTASK = re.compile(r"^\d+> ")
"""The prefix of a print sink running with parallelism above 1 (``3> ``): which subtask printed the line."""


def ported(source: str) -> str:
    """``source`` with each ``from pyflink... import`` statement replaced by imports of the panes modules."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("pyflink"):
            continue
        by_module: dict[str, list[str]] = {}
        for alias in node.names:
            module = COMMON.get(alias.name) if node.module == "pyflink.common" else MODULES.get(node.module or "")
            if module is None:
                raise KeyError(f"no panes module for {node.module}.{alias.name}")
            spelled = alias.name if alias.asname is None else f"{alias.name} as {alias.asname}"
            by_module.setdefault(module, []).append(spelled)
        indent = " " * node.col_offset
        text = "".join(f"{indent}from {m} import {', '.join(names)}\n" for m, names in by_module.items())
        assert node.end_lineno is not None
        edits.append((node.lineno - 1, node.end_lineno, text))
    for start, end, text in sorted(edits, reverse=True):
        lines[start:end] = [text]
    return "".join(lines)


def run(python: str, script: Path, env: dict[str, str]) -> tuple[int, list[str]]:
    """The exit code and the printed lines (without logging noise) of ``script`` run by ``python``."""
    done = subprocess.run(
        [python, str(script)], check=False, capture_output=True, text=True, env=env, cwd=script.parent, timeout=600
    )
    return done.returncode, [line for line in done.stdout.splitlines() if line.strip() and not line.startswith(NOISE)]


def examples_folder(pyflink_python: str) -> Path:
    """The ``examples/datastream`` folder of the PyFlink installed for ``pyflink_python``."""
    located = subprocess.run(
        [pyflink_python, "-c", "import pyflink, os; print(os.path.dirname(pyflink.__file__))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(located.stdout.strip()) / "examples" / "datastream"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pyflink-python", required=True, help="the Python of a virtual env with apache-flink")
    parser.add_argument("examples", nargs="*", default=list(EXAMPLES))
    args = parser.parse_args()
    folder = examples_folder(args.pyflink_python)
    panes_env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    # PyFlink starts its Python workers with the ``python`` on the PATH: the one of its own environment
    bin_folder = os.path.dirname(args.pyflink_python)
    flink_env = dict(os.environ, PATH=f"{bin_folder}{os.pathsep}{os.environ.get('PATH', '')}")
    failed = 0
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.examples:
            original = folder / f"{name}.py"
            port = Path(scratch) / f"{name.replace('/', '_')}.py"
            port.write_text(ported(original.read_text()))
            flink_code, flink_lines = run(args.pyflink_python, original, flink_env)
            panes_code, panes_lines = run(sys.executable, port, panes_env)
            if flink_code != 0 or panes_code != 0:
                print(f"{name}: exit codes PyFlink {flink_code}, panes {panes_code}")
                failed += 1
            elif flink_lines == panes_lines:
                print(f"{name}: the same {len(flink_lines)} lines")
            elif sorted(SUBTASK.sub("", line) for line in flink_lines) == sorted(panes_lines):
                # PyFlink ran at its default parallelism (the machine's cores): which subtask prints a line, and
                # the order in which parallel subtasks' records meet, depend on its scheduling; in BATCH mode
                # Flink orders keys by their serialized bytes, panes by their natural order
                parallel = any(SUBTASK.match(line) for line in flink_lines)
                why = "PyFlink's from parallel subtasks" if parallel else "in another order"
                print(f"{name}: the same {len(flink_lines)} lines, {why}")
            else:
                first = next(
                    (i for i, (a, b) in enumerate(zip(flink_lines, panes_lines, strict=False)) if a != b),
                    min(len(flink_lines), len(panes_lines)),
                )
                flink_line = flink_lines[first] if first < len(flink_lines) else "<end>"
                panes_line = panes_lines[first] if first < len(panes_lines) else "<end>"
                same_set = sorted(flink_lines) == sorted(panes_lines)
                print(
                    f"{name}: differs at line {first + 1}: PyFlink {flink_line!r}, panes {panes_line!r}"
                    + (" (the same lines in another order)" if same_set else "")
                )
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
