"""``print()`` on Spark shows values as PyFlink does, as on the local runner."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import StreamEnvironment
from tests.pyflink_print_job import PYFLINK_PRINTED, build

pytestmark = pytest.mark.spark


def test_print_on_spark_shows_what_pyflink_printed(spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark, num_shards=1), parallelism=1)
    build(env)
    env.execute()
    assert sorted(capsys.readouterr().out.splitlines()) == PYFLINK_PRINTED
