"""The ``panes`` command's contract: help on every command, exit codes 0 (done), 1 (job failed, message in
full), 2 (usage), ``--quiet``, and ``panes explain`` derived from the plan."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cli.support import EXAMPLES, ROOT, example, panes

JOBS = ROOT / "tests" / "cli" / "jobs"


@pytest.mark.parametrize("command", [[], ["run"], ["explain"], ["demo"]])
def test_every_command_has_help(command: list[str]) -> None:
    done = panes(*command, "--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: panes")
    if command in (["run"], ["explain"]):
        assert "build(env)" in done.stdout


def test_run_exits_0_with_the_jobs_output_on_stdout_and_panes_lines_on_stderr() -> None:
    done = panes("run", str(EXAMPLES / "late_data.py"))
    assert done.returncode == 0
    assert all(line.startswith(("count> ", "too late> ")) for line in done.stdout.splitlines())
    assert "running late_data" in done.stderr and "done in" in done.stderr
    # the local runner has no micro-batches: the last line says how many records it read
    readings = sum(len(batch) for batch in example("late_data").READINGS)
    assert "micro-batches" not in done.stderr and f", {readings} records read" in done.stderr


def test_quiet_leaves_only_the_jobs_output() -> None:
    done = panes("run", "--quiet", str(EXAMPLES / "count_windows.py"))
    assert done.returncode == 0
    assert done.stderr == ""
    assert len(done.stdout.splitlines()) == 8


def test_a_failing_user_function_exits_1_with_the_step_and_the_cause() -> None:
    done = panes("run", str(JOBS / "failing_function.py"))
    assert done.returncode == 1
    assert "panes: the job failed: UserFunctionError: invert (1/1) failed: ZeroDivisionError: division by zero" in (
        done.stderr
    )
    assert done.stdout.splitlines() == ["inverse> 0.25", "inverse> 0.5"]  # what ran before the failure
    assert "side_output_errors" in done.stderr  # the second line of the message: what to change
    assert "Traceback" not in done.stderr
    assert "Traceback (most recent call last)" in panes("run", "--traceback", str(JOBS / "failing_function.py")).stderr


def test_an_invalid_parameter_exits_1_with_its_message() -> None:
    done = panes("explain", str(JOBS / "bad_configuration.py"))
    assert done.returncode == 1
    assert "ValueError" in done.stderr and "-5" in done.stderr
    assert panes("run", str(JOBS / "bad_configuration.py")).returncode == 1


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["run"], "the following arguments are required"),
        (["run", "no/such/job.py"], "no job file at no/such/job.py"),
        (["run", str(JOBS / "no_build.py")], "defines no build(env) function"),
        (["run", str(ROOT / "README.md")], "is not a Python file"),
        (["run", "--runner", "flink", str(EXAMPLES / "sessions.py")], "invalid choice"),
        (["run", "--master", "local[1]", str(EXAMPLES / "sessions.py")], "apply to --runner spark only"),
        (["run", "--runner", "spark", "--conf", "novalue", str(EXAMPLES / "sessions.py")], "KEY=VALUE"),
        (["run", "--remote", "sc://localhost:15002", str(EXAMPLES / "sessions.py")], "apply to --runner spark only"),
        (
            ["run", "--runner", "spark", "--master", "local[1]", "--remote", "sc://h:1", str(EXAMPLES / "sessions.py")],
            "not both",
        ),
        (["explain", "no/such/job.py"], "no job file"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_usage_errors_exit_2(arguments: list[str], says: str) -> None:
    done = panes(*arguments)
    assert done.returncode == 2
    assert says in done.stderr
    assert done.stdout == ""


def test_explain_shows_the_window_configuration_and_the_spark_stages() -> None:
    done = panes("explain", str(EXAMPLES / "late_data.py"))
    assert done.returncode == 0, done.stderr
    text = done.stdout
    for expected in (
        "source Micro-batch Source",
        "watermarks: monotonous",
        "timestamps: ColumnTimestampAssigner('ts')",
        "[key_by] #",
        "keyed by field 'sensor'",
        "window: TumblingEventTimeWindows(size=10000, offset=0)",
        "trigger: EventTimeTrigger()",
        "evictor: none",
        "allowed lateness: 5000 ms",
        "late data: side output 'too-late'",
        "function: process -> count",
        "fired panes: accumulating",
        "[side output 'too-late']",
        "sink PrintSink (prefix 'too late')",
        "== on Spark ==",
        "runs as a streaming query",
        "shuffle: rows exchanged by shard",
        "keyed state step Window(Apply): transformWithStateInPandas",
    ):
        assert expected in text, expected
    # the side output's map runs in the Python call that unpacks the window's results: no second shuffle
    assert text.count("shuffle:") == 1


def test_explain_names_triggers_and_evictors_of_the_other_examples() -> None:
    early = panes("explain", str(EXAMPLES / "early_firings.py")).stdout
    assert "trigger: ContinuousEventTimeTrigger(20000)" in early
    counts = panes("explain", str(EXAMPLES / "count_windows.py")).stdout
    assert "trigger: PurgingTrigger(CountTrigger(3))" in counts
    assert "evictor: CountEvictor(4" in counts
    assert counts.count("keyed state step Window(Reduce)") == 2
    timers = panes("explain", str(EXAMPLES / "timers.py")).stdout
    assert "KeyedProcess (keyed_process, keyed by field 'user')" in timers
    assert "function: AbandonedCarts" in timers


def test_timeline_says_how_to_install_matplotlib_before_running_the_job(tmp_path: Any) -> None:
    # a folder on the path that hides matplotlib: "import matplotlib" finds a package that is not there
    hidden = tmp_path / "hide"
    hidden.mkdir()
    (hidden / "sitecustomize.py").write_text(
        "import importlib.abc, sys\n"
        "class Hide(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'matplotlib' or name.startswith('matplotlib.'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Hide())\n"
    )
    marker = tmp_path / "ran"
    job = tmp_path / "job.py"
    job.write_text(f"def build(env):\n    open({str(marker)!r}, 'w').close()\n")
    done = panes("timeline", str(job), extra_path=str(hidden))
    assert done.returncode == 2, done.stderr
    assert "pip install 'panes[timeline]'" in done.stderr
    assert not marker.exists(), "the job did not run"


def test_only_a_job_whose_input_does_not_end_on_spark_is_said_to_run_until_stopped(tmp_path: Any) -> None:
    """A bounded job runs on Spark as one batch job and ends: ``panes run`` keeps no checkpoint for it and does not
    say it runs until stopped (it did: every source but micro-batches counted as endless)."""
    from types import SimpleNamespace

    from panes.cli.run import RunOptions, keep_state
    from panes.datastream import StreamEnvironment
    from panes.spark.runner import SparkRunner

    job = SimpleNamespace(name="job")
    runner = SimpleNamespace(endless_sources=SparkRunner.endless_sources, checkpoint_location=None)
    bounded = StreamEnvironment("local")
    bounded.from_collection([1, 2]).print()
    bounded.from_files(str(tmp_path), format="json", schema="ts BIGINT").print()
    assert SparkRunner.endless_sources(bounded.plan()) == []
    assert keep_state(SimpleNamespace(runner=runner, plan=bounded.plan), RunOptions("job.py"), job) == []  # type: ignore[arg-type]
    streaming = StreamEnvironment("local")
    streaming.from_files(str(tmp_path), format="json", schema="ts BIGINT", streaming=True).print()
    streaming.from_micro_batches([[1]]).print()
    assert SparkRunner.endless_sources(streaming.plan()) == [f"File Source {tmp_path}"]
    (line,) = keep_state(SimpleNamespace(runner=runner, plan=streaming.plan), RunOptions("job.py"), job)  # type: ignore[arg-type]
    assert f"File Source {tmp_path} does not end: it runs until stopped (Ctrl-C)" in line


def test_panes_run_reads_a_source_that_does_not_end_up_to_max_records_on_the_local_runner() -> None:
    job = str(ROOT / "tests" / "cli" / "jobs" / "endless_counter.py")
    refused = panes("run", job)
    assert refused.returncode == 1
    assert "panes run --max-records N" in refused.stderr
    done = panes("run", job, "--max-records", "4")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:4] == ["0", "1", "4", "9"]
    assert "9" in done.stdout.splitlines() and "16" not in done.stdout.splitlines()
    assert panes("run", job, "--max-records", "0").returncode == 2
    assert panes("run", job, "--runner", "spark", "--max-records", "4").returncode == 2


def test_a_run_ends_with_what_each_step_did() -> None:
    done = panes("run", str(EXAMPLES / "late_data.py"))
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    start = lines.index("panes: what each step did:")
    assert lines[start + 1 : start + 4] == [
        "  Timestamps/Watermarks: 8 in, 8 out",
        "  Window(Apply): 8 in, 4 out, 1 late to a late output",
        "  Map: 1 in, 1 out",
    ]
    assert lines[start + 4].startswith("panes: done in")
    assert "what each step did" not in panes("run", str(EXAMPLES / "late_data.py"), "--quiet").stderr
