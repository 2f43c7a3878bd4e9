"""The metrics job of ``tests/metrics_jobs.py`` on a given Spark, bounded and streaming, each checked against
the counters worked out from its input: ``python -m tests.deploy.metrics_job <master | sc://url>`` prints
``<mode> metrics ok`` per mode (an assertion fails the process otherwise)."""

from __future__ import annotations

import sys

from panes.datastream import StreamEnvironment
from tests.metrics_jobs import build, check


def main(where: str) -> None:
    from panes.spark import SparkRunner, create_session

    session = create_session(remote=where) if where.startswith("sc://") else create_session(where)
    for mode, micro_batches in (("bounded", False), ("streaming", True)):
        env = StreamEnvironment(SparkRunner(session, num_shards=2))
        sinks = build(env, micro_batches)
        check(env.execute(f"metrics {mode}"), sinks)
        print(f"{mode} metrics ok", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
