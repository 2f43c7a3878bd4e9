"""``panes run``: run a job file (see ``panes.jobs``) on the local runner, local Spark or a Spark cluster.

Exit codes: :data:`DONE` (0) when the job ran to its end, :data:`FAILED` (1) when it failed (the exception's
type and full message on standard error, with its causes; ``--traceback`` adds Python's traceback),
:data:`USAGE` (2) for a command that cannot run as given (bad options, a missing job file, no ``build``),
and :data:`INTERRUPTED` (130) when stopped with Ctrl-C.

Console: the job's own output (``print()`` sinks) on standard output; panes' lines (where Spark's logs go,
the progress of a Spark job — a live table on a terminal, else one line per micro-batch, watermarks in
ISO-8601 UTC, see ``panes.live`` — and a summary) on standard error, none with ``--quiet``. Spark's
and its Python workers' output goes to the log file (``panes.spark.session``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from panes.jobs import JobFile, JobFileError, load_job
from panes.live import LineView, LiveView
from panes.time import format_instant

DONE = 0
FAILED = 1
USAGE = 2
INTERRUPTED = 130
"""Stopped with Ctrl-C (a job over unbounded input runs until then), as shells report SIGINT."""


@dataclass
class RunOptions:
    """What ``panes run`` was asked for (``conf``: Spark settings, ``key=value``)."""

    job: str
    runner: str = "local"
    master: str = "local[2]"
    remote: str | None = None
    """A Spark Connect URL (``sc://host:port``) to run on instead of ``master``."""
    checkpoint: str | None = None
    trigger: str | None = None
    """Spark's trigger (``SparkRunner``'s ``trigger``); ``None``: the runner's default."""
    conf: dict[str, str] = field(default_factory=dict)
    quiet: bool = False
    traceback: bool = False
    max_records: int | None = None
    """How many elements the local runner reads at most (``LocalRunner``'s ``max_records``; needed to run a
    source that does not end there); ``None``: no limit."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", metavar="JOB.py", help="a Python file defining build(env) (see examples/)")
    parser.add_argument(
        "--runner",
        choices=("local", "spark"),
        default="local",
        help="local: the in-process reference runner (default); spark: Apache Spark",
    )
    parser.add_argument("--master", default=None, help="Spark master URL, e.g. local[2] (default) or spark://host:7077")
    parser.add_argument(
        "--remote", default=None, help="a Spark Connect server to run on instead of a master, e.g. sc://host:15002"
    )
    parser.add_argument(
        "--checkpoint",
        default=None,
        help="Spark checkpoint folder, to resume a stopped job from (default: a temporary one; one under "
        "<temp dir>/panes-checkpoints, kept and printed, when the input does not end)",
    )
    parser.add_argument(
        "--trigger",
        default=None,
        metavar="WHEN",
        help="when micro-batches run on Spark: available-now (what is there, then stop), once (one micro-batch), "
        "continuous (until stopped) or an interval such as '10 seconds' (default: available-now over "
        "micro-batches, continuous over files or DataFrames read as streams)",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting, e.g. --conf spark.sql.shuffle.partitions=4 (repeatable)",
    )
    parser.add_argument(
        "--max-records",
        type=int,
        default=None,
        metavar="N",
        help="the local runner reads at most N elements, then ends the job (a source that does not end, such as "
        "a Kafka topic without set_bounded or a streaming folder, needs it there); --runner local only",
    )
    parser.add_argument("--quiet", action="store_true", help="only the job's own output and errors")
    parser.add_argument("--traceback", action="store_true", help="show Python's traceback when the job fails")


def options_from(args: argparse.Namespace, parser: argparse.ArgumentParser) -> RunOptions:
    """The options of parsed ``args``; a contradiction is a usage error (``parser.error`` exits with 2)."""
    conf: dict[str, str] = {}
    for item in args.conf:
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            parser.error(f"--conf takes KEY=VALUE, got {item!r}")
        conf[key.strip()] = value
    if args.runner != "spark":
        given = [name for name in ("master", "remote", "checkpoint", "trigger") if getattr(args, name) is not None]
        given += ["conf"] if conf else []
        if given:
            parser.error(f"--{', --'.join(given)} apply to --runner spark only")
    elif args.max_records is not None:
        parser.error(
            "--max-records applies to --runner local only (on Spark, --trigger available-now reads what is there)"
        )
    if args.max_records is not None and args.max_records < 1:
        parser.error(f"--max-records takes a number of elements >= 1, got {args.max_records}")
    if args.master is not None and args.remote is not None:
        parser.error("give --master (a Spark master) or --remote (a Spark Connect server), not both")
    return RunOptions(
        job=args.job,
        runner=args.runner,
        master=args.master or "local[2]",
        remote=args.remote,
        checkpoint=args.checkpoint,
        trigger=None if args.trigger is None else trigger_of(args.trigger, parser),
        conf=conf,
        quiet=args.quiet,
        traceback=args.traceback,
        max_records=args.max_records,
    )


TRIGGERS = {"available-now": "available_now", "once": "once", "continuous": "continuous"}


def trigger_of(text: str, parser: argparse.ArgumentParser) -> str:
    """``SparkRunner``'s trigger for ``--trigger text``: a name of :data:`TRIGGERS` or an interval such as
    ``10 seconds`` (a usage error otherwise)."""
    if text in TRIGGERS:
        return TRIGGERS[text]
    amount, _, unit = text.strip().partition(" ")
    units = ("millisecond", "second", "minute", "hour", "day")
    if not amount.isdigit() or unit.rstrip("s") not in units:
        parser.error(
            f"--trigger takes available-now, once, continuous or an interval such as '10 seconds', got {text!r}"
        )
    return text.strip()


def report_failure(error: BaseException, stream: TextIO, with_traceback: bool = False) -> None:
    """The failure of a job, in full: type and message, then each cause."""
    if with_traceback:
        stream.write("".join(traceback.format_exception(type(error), error, error.__traceback__)))
        return
    stream.write(f"panes: the job failed: {type(error).__name__}: {error}\n")
    seen = {id(error)}
    cause = error.__cause__ or error.__context__
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        stream.write(f"  caused by {type(cause).__name__}: {cause}\n")
        cause = cause.__cause__ or cause.__context__
    stream.write("  (--traceback shows where)\n")


def make_environment(
    options: RunOptions, name: str, say: Callable[[str], None], view: Callable[[Any], None] | None = None
) -> tuple[Any, Any]:
    """The environment ``options`` ask for, and the SparkSession it runs on (``None`` for the local runner);
    on Spark, ``view`` receives each micro-batch's progress (``panes.live``)."""
    from panes.datastream import StreamEnvironment

    if options.runner == "local":
        from panes.local import LocalRunner

        return StreamEnvironment(LocalRunner(max_records=options.max_records)), None
    from panes.spark import SparkRunner, create_session
    from panes.spark.session import default_log_file

    if options.remote is not None:  # the server keeps Spark's logs
        spark = create_session(app_name=name, config=options.conf, remote=options.remote)
    else:
        log_file = default_log_file(name)
        say(f"panes: Spark's logs go to {log_file}")
        spark = create_session(options.master, app_name=name, config=options.conf, log_file=log_file)
    runner = SparkRunner(spark, checkpoint_location=options.checkpoint, on_progress=view, trigger=options.trigger)
    return StreamEnvironment(runner), spark


def run_job(options: RunOptions, out: TextIO | None = None) -> int:
    """Run the job file of ``options``; the exit code (see the module docstring)."""
    err = out or sys.stderr

    def say(line: str) -> None:
        if not options.quiet:
            err.write(line + "\n")
            err.flush()

    # an environment the job makes itself (PyFlink's get_execution_environment()) runs where this run does
    from panes.datastream.environment import MASTER_VARIABLE, RUNNER_VARIABLE

    os.environ[RUNNER_VARIABLE] = options.runner
    os.environ[MASTER_VARIABLE] = options.master
    try:
        job: JobFile = load_job(options.job)
    except JobFileError:
        raise
    except Exception as error:  # the file itself fails (a syntax error, a failing import)
        report_failure(error, err, options.traceback)
        return FAILED
    where = "the local runner" if options.runner == "local" else f"Spark ({options.remote or options.master})"
    say(f"panes: running {job.name} ({job.path}) on {where}")
    spark = None
    view = progress_view(options, err)
    began = time.monotonic()
    terminated = signal.signal(signal.SIGTERM, _interrupt) if _main_thread() else None
    try:
        env, spark = make_environment(options, job.name, say, view)
        if spark is not None:
            from panes.spark.session import ship_by_value

            ship_by_value(job.module)
        job.build(env)
        for line in difference_lines(env, job.path):
            say(line)
        if spark is not None:
            for line in keep_state(env, options, job):
                say(line)
        started = time.monotonic()
        with view or contextlib.nullcontext():
            result = env.execute(job.name)
        sys.stdout.flush()
        for line in step_summary(result.metrics, result.details.get("source_errors", {})):
            say(line)
        say(summary(result, time.monotonic() - started, started - began))
    except Exception as error:
        sys.stdout.flush()
        report_failure(error, err, options.traceback)
        return FAILED
    except KeyboardInterrupt as stop:
        sys.stdout.flush()
        err.write(f"panes: {stop}\n" if str(stop) else "panes: interrupted\n")
        return INTERRUPTED
    finally:
        if terminated is not None:
            signal.signal(signal.SIGTERM, terminated)
        if spark is not None:
            with contextlib.suppress(Exception):
                spark.stop()
    return DONE


def _interrupt(signum: int, frame: Any) -> None:
    """SIGTERM stops a job as Ctrl-C does (the query stops, its checkpoint stays)."""
    raise KeyboardInterrupt


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def keep_state(env: Any, options: RunOptions, job: JobFile) -> list[str]:
    """On Spark, a job whose input does not end (files or DataFrames read as streams) keeps its state in a
    checkpoint it can resume from: without ``--checkpoint``, one under ``<temp dir>/panes-checkpoints``, named
    after the job and the time. The lines that say where (none when the input ends or a checkpoint was given)."""
    runner = env.runner
    endless = runner.endless_sources(env.plan())
    if not endless:
        return []
    if options.checkpoint is None:
        folder = os.path.join(
            tempfile.gettempdir(), "panes-checkpoints", f"{job.name}-{time.strftime('%Y%m%d-%H%M%S')}"
        )
        runner.checkpoint_location = folder
    else:
        folder = options.checkpoint
    until = (
        "it stops when the input read so far is processed"
        if options.trigger in ("available_now", "once")
        else ("it runs until stopped (Ctrl-C)")
    )
    return [
        f"panes: {', '.join(endless)} does not end: {until}, keeping its state in {folder} "
        f"(resume with --checkpoint {folder})"
    ]


def difference_lines(env: Any, path: Any) -> list[str]:
    """What a run says before it starts when its results can differ between the local runner and Spark
    (``panes.datastream.differences``): why, one line per cause; nothing when they cannot."""
    from panes.datastream.differences import runner_differences

    local = env.runner if type(env.runner).__name__ == "LocalRunner" else None
    reasons = runner_differences(env.plan(), env.config(), local_runner=local)
    if not reasons:
        return []
    lines = [f"panes: the local runner and Spark can give this job different results (panes explain {path}):"]
    return lines + [f"  - {reason}" for reason in reasons]


def progress_view(options: RunOptions, stream: TextIO) -> LiveView | LineView | None:
    """How a streaming job's progress is shown: nothing with ``--quiet``, the live table on a terminal, else
    a line per micro-batch (``panes.live``)."""
    if options.quiet or options.runner == "local":
        return None
    return LiveView(stream) if stream.isatty() else LineView(stream)


def step_summary(metrics: dict[str, Any], source_errors: dict[str, int] | None = None) -> list[str]:
    """What each step did over the run (the same on both runners): first a line per source that sent inputs it
    could not read to its error output (``source_errors``, ``result.details["source_errors"]``: source name ->
    count), then a line per step with an operator (``result.metrics``) with its records in and out and, where
    there are any, late rows (to a late output; dropped), error rows and what it still holds (open panes,
    timers); nothing for a job without either."""
    lines = [
        f"  {name}: {count:,} unreadable inputs to the error output" for name, count in (source_errors or {}).items()
    ]
    for name, step in metrics.items():
        text = f"  {name}: {step.records_in:,} in, {step.records_out:,} out"
        extras = [
            f"{count:,} {what}"
            for count, what in (
                (step.late_out, "late to a late output"),
                (step.late_dropped, "late dropped"),
                (step.error_out, "to the error output"),
                (step.open_panes, "open panes left"),
                (step.timers, "timers left"),
            )
            if count
        ]
        lines.append(text + (f", {', '.join(extras)}" if extras else ""))
    return ["panes: what each step did:", *lines] if lines else []


def summary(result: Any, seconds: float, startup: float = 0.0) -> str:
    """The last line of a run: the job's time (and the start-up before it: the session and building the job),
    and on Spark micro-batches and the final watermark."""
    details = result.details
    text = f"panes: done in {seconds:.1f} s (after {startup:.1f} s of start-up)"
    if "batches" in details:  # a streaming query on Spark
        text += f" over {details.get('batches', 0)} micro-batches"
        from panes.spark.watermarks import progress_watermark

        progress = details.get("progress") or []
        if progress:
            text += f", final watermark {format_instant(progress_watermark(progress[-1]))}"
        else:
            text += " (nothing new to read)"
    elif "records_read" in details:
        text += f", {details['records_read']} records read"
    return text
