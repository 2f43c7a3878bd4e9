"""The reduced Spark Connect check CI runs (the full one is ``tests/deploy/test_spark_connect.py``, ``-m
deploy``): a Connect server from pyspark's own scripts on loopback runs one job file through ``panes run
--remote``, which prints what the local runner prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.servers import connect_server, run_job

pytestmark = pytest.mark.spark

EXAMPLE = ["-m", "panes.cli.main", "run", "examples/late_data.py"]


def test_a_job_file_over_spark_connect_prints_what_the_local_runner_prints(tmp_path: Path) -> None:
    with connect_server(tmp_path) as url:
        over_connect = run_job([*EXAMPLE, "--runner", "spark", "--remote", url])
    local = run_job(EXAMPLE)
    assert over_connect.returncode == 0, over_connect.stderr[-2000:]
    assert f"on Spark ({url})" in over_connect.stderr
    results = sorted(over_connect.stdout.splitlines())
    assert results and results == sorted(local.stdout.splitlines())
