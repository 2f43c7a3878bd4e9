"""Running the ``panes`` command in a subprocess, and reading what it printed."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def panes(
    *arguments: str, timeout: float = 120, extra_path: str | None = None, environment: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``panes ARGUMENTS`` (this interpreter, this checkout's sources first, ``extra_path`` before them when
    given), from the repository's root, with ``environment`` added to the environment variables."""
    env = dict(os.environ, **(environment or {}))
    first = [extra_path] if extra_path else []
    env["PYTHONPATH"] = os.pathsep.join([*first, str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "panes.cli.main", *arguments],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def printed(stdout: str) -> dict[str, list[Any]]:
    """The values ``print(prefix)`` sinks wrote, by prefix, in order."""
    found: dict[str, list[Any]] = {}
    for line in stdout.splitlines():
        prefix, separator, value = line.partition("> ")
        if separator:
            found.setdefault(prefix, []).append(ast.literal_eval(value))
    return found


def example(name: str) -> ModuleType:
    """The example module ``examples/<name>.py`` (for its data)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
