"""docs/spark-facts.md and its probes (``tools/spark_facts``) name each other: every probe the doc names exists,
every probe is named in the doc and listed in the runner, and the doc cites no one machine's paths."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBES = ROOT / "tools" / "spark_facts"
DOC = (ROOT / "docs" / "spark-facts.md").read_text(encoding="utf-8")
HELPERS = {"__init__", "__main__", "_common", "run_all"}


def listed_in_runner() -> list[str]:
    tree = ast.parse((PROBES / "run_all.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "PROBES":
            assert node.value is not None
            return [name for name, _ in ast.literal_eval(node.value)]
    raise AssertionError("run_all.py has no PROBES")


def probe_files() -> set[str]:
    return {p.stem for p in PROBES.glob("*.py")} - HELPERS


def test_every_probe_file_is_in_the_runner_once_and_every_listed_probe_exists() -> None:
    listed = listed_in_runner()
    assert len(listed) == len(set(listed))
    assert set(listed) == probe_files()


def test_the_doc_names_every_probe_and_only_probes_that_exist() -> None:
    named = set(re.findall(r"tools/spark_facts/(\w+)\.py", DOC))
    assert named - HELPERS == probe_files()
    assert all((PROBES / f"{name}.py").exists() for name in named & HELPERS)


def test_every_probe_says_what_it_shows() -> None:
    for name in sorted(probe_files()):
        tree = ast.parse((PROBES / f"{name}.py").read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{name}.py has no module docstring"


def test_the_doc_cites_no_machine_paths_and_says_how_to_run_the_probes() -> None:
    assert "/work/" not in DOC
    assert "python -m tools.spark_facts" in DOC
