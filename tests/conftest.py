from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

# no property test depends on how fast the machine is, or on which tests ran before it (a cold first example,
# a machine busy with Spark): hypothesis' per-example deadline, a timing assertion, is off everywhere
settings.register_profile("panes", deadline=None)
settings.load_profile("panes")

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = ROOT.parent / "shared" / "conformance-examples"
# scenarios in the same format whose expected output was worked out from Flink's source (see its README)
DERIVED_SCENARIOS = ROOT / "tests" / "scenarios"


@pytest.fixture(scope="session")
def conformance_dir() -> Path:
    if not CONFORMANCE.is_dir():
        pytest.fail(f"the shared conformance examples are missing: expected {CONFORMANCE}")
    return CONFORMANCE


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that starts Spark is marked ``spark``: those that use the shared session (the ``spark``
    fixture, directly or through another fixture) get the mark here; those that start Spark in a subprocess
    (crash points, task slots, Connect, the deployment tests) carry it themselves."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()) and item.get_closest_marker("spark") is None:
            item.add_marker(pytest.mark.spark)
