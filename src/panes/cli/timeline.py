"""``panes timeline JOB.py``: run a job on the local runner and draw what its window steps did.

JOB.py is a job module: it defines ``build(env)``, which builds the pipeline on the ``StreamEnvironment`` it
is given (without calling ``execute``). The picture is written as a PNG and as a self-contained HTML page
(``panes.timeline``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_timeline_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``timeline`` on the ``panes`` command's subcommands."""
    parser = commands.add_parser(
        "timeline",
        help="draw what a job's window steps do (elements, windows, firings, watermark) as PNG and HTML",
        description="Run JOB.py (a module defining build(env)) on the local runner with its window steps "
        "recorded, and draw, for a sample of keys, elements at their event time, windows, every firing "
        "(early, on time, late), the watermark, and late or dropped elements.",
    )
    parser.add_argument("job", help="the job module: a Python file defining build(env)")
    parser.add_argument("--png", default=None, help="where the PNG goes (default: JOB-timeline.png here)")
    parser.add_argument("--html", default=None, help="where the HTML page goes (default: JOB-timeline.html here)")
    parser.add_argument(
        "--key", action="append", dest="keys", default=None, help="a key to draw (repeatable; compared as text)"
    )
    parser.add_argument("--max-keys", type=int, default=6, help="without --key: the first N keys (default 6)")
    parser.add_argument("--step", action="append", dest="steps", default=None, help="a window step to draw, by name")
    parser.add_argument(
        "--max-elements", type=int, default=20_000, help="stop recording after N elements per step (default 20000)"
    )
    parser.add_argument(
        "--max-records", type=int, default=None, help="read at most N source elements (needed for unbounded sources)"
    )
    parser.add_argument("--function", default="build", help="the job module's function (default build)")
    parser.set_defaults(handler=run_timeline)


MISSING_DRAWING = 2
"""The exit code when matplotlib, which draws the pictures, is not installed (a usage error: nothing ran)."""


def run_timeline(args: argparse.Namespace) -> int:
    from panes.timeline import check_drawing

    try:  # before the job runs: it may run for long
        check_drawing()
    except ImportError as error:
        print(f"panes timeline: {error}", file=sys.stderr)
        return MISSING_DRAWING
    from panes.jobs import load_job
    from panes.timeline import record_timeline, write_html, write_png

    job = Path(args.job)
    build = load_job(job, args.function).build
    timeline = record_timeline(
        build,
        keys=args.keys,
        max_keys=args.max_keys,
        max_elements=args.max_elements,
        max_records=args.max_records,
        steps=args.steps,
        job_name=job.stem,
    )
    png = write_png(timeline, args.png or f"{job.stem}-timeline.png")
    page = write_html(timeline, args.html or f"{job.stem}-timeline.html")
    for step in timeline.steps:
        timings = step.timings()
        print(
            f"{step.name}: {step.total_elements} elements, keys drawn: {', '.join(map(str, step.keys)) or 'none'}; "
            + ", ".join(f"{n} {timing.value}" for timing, n in timings.items())
            + " firings"
        )
    print(f"timeline written to {png} and {page}")
    return 0
