"""Two independent watermarked pipelines in one job (``tests/one_watermark_job.py``) on the local runner give
Flink's answer, and ``panes explain`` says the Spark runner does not."""

from __future__ import annotations

from panes.datastream import StreamEnvironment
from panes.datastream.differences import runner_differences
from panes.local import LocalRunner
from tests.one_watermark_job import FLINK, build, outcome


def test_independent_pipelines_keep_their_own_watermarks_on_the_local_runner() -> None:
    env = StreamEnvironment(LocalRunner())
    panes, late = build(env)
    reasons = runner_differences(env.plan(), env.config())
    env.execute("one watermark")
    assert outcome(panes, late) == FLINK
    assert any("steps that never read it" in reason for reason in reasons), reasons
