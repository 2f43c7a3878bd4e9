"""Section 1, variant C: one JSON file per list, read by Spark's file source with ``maxFilesPerTrigger=1`` and
``availableNow``. The file source takes files in order of modification time, not of name: with the times set
in reverse of the names, the batches come in reverse; with increasing times (``os.utime``) they come in the
lists' order and behave as the explicit-batches source does (no no-data batch between lists)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pyspark.sql import SparkSession

from ._common import (
    INPUT_DDL,
    Batch,
    Recorder,
    check,
    hosted,
    kinds,
    rows,
    run,
    scratch,
    session,
    show,
    watermarked,
)

LISTS = [rows("a@1000", "b@2000"), rows("a@5000"), rows("a@500"), rows("b@20000")]


def write_files(folder: Path, times: list[int]) -> Path:
    data = folder / "in"
    data.mkdir()
    for i, (batch, when) in enumerate(zip(LISTS, times, strict=True)):
        path = data / f"list-{i}.json"
        path.write_text("".join(json.dumps({"k": k, "ts": ts, "timers": t}) + "\n" for k, ts, t in batch))
        os.utime(path, (when, when))
    return data


def run_files(spark: SparkSession, name: str, times: list[int]) -> list[Batch]:
    folder = scratch(name)
    data = write_files(folder, times)
    src = spark.readStream.schema(INPUT_DDL).option("maxFilesPerTrigger", 1).json(str(data))
    batches = run(spark, hosted(watermarked(src), Recorder(plus=10)), folder / "ck")
    show(batches)
    return batches


def main() -> None:
    spark = session("file_source_order")
    base = 1_700_000_000
    print("== modification times in reverse of the lists' order")
    backwards = run_files(spark, "files-reverse", [base + 10 - i for i in range(len(LISTS))])
    check(
        [sorted(kinds(b, "in")) for b in backwards if b.input_rows]
        == [kinds_of(i) for i in reversed(range(len(LISTS)))],
        "the file source reads the files in order of modification time (here the last list first)",
        [kinds(b, "in") for b in backwards],
    )
    print("== os.utime(file, 1_700_000_000 + i): increasing times")
    forwards = run_files(spark, "files-forward", [base + i for i in range(len(LISTS))])
    check(
        [sorted(kinds(b, "in")) for b in forwards if b.input_rows] == [kinds_of(i) for i in range(len(LISTS))],
        "with increasing modification times the batches follow the lists",
    )
    check(
        [b.input_rows for b in forwards] == [2, 1, 1, 1, 0],
        "as with the explicit source: one batch per file, no no-data batch between files, one trailing",
        [b.input_rows for b in forwards],
    )
    spark.stop()


def kinds_of(i: int) -> list[tuple[str, int]]:
    return sorted((k, ts) for k, ts, _ in LISTS[i])


if __name__ == "__main__":
    main()
