"""A streaming job the JDBC kill test runs in a process of its own: ``python -m tests.postgres.jdbc_fault_job <libpq
url> <checkpoint>`` writes :data:`BATCHES` (explicit micro-batches) to table ``hits`` through a plain ``INSERT``
``JdbcSink`` with two writers on ``local[2]`` Spark, from the checkpoint ``checkpoint`` (``trigger available_now``).
With ``PANES_CRASH_HOOK=<point>:<batch>:<marker>`` it holds at crash point ``jdbc_open`` (a writer's transaction with
its rows and marker sent, not committed) or ``jdbc`` (committed, Spark's batch not) of that micro-batch for the test
to kill; :func:`main` also runs it in the test's own process (the restart to the end)."""

from __future__ import annotations

import sys
from typing import Any

from panes.connectors.jdbc import JdbcConnectionOptions, JdbcSink
from panes.datastream import StreamExecutionEnvironment
from panes.spark import SparkRunner

BATCHES = [[(b, n) for n in range(6)] for b in range(4)]
"""Four micro-batches of six rows: (batch, n)."""


def main(url: str, checkpoint: str, spark: Any = None) -> None:
    """Run the job from ``checkpoint`` to its end, on ``spark`` (a session of its own on ``local[2]`` when
    ``None``)."""
    options = JdbcConnectionOptions.JdbcConnectionOptionsBuilder().with_url(url).build()
    sink = JdbcSink.sink("INSERT INTO hits (batch, n) VALUES (?, ?)", None, options)
    where: dict[str, Any] = {"master": "local[2]"} if spark is None else {"spark": spark}
    runner = SparkRunner(**where, checkpoint_location=checkpoint, trigger="available_now", quiet=True)
    env = StreamExecutionEnvironment.get_execution_environment(runner)
    env.from_micro_batches(BATCHES, end_of_input=False, type_info="batch INT, n INT").add_sink(sink).uid(
        "hits"
    ).set_parallelism(2)
    env.execute()


if __name__ == "__main__":
    main(*sys.argv[1:3])
