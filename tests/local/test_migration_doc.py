"""docs/migrating-from-pyflink.md names real panes API: every name in a table's panes column resolves (rows
marked "(in progress)" name features being built elsewhere and are skipped)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import panes.connectors.file_system
import panes.connectors.jdbc
import panes.connectors.kafka
import panes.datastream
import panes.functions
import panes.state
import panes.types
import panes.watermarks
import panes.windowing
from panes.common import serialization
from panes.datastream import CloseableIterator, EnvironmentConfig
from panes.datastream.formats import avro, csv, json
from panes.operators.keyed import KeyedContext
from panes.time import Duration, Time
from panes.windowing.assigners.base import MergeCallback

DOC = Path(__file__).resolve().parents[2] / "docs" / "migrating-from-pyflink.md"
EXTRA = {
    "CloseableIterator": CloseableIterator,
    "Duration": Duration,
    "EnvironmentConfig": EnvironmentConfig,
    "KeyedContext": KeyedContext,
    "MergeCallback": MergeCallback,
    "Time": Time,
}
MODULES = (
    panes.connectors.file_system,
    panes.connectors.jdbc,
    panes.connectors.kafka,
    serialization,
    json,
    csv,
    avro,
    panes.datastream,
    panes.windowing,
    panes.state,
    panes.functions,
    panes.watermarks,
    panes.types,
)


def resolve(dotted: str) -> Any:
    head, *rest = dotted.split(".")
    found: Any = EXTRA.get(head)
    for module in MODULES:
        if found is None:
            found = getattr(module, head, None)
    assert found is not None, f"{head} is not importable from panes"
    for part in rest:
        assert hasattr(found, part), f"{dotted}: {head} has no {part}"
        found = getattr(found, part)
    return found


def panes_cells() -> list[str]:
    cells = []
    in_tables = False
    for line in DOC.read_text().splitlines():
        if line.startswith("## Every PyFlink"):
            in_tables = True
        elif line.startswith("## ") and in_tables:
            in_tables = False
        if in_tables and line.startswith("| ") and not line.startswith("| PyFlink") and "---" not in line:
            cells.append(line.split(" | ")[1])
    return cells


def test_every_panes_name_in_the_migration_tables_exists() -> None:
    checked = 0
    for cell in panes_cells():
        if "(in progress)" in cell or cell.strip() == "—":
            continue
        for name in re.findall(r"`([A-Za-z_][\w.]*)`", cell):
            resolve(name)
            checked += 1
    assert checked > 150


def test_the_migration_doc_is_linked_from_the_readme() -> None:
    readme = (DOC.parents[1] / "README.md").read_text()
    assert "docs/migrating-from-pyflink.md" in readme
