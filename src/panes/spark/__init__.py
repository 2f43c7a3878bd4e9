"""The Spark runner: panes plans on Apache Spark (the only package that imports pyspark)."""

from panes.datastream.sources import DataFrameSource
from panes.spark.runner import SparkJob, SparkRunner
from panes.spark.session import create_session
from panes.spark.sinks import ForeachBatchSink, MemorySink

__all__ = ["DataFrameSource", "ForeachBatchSink", "MemorySink", "SparkJob", "SparkRunner", "create_session"]
