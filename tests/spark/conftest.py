"""A real local SparkSession (local[2]) shared by the Spark tests; workers can import the test modules."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    # functions defined in test modules travel by reference: the Python workers must be able to import them
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from panes.spark import create_session
    from tests.conftest import QUICK_JIT, QUICK_JIT_ADDED

    # this JVM lives for the whole run: the default compilers (C1, then C2 for hot code), not the short-lived
    # JVMs' QUICK_JIT (unless whoever runs the tests chose a level)
    submit_options = os.environ["SPARK_SUBMIT_OPTS"] if QUICK_JIT_ADDED else None
    if submit_options is not None:
        os.environ["SPARK_SUBMIT_OPTS"] = submit_options.replace(QUICK_JIT, "").strip()
    try:
        session = create_session("local[2]", app_name="panes-tests")
    finally:
        if submit_options is not None:
            os.environ["SPARK_SUBMIT_OPTS"] = submit_options
    yield session
    session.stop()
