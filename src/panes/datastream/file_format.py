"""Writing a table of sink rows as one file (Parquet, JSON lines or CSV), as both runners do.

The file appears whole or not at all: it is written under a hidden name (``.name.tmp``, which Spark and
pyarrow readers skip) and renamed into place. JSON follows Spark's writer: one object per line, null fields
left out, timestamps in ISO 8601 with milliseconds, binary as base64.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import os
from typing import Any

import pyarrow as pa

EXTENSIONS = {"parquet": "parquet", "json": "json", "csv": "csv"}


def write_table(table: pa.Table, path: str, format: str) -> None:
    """Write ``table`` to the file ``path`` in ``format`` (replacing it), atomically."""
    folder, name = os.path.split(path)
    os.makedirs(folder or ".", exist_ok=True)
    temporary = os.path.join(folder, f".{name}.tmp")
    if format == "parquet":
        import pyarrow.parquet as pa_parquet

        pa_parquet.write_table(table, temporary)
    elif format == "csv":
        import pyarrow.csv as pa_csv

        pa_csv.write_csv(table, temporary)
    elif format == "json":
        with open(temporary, "w") as handle:
            for row in table.to_pylist():
                handle.write(json.dumps({k: v for k, v in row.items() if v is not None}, default=_json) + "\n")
    else:
        raise ValueError(f"unknown file format {format!r}")
    os.replace(temporary, path)


def _json(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    raise TypeError(f"cannot write {value!r} as JSON")
