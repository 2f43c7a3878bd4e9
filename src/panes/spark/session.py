"""The SparkSession panes runs on: an existing one, or a local one it creates.

A created session is ``local[2]`` by default (any master by configuration), with the RocksDB state store
(Spark's ``transformWithState`` needs it), few shuffle partitions, no UI, and Python workers started with
the interpreter panes runs in. These settings only apply to sessions panes creates.
"""

from __future__ import annotations

import os
import sys
from typing import Any

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

DEFAULT_CONFIG: dict[str, str] = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "2g",
}


def create_session(master: str = "local[2]", app_name: str = "panes", config: dict[str, str] | None = None) -> Any:
    """A SparkSession for panes (``getOrCreate``: an active session with another configuration is reused).

    ``config`` adds to and overrides :data:`DEFAULT_CONFIG`.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**DEFAULT_CONFIG, **(config or {})}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
