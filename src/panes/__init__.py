"""panes: Apache Flink's DataStream window model in Python, running on Apache Spark."""

__version__ = "0.1.0"
