"""Job files: the convention ``panes run``, ``panes explain`` and ``panes timeline`` rely on, and how they are
loaded.

A job file is a Python module with a module-level function ``build(env)`` that builds the job's pipelines on
the ``StreamEnvironment`` it is given (sources, steps, sinks) and returns nothing; ``panes`` picks the runner,
calls ``build`` and then ``env.execute()``. A job file should not create its own environment or call
``execute``: the same file then runs on the local runner, local Spark or a cluster unchanged. Everything
else in the file (functions, classes, constants) is ordinary Python; the file's folder is importable while it
loads, so it may import modules next to it. ``JOB_NAME`` (optional, a string) names the job; the file's name
does otherwise. On Spark, ``env.runner.spark`` is the SparkSession (for ``env.from_dataframe(...)``); the
file's functions and classes travel to the executors by value, so a cluster needs no copy of it. See
``examples/``.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any


class JobFileError(Exception):
    """The job file cannot be used as one (missing, not Python, no ``build(env)``): a usage error."""


@dataclass(frozen=True)
class JobFile:
    """A loaded job file: its module, ``build`` function and name."""

    path: Path
    module: ModuleType
    build: Callable[[Any], Any]
    name: str


def load_job(path: str | Path, function: str = "build") -> JobFile:
    """Import the job file at ``path`` (see the module docstring); ``function`` names its build function
    (default ``build``).

    Raises :class:`JobFileError` when the file is missing, is not a ``.py`` file or has no callable ``function``;
    an exception raised while the module runs (a syntax error, a failing import) propagates unchanged.
    """
    file = Path(path)
    if not file.is_file():
        raise JobFileError(f"no job file at {path}: give the path of a Python file defining build(env)")
    if file.suffix != ".py":
        raise JobFileError(f"{path} is not a Python file: a job file is a .py module defining build(env)")
    module_name = f"panes_job_{file.stem}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None:
        raise JobFileError(f"{path} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    folder = str(file.resolve().parent)
    sys.modules[module_name] = module
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    finally:
        sys.path.remove(folder)
    build = getattr(module, function, None)
    if not callable(build):
        raise JobFileError(
            f"{path} defines no {function}(env) function: a job file builds its pipelines in a module-level "
            f"function {function}(env) on the StreamEnvironment it is given (see examples/)"
        )
    name = getattr(module, "JOB_NAME", None)
    return JobFile(file, module, build, name if isinstance(name, str) and name else file.stem)
