"""Section 1, "What Python workers import PySpark from": in a plain session (not one panes creates), Spark puts
``$SPARK_HOME/python/lib/pyspark.zip`` and the py4j archive on each Python worker's path ahead of the
installed PySpark; with PySpark from PyPI ``$SPARK_HOME`` is the installed package itself, so workers import
PySpark from the archive (source only, compiled again by every worker) although it is installed."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pyspark

from ._common import ROOT, check, session


def worker_view(_: Any) -> tuple[list[str], str]:
    import pyspark as worker_pyspark

    return list(sys.path), str(worker_pyspark.__file__)


def main() -> None:
    spark = session("worker_path")
    home = Path(pyspark.__file__).resolve().parent
    path, imported = spark.sparkContext.parallelize([0], 1).map(worker_view).collect()[0]

    def short(entry: str) -> str:
        entry = entry.replace(str(home), "<pyspark>").replace(sys.prefix, "<venv>").replace(str(ROOT), "<repository>")
        return re.sub(r".*/spark-[0-9a-f-]+/userFiles-[0-9a-f-]+", "<spark local dir>/userFiles-<id>", entry)

    print("a Python worker's sys.path (first entries):", *[short(e) for e in path[:5]], sep="\n  ")
    print("the worker's pyspark module:", short(imported))
    archive = str(home / "python" / "lib" / "pyspark.zip")
    check(archive in path, "the worker's path holds <pyspark>/python/lib/pyspark.zip (inside the installation)")
    installed = str(home.parent)
    check(
        installed not in path or path.index(archive) < path.index(installed),
        "the archive comes before the installed package on the worker's path",
    )
    check(imported.startswith(archive), "the worker imports pyspark from the archive, not from the installation")
    spark.stop()


if __name__ == "__main__":
    main()
