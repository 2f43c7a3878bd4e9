"""Two independent watermarked pipelines in one job (``tests/one_watermark_job.py``) on the Spark runner: the query
has one watermark, so the lagging pipeline holds back the other's window and its straggler is on time, as
``docs/spark-runner.md`` and ``panes explain`` say (the local runner gives Flink's answer:
``tests/local/test_one_watermark_job.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import StreamEnvironment
from tests.one_watermark_job import ONE_WATERMARK, build, outcome

pytestmark = pytest.mark.spark


def test_independent_pipelines_share_the_query_s_watermark_on_spark(spark: Any) -> None:
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    panes, late = build(env)
    env.execute("one watermark per query")
    assert outcome(panes, late) == ONE_WATERMARK
