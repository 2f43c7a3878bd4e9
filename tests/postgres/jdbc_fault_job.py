"""A streaming job the JDBC kill test runs in a process of its own: ``python -m tests.postgres.jdbc_fault_job <libpq
url> <checkpoint>`` writes :data:`BATCHES` (explicit micro-batches) to table ``hits`` through a plain ``INSERT``
``JdbcSink`` with two writers on ``local[2]`` Spark, from the checkpoint ``checkpoint`` (``trigger available_now``).
With ``PANES_CRASH_HOOK=jdbc:<batch>:<marker>`` it holds at the ``jdbc`` crash point of that micro-batch (a writer's
transaction with its rows and marker committed, Spark's batch not) for the test to kill."""

from __future__ import annotations

import sys

from panes.connectors.jdbc import JdbcConnectionOptions, JdbcSink
from panes.datastream import StreamExecutionEnvironment
from panes.spark import SparkRunner

BATCHES = [[(b, n) for n in range(6)] for b in range(4)]
"""Four micro-batches of six rows: (batch, n)."""


def main(url: str, checkpoint: str) -> None:
    options = JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url(url).build()
    sink = JdbcSink.sink("INSERT INTO hits (batch, n) VALUES (?, ?)", None, options)
    runner = SparkRunner(master="local[2]", checkpoint_location=checkpoint, trigger="available_now", quiet=True)
    env = StreamExecutionEnvironment.get_execution_environment(runner)
    env.from_micro_batches(BATCHES, end_of_input=False, type_info="batch INT, n INT").add_sink(sink).uid(
        "hits"
    ).set_parallelism(2)
    env.execute()


if __name__ == "__main__":
    main(*sys.argv[1:3])
