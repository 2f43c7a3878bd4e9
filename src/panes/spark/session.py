"""The SparkSession panes runs on: an existing one, or one it creates (local, a cluster, or Spark Connect).

A created session is ``local[2]`` by default (any master by configuration; ``remote`` connects to a Spark
Connect server instead), with the RocksDB state store (Spark's ``transformWithState`` needs it), few shuffle
partitions, no UI, and Python workers started with the interpreter panes runs in. These settings only apply
to sessions panes creates; over Spark Connect only the session's SQL settings can be set (the server owns the
rest).
"""

from __future__ import annotations

import os
import sys
from typing import Any

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

SQL_CONFIG: dict[str, str] = {
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
}
"""Settings of the SQL session (also what panes sets over Spark Connect)."""

DEFAULT_CONFIG: dict[str, str] = {
    **SQL_CONFIG,
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "2g",
}


def create_session(
    master: str = "local[2]",
    app_name: str = "panes",
    config: dict[str, str] | None = None,
    remote: str | None = None,
) -> Any:
    """A SparkSession for panes (``getOrCreate``: an active session with another configuration is reused).

    ``config`` adds to and overrides :data:`DEFAULT_CONFIG`. With ``remote`` (a Spark Connect URL such as
    ``"sc://localhost:15002"``) the session is a Spark Connect client and only :data:`SQL_CONFIG` and the SQL
    settings of ``config`` apply.
    """
    from pyspark.sql import SparkSession

    if remote is not None:
        builder = SparkSession.builder.remote(remote)
        for key, value in {**SQL_CONFIG, **(config or {})}.items():
            if key.startswith("spark.sql."):
                builder = builder.config(key, value)
        return builder.getOrCreate()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**DEFAULT_CONFIG, **(config or {})}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect client session."""
    return type(spark).__module__.startswith("pyspark.sql.connect")
