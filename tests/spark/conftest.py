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

    session = create_session("local[2]", app_name="panes-tests")
    yield session
    session.stop()
