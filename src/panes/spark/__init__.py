"""The Spark runner: panes plans on Apache Spark (the only package that imports pyspark).

Names are loaded on first use, so the modules Spark's Python workers import (the functions a query runs)
do not pull in the rest of the runner.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from panes.datastream.sources import DataFrameSource
    from panes.spark.runner import JobStopped, SparkJob, SparkRunner
    from panes.spark.session import create_session
    from panes.spark.sinks import ForeachBatchSink, MemorySink

_WHERE = {
    "DataFrameSource": "panes.datastream.sources",
    "ForeachBatchSink": "panes.spark.sinks",
    "MemorySink": "panes.spark.sinks",
    "JobStopped": "panes.spark.runner",
    "SparkJob": "panes.spark.runner",
    "SparkRunner": "panes.spark.runner",
    "create_session": "panes.spark.session",
}

__all__ = [
    "DataFrameSource",
    "ForeachBatchSink",
    "JobStopped",
    "MemorySink",
    "SparkJob",
    "SparkRunner",
    "create_session",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'panes.spark' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
