"""panes over Spark Connect: a server from pyspark's ``sbin/start-connect-server.sh`` on loopback, the README's
pipeline run by a ``SparkSession.builder.remote(...)`` client, its printed results equal to ``local[2]``'s,
and the metrics job of ``tests/metrics_jobs.py`` counting what it counts locally.
Runs with ``-m deploy``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.servers import connect_server, run_job

pytestmark = pytest.mark.deploy


def printed(where: str) -> list[str]:
    done = run_job(["-m", "tests.deploy.readme_job", where])
    return sorted(line for line in done.stdout.splitlines() if line.startswith(("(", "late>")))


def test_the_readme_pipeline_over_spark_connect_prints_what_local_spark_prints(tmp_path: Path) -> None:
    with connect_server(tmp_path) as url:
        remote = printed(url)
        # the step metrics arrive over Connect too: bounded (Observations) and streaming (progress)
        metrics = run_job(["-m", "tests.deploy.metrics_job", url]).stdout.splitlines()
        assert "bounded metrics ok" in metrics and "streaming metrics ok" in metrics, metrics
        # a job file over Connect with panes run prints what the local runner prints
        example = ["-m", "panes.cli.main", "run", "examples/late_data.py"]
        over_connect = run_job([*example, "--runner", "spark", "--remote", url])
    local = printed("local[2]")
    assert remote == local
    assert sorted(over_connect.stdout.splitlines()) == sorted(run_job(example).stdout.splitlines())
    assert f"on Spark ({url})" in over_connect.stderr and "micro-batches" in over_connect.stderr
    assert "late> {'page': '/a', 'ts': 300}" in local
