"""``panes run --runner spark`` on an example (the one compact Spark run of the CLI): the same results as the
local runner, no Spark or worker chatter on the console, progress with real watermarks; and the stages
``panes explain`` shows are the ones the translator builds."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from panes.datastream import StreamEnvironment
from panes.datastream.execution import ExecutionConfig
from panes.jobs import load_job
from panes.spark.stages import spark_stages
from panes.spark.translate import Translator
from tests.cli.support import EXAMPLES, panes, printed

pytestmark = pytest.mark.spark


def test_panes_run_on_spark_is_quiet_and_agrees_with_the_local_runner(spark: Any) -> None:
    local = panes("run", str(EXAMPLES / "late_data.py"))
    done = panes("run", "--runner", "spark", "--conf", "spark.sql.shuffle.partitions=1", str(EXAMPLES / "late_data.py"))
    assert done.returncode == 0, done.stderr
    assert {k: sorted(v) for k, v in printed(done.stdout).items()} == {
        k: sorted(v) for k, v in printed(local.stdout).items()
    }
    # the console: the job's output and panes' own lines only (the last: each step's line, then the summary)
    lines = done.stderr.splitlines()
    steps = lines.index("panes: what each step did:")
    assert all(line.startswith(("panes: ", "batch ")) for line in lines[:steps]), done.stderr
    assert lines[steps + 1 : -1] == [line for line in local.stderr.splitlines() if line.startswith("  ")]
    logs = re.search(r"Spark's logs go to (\S+)", done.stderr)
    assert logs is not None and "TransformWithStateInPandas Python worker" in Path(logs.group(1)).read_text()
    # progress in real time: the watermark after each micro-batch, never Spark's shifted value
    watermarks = [re.search(r"watermark (\S+)", line).group(1) for line in lines if line.startswith("batch ")]  # type: ignore[union-attr]
    assert watermarks[0] == "-inf" and watermarks[-1] == "+inf"
    assert "2026-01-01T00:00:11.999Z" in watermarks  # after the first micro-batch: 12 s - 1 ms
    assert "final watermark +inf" in lines[-1]


@pytest.mark.parametrize("example", ["late_data", "count_windows", "sessions"])
def test_explained_stages_are_the_translated_ones(spark: Any, example: str) -> None:
    env = StreamEnvironment("local")
    load_job(str(EXAMPLES / f"{example}.py")).build(env)
    plan = env.plan()
    stages = spark_stages(plan)
    translation = Translator(spark, plan, ExecutionConfig(), streaming=True, num_shards=2).translate()
    logical = translation.df._jdf.queryExecution().logical().toString()
    assert logical.count("MapInArrow") == sum(1 for s in stages if s.kind == "python")
    assert logical.count("TransformWithStateInPySpark") == sum(1 for s in stages if s.kind == "keyed")
    assert logical.count("Union") == sum(1 for s in stages if s.kind == "union")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("quiet", [False, True])
def test_a_script_on_spark_shows_the_live_table_on_a_terminal(
    spark: Any, monkeypatch: pytest.MonkeyPatch, quiet: bool
) -> None:
    from panes.datastream import ListSink
    from panes.spark import SparkRunner

    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    env = StreamEnvironment(SparkRunner(spark, num_shards=1, quiet=quiet))
    env.from_micro_batches([[("a", 1)], [("b", 2)]]).key_by(lambda e: e[0]).reduce(lambda a, b: a).sink_to(ListSink())
    env.execute()
    drawn = screen.getvalue()
    if quiet:
        assert drawn == ""
    else:
        assert "\x1b[" in drawn and "rows in" in drawn and "watermark" in drawn, drawn


def test_a_print_in_a_user_function_on_local_spark_reaches_the_console(spark: Any) -> None:
    """As under PyFlink, whose own examples print inside a ProcessWindowFunction: the workers of a local session
    write their standard output to the driver's (here a pipe), not to Spark's log."""
    done = panes("run", "--runner", "spark", "tests/cli/jobs/printing_function.py")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert sorted(line for line in lines if line.startswith("the function saw")) == [
        "the function saw 1",
        "the function saw 2",
        "the function saw 3",
    ]
    assert sorted(line for line in lines if not line.startswith("the function saw")) == ["10", "20", "30"]
