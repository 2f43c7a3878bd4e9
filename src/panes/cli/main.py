"""The ``panes`` command: ``run`` a job file, ``explain`` its plan, ``reconcile`` its late data, or run the
``demo``.

Exit codes, for scripts: 0 done, 1 the job failed (its exception in full on standard error), 2 usage (bad
options, a missing job file, a file without ``build(env)``), 130 stopped (Ctrl-C or SIGTERM). ``panes COMMAND
--help`` describes each command.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from panes.cli import run as run_command
from panes.cli.timeline import add_timeline_command
from panes.jobs import JobFileError, load_job

JOB_FILES = """\
A job file is a Python module with a function build(env): it builds its pipelines (sources, steps,
sinks) on the StreamEnvironment panes gives it and returns; panes then executes them. The same file runs on
the local runner, local Spark or a cluster. Examples: examples/*.py.
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="panes",
        description="Flink's DataStream windows on Spark. Exit codes: 0 done, 1 job failed, 2 usage, 130 stopped.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="run a job file on the local runner, local Spark or a cluster",
        description="Run a job file. " + JOB_FILES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run_command.add_arguments(run)
    run.set_defaults(handler=lambda args: run_command.run_job(run_command.options_from(args, run)))

    explain = commands.add_parser(
        "explain",
        help="show a job file's plan as a tree and how it runs on Spark",
        description="Show a job's plan (sources, steps, keys, windows, triggers, evictors, lateness, watermarks, "
        "side outputs, sinks) and the stages it runs as on Spark (fused steps, shuffles, keyed state steps), "
        "without running it. " + JOB_FILES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    explain.add_argument("job", metavar="JOB.py", help="a Python file defining build(env)")
    explain.set_defaults(handler=lambda args: explain_job(args.job))

    reconcile = commands.add_parser(
        "reconcile",
        help="correct a window's results for the elements its late data table kept",
        description="Read the late data table a window step of the job writes (late_data_table(PATH)), run the "
        "job's plan up to that window again in STREAMING mode (what the stream emitted, pane info included; it "
        "must find the table's elements late) and in BATCH mode over every element, and write the difference as "
        "corrections: retractions of the rows the streaming job emitted that a table keyed by (key, window) "
        "holds, then the complete results, each row with a 'retract' column (docs/late-data-reconciliation.md). "
        "--apply writes them through the job's upsert JdbcSink of the window's results instead (or as well), "
        "so that its PostgreSQL table equals the BATCH result over all the data. "
        "The job's sources must give the same elements again. " + JOB_FILES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    reconcile.add_argument("job", metavar="JOB.py", help="a Python file defining build(env)")
    reconcile.add_argument("--late", required=True, metavar="PATH", help="the folder of the window's late data table")
    reconcile.add_argument("--output", metavar="FILE", help="the Parquet file the corrections go to")
    reconcile.add_argument(
        "--apply",
        action="store_true",
        help="apply the corrections to the table of the job's upsert JdbcSink that takes the window's results",
    )
    reconcile.add_argument(
        "--runner", choices=("local", "spark"), default="local", help="what runs the jobs (default local)"
    )
    reconcile.set_defaults(
        handler=lambda args: reconcile_job(args.job, args.late, args.output, args.runner, apply=args.apply)
    )

    demo = commands.add_parser(
        "demo",
        help="run the demonstration job on Spark",
        description="A generated click stream on local Spark: early, on-time and late results of the same "
        "windows, too-late clicks kept aside, a session per user visit; Parquet results under --output.",
    )
    demo.add_argument("--events", type=int, default=None, help="generated clicks (default 9000)")
    demo.add_argument("--batches", type=int, default=None, help="micro-batches they arrive in (default 12)")
    demo.add_argument("--output", default="out/demo", help="where the Parquet results go (default out/demo)")
    where = demo.add_mutually_exclusive_group()
    where.add_argument("--master", default="local[2]", help="Spark master URL (default local[2])")
    where.add_argument("--remote", default=None, help="Spark Connect URL (sc://host:port) instead of a master")
    demo.add_argument("--checkpoint", default=None, help="checkpoint folder (default: a temporary one)")
    demo.add_argument(
        "--timeline", action="store_true", help="also draw a few users' sessions (OUTPUT/timeline.png and .html)"
    )
    demo.set_defaults(handler=_demo)
    add_timeline_command(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))  # each command's parser sets its handler
    except JobFileError as error:
        print(f"panes {args.command}: {error}", file=sys.stderr)
        return run_command.USAGE


def _demo(args: argparse.Namespace) -> int:
    from panes.cli.demo import run_demo

    return run_demo(
        events=args.events,
        batches=args.batches,
        output=args.output,
        master=args.master,
        remote=args.remote,
        checkpoint=args.checkpoint,
        timeline=args.timeline,
    )


def explain_job(path: str) -> int:
    """Print the plan of the job file at ``path`` (see ``panes.cli.explain``)."""
    from panes.cli.explain import explain
    from panes.datastream import StreamEnvironment

    try:
        job = load_job(path)
        env = StreamEnvironment("local")
        job.build(env)
    except JobFileError:
        raise
    except Exception as error:
        run_command.report_failure(error, sys.stderr)
        return run_command.FAILED
    print(explain(env.plan(), job.name, env.config()))
    return run_command.DONE


def reconcile_job(path: str, late: str, output: str | None, runner: str, apply: bool = False) -> int:
    """Write the corrections the late table ``late`` makes to the job file's results (``datastream.reconcile``)
    to the Parquet file ``output``, and with ``apply`` to the table of the job's upsert ``JdbcSink`` of the
    window's results (``connectors.jdbc_corrections``); usage (exit 2) when neither is asked for."""
    from panes.datastream.reconcile import reconcile

    if output is None and not apply:
        print("panes reconcile: say where the corrections go: --output FILE, --apply, or both", file=sys.stderr)
        return run_command.USAGE
    job = load_job(path)
    written = []
    try:
        corrections = reconcile(job.build, late, runner)
        if output is not None:
            written.append(corrections.write(output))
        if apply:
            written.append(_apply(job.build, corrections, runner))
    except Exception as error:
        run_command.report_failure(error, sys.stderr)
        return run_command.FAILED
    retracted = sum(1 for row in corrections.rows if row["retract"])
    print(
        f"{_counted(corrections.late_elements, 'late element')} of step {corrections.step_uid}: "
        f"{_counted(retracted, 'result')} retracted, {_counted(len(corrections.rows) - retracted, 'new result')}, "
        f"written to {' and '.join(written)}"
    )
    return run_command.DONE


def _counted(count: int, noun: str) -> str:
    """``count`` and ``noun``, plural unless ``count`` is 1: ``1 new result``, ``2 new results``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _apply(build: Any, corrections: Any, runner: str) -> str:
    """Apply ``corrections`` through the job's upsert ``JdbcSink`` of the window's results; what was written to."""
    from panes.connectors.jdbc_corrections import apply_corrections, sink_of_step
    from panes.datastream import StreamEnvironment

    env = StreamEnvironment("local")
    build(env)
    step = sink_of_step(env.plan(), corrections.step_uid)
    apply_corrections(corrections, step.sink, runner, step.parallelism or 1)
    return repr(step.sink)


if __name__ == "__main__":
    sys.exit(main())
