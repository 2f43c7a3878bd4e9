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

EXTENSIONS = {"parquet": "parquet", "json": "json", "csv": "csv", "text": "txt"}


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


def write_text_parts(lines: list[str], folder: str, sink: Any, part: int) -> list[str]:
    """Write ``lines`` (a text ``FileSink``'s, each ending in a newline, in its ``charset``) as the files of part
    ``part`` of ``sink`` in ``folder`` (``sink.part_name(part, n)``), a new file whenever the next line would
    take one past the sink's ``part_size`` bytes (a line longer than that gets a file of its own); returns the
    files' paths. Each file appears whole (written under a hidden name, then renamed)."""
    charset, part_size = sink.charset, sink.part_size
    os.makedirs(folder, exist_ok=True)
    written: list[str] = []
    pending: list[bytes] = []
    size = 0

    def flush() -> None:
        path = os.path.join(folder, sink.part_name(part, len(written)))
        temporary = os.path.join(folder, f".{os.path.basename(path)}.tmp")
        with open(temporary, "wb") as handle:
            handle.writelines(pending)
        os.replace(temporary, path)
        written.append(path)

    for line in lines:
        data = (line + "\n").encode(charset)
        if pending and part_size is not None and size + len(data) > part_size:
            flush()
            pending, size = [], 0
        pending.append(data)
        size += len(data)
    if pending:
        flush()
    return written


def clear_batch(path: str, batch_id: int) -> None:
    """Remove what batch ``batch_id`` of the file sink at local ``path`` wrote before, in whichever bucket:
    ``path/batch=<id>`` and ``path/<bucket>/batch=<id>`` (not under hidden folders: ``_panes_staging``)."""
    import shutil

    folders = [os.path.join(path, f"batch={batch_id}")]
    if os.path.isdir(path):
        for bucket in os.listdir(path):
            if not bucket.startswith(("_", ".")):
                folders.append(os.path.join(path, bucket, f"batch={batch_id}"))
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
