"""The architecture's import rule: only ``panes.spark`` imports pyspark, and the core never imports runners."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "panes"
CORE = [
    "windowing",
    "state",
    "timers",
    "operators",
    "watermarks",
    "testing",
    "functions",
    "types",
    "elements.py",
    "time.py",
    "tags.py",
    "errors.py",
    "keygroups.py",
    "java_hash.py",
]


def imported_modules(path: Path, at_run_time: bool = False) -> set[str]:
    """The modules ``path`` imports; with ``at_run_time``, not those only type checkers import (the body of an
    ``if TYPE_CHECKING:``)."""
    tree = ast.parse(path.read_text())
    skipped: set[int] = set()
    if at_run_time:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                skipped.update(id(inner) for statement in node.body for inner in ast.walk(statement))
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def python_files(entry: str) -> list[Path]:
    target = PACKAGE / entry
    return [target] if target.is_file() else sorted(target.rglob("*.py"))


def test_only_the_spark_package_imports_pyspark() -> None:
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "spark" not in path.relative_to(PACKAGE).parts[:1]
        and any(name == "pyspark" or name.startswith("pyspark.") for name in imported_modules(path))
    ]
    assert offenders == []


def test_the_core_imports_neither_the_api_nor_the_runners() -> None:
    forbidden = ("panes.datastream", "panes.local", "panes.spark", "panes.cli", "panes.timeline")
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(n for n in imported_modules(path) if n.startswith(forbidden))
        for entry in CORE
        for path in python_files(entry)
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_the_core_depends_only_on_the_standard_library_numpy_and_pyarrow() -> None:
    import sys

    allowed_third_party = {"numpy", "pyarrow"}
    for entry in CORE:
        for path in python_files(entry):
            for name in imported_modules(path, at_run_time=True):
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or top == "panes" or top in allowed_third_party, (path, name)


def test_the_api_does_not_import_the_runners() -> None:
    """The environment is handed a runner or looks one up by name (entry points); runners import the API's
    plan and execution modules, never the other way round."""
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(
            n for n in imported_modules(path) if n.startswith(("panes.local", "panes.spark", "panes.cli"))
        )
        for path in python_files("datastream")
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_only_the_timeline_package_imports_matplotlib() -> None:
    """Plotting is an optional extra (``panes[timeline]``): nothing else may need it."""
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.relative_to(PACKAGE).parts[0] != "timeline"
        and any(name.split(".")[0] == "matplotlib" for name in imported_modules(path))
    ]
    assert offenders == []


def test_the_api_and_the_runners_do_not_import_the_timeline() -> None:
    offenders = [
        str(path.relative_to(PACKAGE))
        for entry in ("datastream", "local", "spark")
        for path in python_files(entry)
        if any(name.startswith("panes.timeline") for name in imported_modules(path))
    ]
    assert offenders == []


def test_the_runners_do_not_import_the_environment() -> None:
    offenders = [
        str(path.relative_to(PACKAGE))
        for entry in ("local", "spark")
        for path in python_files(entry)
        if "panes.datastream.environment" in imported_modules(path)
    ]
    assert offenders == []


def test_runners_are_found_by_name() -> None:
    from panes.datastream.execution import lookup_runner, runner_names
    from panes.local import LocalRunner

    assert {"local", "spark"} <= set(runner_names())
    assert isinstance(lookup_runner("local", {}), LocalRunner)


def test_the_shard_runtime_reaches_no_pyspark() -> None:
    """``panes.spark.shard`` (what a shard of a keyed step is) runs in Spark's workers, in shard keepers and in
    plain Python alike: nothing it imports, nor anything those import in turn, is pyspark."""
    reached: dict[str, list[str]] = {}
    waiting = [("panes.spark.shard", "panes.spark.shard")]
    while waiting:
        name, importer = waiting.pop()
        if name in reached:
            continue
        path = _module_file(name)
        reached[name] = [importer]
        if path is None:
            continue
        for imported in imported_modules(path, at_run_time=True):
            if imported.startswith("panes."):
                waiting.append((imported, name))
            elif imported.split(".")[0] == "pyspark":
                reached.setdefault("pyspark", []).append(name)
    assert "pyspark" not in reached, f"pyspark is imported by {reached.get('pyspark')}"
    assert "panes.spark.shard.runtime" in reached and "panes.spark.shard.columnar_host" in reached


def _module_file(name: str) -> Path | None:
    """The source file of module ``name`` of panes (a package's ``__init__.py``), ``None`` for a name that is an
    attribute, not a module (``from panes.x import y``)."""
    base = PACKAGE.parent / Path(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None
