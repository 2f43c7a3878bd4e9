"""Package rules: no pyspark anywhere in panes.watermarks, and every public name is re-exported."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import panes.watermarks

PACKAGE_DIR = Path(panes.watermarks.__file__).parent


def test_no_module_imports_pyspark() -> None:
    for path in PACKAGE_DIR.glob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(name.split(".")[0] == "pyspark" for name in names), f"{path.name} imports pyspark"


def test_importing_the_package_does_not_load_pyspark() -> None:
    code = "import sys, panes.watermarks; print(any(m.split('.')[0] == 'pyspark' for m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_every_public_name_is_exported_from_the_package() -> None:
    exported = set(panes.watermarks.__all__)
    for info in pkgutil.iter_modules([str(PACKAGE_DIR)]):
        module = importlib.import_module(f"panes.watermarks.{info.name}")
        for name, value in vars(module).items():
            if name.startswith("_") or getattr(value, "__module__", module.__name__) != module.__name__:
                continue
            if isinstance(value, type) or callable(value):
                assert name in exported, f"{info.name}.{name} is not re-exported"
    for name in exported:
        assert hasattr(panes.watermarks, name)
