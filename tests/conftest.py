from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = ROOT.parent / "shared" / "conformance-examples"
# scenarios in the same format whose expected output was worked out from Flink's source (see its README)
DERIVED_SCENARIOS = ROOT / "tests" / "scenarios"


@pytest.fixture(scope="session")
def conformance_dir() -> Path:
    if not CONFORMANCE.is_dir():
        pytest.fail(f"the shared conformance examples are missing: expected {CONFORMANCE}")
    return CONFORMANCE
