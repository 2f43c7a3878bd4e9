from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# no property test depends on how fast the machine is, or on which tests ran before it (a cold first example,
# a machine busy with Spark): hypothesis' per-example deadline, a timing assertion, is off everywhere. By default
# the examples are derandomized (each test draws the same examples on every run, so a run's cost and coverage
# do not vary and a failure reproduces); `--hypothesis-profile=panes-random` (through scripts/test.sh too) draws
# new ones, with hypothesis' example database, to search further.
settings.register_profile("panes", deadline=None, derandomize=True, database=None)
settings.register_profile("panes-random", deadline=None)
settings.load_profile("panes")

QUICK_JIT = "-XX:TieredStopAtLevel=1"
"""The Java option of the short-lived JVMs the tests start (a job run in a subprocess, killed and restarted, a
CLI run, a Connect server), through ``SPARK_SUBMIT_OPTS``, which ``spark-submit`` puts on the command line of
every JVM it starts: compile with C1 only. Such a JVM lives for seconds to a minute or two, and C2's optimising
compiler spent more than half of its CPU (15 one-element micro-batches run twice in one session: 54 of 98 JVM
CPU-seconds in compiler threads, 9 of 48 with C1 only, the same time per micro-batch once warm). The shared
session of the Spark tests (the ``spark`` fixture below) lives for the whole run and keeps the default: C1's code
cache is 48 MB rather than 240, its code never gets C2's optimisations, and one full run of the Spark tests with
that JVM C1-only too took 1,973 s against 1,716 s for the run before. Set ``SPARK_SUBMIT_OPTS`` with a
``TieredStopAtLevel`` of your own to choose otherwise (the shared session then keeps it too)."""
QUICK_JIT_ADDED = "TieredStopAtLevel" not in os.environ.get("SPARK_SUBMIT_OPTS", "")
"""Whether this file added :data:`QUICK_JIT` (and not the person running the tests)."""
if QUICK_JIT_ADDED:
    os.environ["SPARK_SUBMIT_OPTS"] = " ".join(filter(None, [os.environ.get("SPARK_SUBMIT_OPTS"), QUICK_JIT]))

ROOT = Path(__file__).resolve().parents[1]
DERIVED_SCENARIOS = ROOT / "tests" / "scenarios"
"""The window scenarios (``tests/scenarios/README.md``): expected outputs produced by real Flink through
``tools/flink_oracle``, or worked out from Flink's source where Flink cannot run the scenario."""
CONFORMANCE = DERIVED_SCENARIOS / "examples"
"""The seven first window scenarios, one per family of assigner, trigger and evictor, all produced by Flink."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that starts Spark is marked ``spark``: those that use the shared session (the ``spark``
    fixture, directly or through another fixture) get the mark here; those that start Spark in a subprocess
    (crash points, task slots, Connect, the deployment tests) carry it themselves. A Spark test outside the
    quick tier's list (``tests/tiers.py``) is marked ``full`` too (and ``repeats`` in a file of ``tiers.REPEATS``),
    and the slowest files come first
    (``tiers.order_slowest_first``). This runs before ``-m`` deselects (conftest
    hooks run before pytest's own), so it sees every collected test."""
    from tests import tiers

    for item in items:
        if "spark" in getattr(item, "fixturenames", ()) and item.get_closest_marker("spark") is None:
            item.add_marker(pytest.mark.spark)
        if item.get_closest_marker("spark") is not None and item.nodeid not in tiers.QUICK_SPARK:
            item.add_marker(pytest.mark.full)
            if item.nodeid.split("::", 1)[0] in tiers.REPEATS:
                item.add_marker(pytest.mark.repeats)
    tiers.order_slowest_first(items)
    tiers.record_collection(config, items)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A real local SparkSession (``local[2]``) shared by every Spark test of the test process, in any folder;
    the Python workers can import the test modules."""
    pytest.importorskip("pyspark")
    # functions defined in test modules travel by reference: the Python workers must be able to import them
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from panes.spark import create_session

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
