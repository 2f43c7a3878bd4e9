"""What ``panes run`` (and ``execute`` on a terminal) shows while a streaming job runs on Spark, one micro-batch
at a time. A module of its own below the command line and the runners: the CLI hands its views to a job, and
``SparkRunner`` shows :class:`LiveView` by itself when standard error is a terminal.

Each micro-batch arrives as a ``panes.spark.metrics.BatchProgress`` (rows in, duration, the counters of every
step in that batch, the results the sinks received, the inputs the sources could not read, the watermark it ran
with). :class:`ProgressTotals` adds them up: counters are summed; the gauges (open panes, timers, state bytes)
arrive as changes since the step's previous report, so their sums are the current values. What the figures count:

- rows in: the records the sources read (a file source's rows, not its files); an input a source could not read
  (a bad line, a record its deserializer refused) is not one: it is an error row;
- results: the records the steps whose main output a sink reads emitted (not side outputs, not the rows of a
  late data table);
- error rows: the records routed to error outputs, by the steps (``side_output_errors``) and by the sources
  (their bad inputs).

Two views read the totals:

- :class:`LiveView`, on a terminal: a table redrawn in place after every batch (``rich``'s ``Live``): rows in,
  results, rate, the watermark in real time (ISO-8601 UTC), batch duration, and per step the records in and out, open
  panes, late rows sent to a late output and late rows dropped, error rows, timers, state bytes and, once any
  were, how often its operators were rebuilt from stored state (after a restart, or when state did not stay
  with its shard);
- :func:`progress_line`, when the output is not a terminal (a log, a pipe, CI): one plain line per batch.

``--quiet`` shows neither. In code, the same figures come from the job handle (``SparkJob.metrics()``) or
from ``SparkRunner(on_progress=...)``, which receives every ``BatchProgress``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from panes.time import LONG_MAX, LONG_MIN, format_instant

SUMMED = ("records_in", "records_out", "late_out", "late_dropped", "error_out", "restores", "restore_ms")
"""Counters: what a step did in a batch (summed over batches)."""
CURRENT = ("open_panes", "timers", "state_bytes")
"""Gauges: reported as changes since the step's previous report (their sums are the current values)."""


def watermark_text(watermark: int) -> str:
    """The watermark for people: ISO-8601 UTC, or what Flink's markers mean."""
    if watermark == LONG_MIN:
        return "none yet"
    if watermark == LONG_MAX:
        return "end of input"
    return format_instant(watermark)


@dataclass
class ProgressTotals:
    """The job so far, from the ``BatchProgress`` of each micro-batch (see the module docstring)."""

    batches: int = 0
    rows_in: int = 0
    results: int = 0
    source_errors: int = 0
    """Inputs the sources could not read (sent to their error outputs) so far."""
    last_rows: int = 0
    last_duration_ms: int = 0
    watermark: int = LONG_MIN
    steps: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, batch: Any) -> None:
        """Count one micro-batch."""
        self.batches += 1
        self.rows_in += batch.input_rows
        self.results += batch.results
        self.source_errors += getattr(batch, "source_errors", 0)
        self.last_rows = batch.input_rows
        self.last_duration_ms = batch.duration_ms
        self.watermark = batch.watermark
        for name, values in batch.steps.items():
            step = self.steps.setdefault(name, dict.fromkeys(SUMMED + CURRENT, 0))
            for key in SUMMED + CURRENT:
                step[key] += int(values.get(key, 0) or 0)

    @property
    def rate(self) -> float:
        """Rows per second in the last batch (0 when it took no time)."""
        return self.last_rows * 1000 / self.last_duration_ms if self.last_duration_ms else 0.0

    def total(self, key: str) -> int:
        """``key`` summed over the steps."""
        return sum(step[key] for step in self.steps.values())

    @property
    def error_rows(self) -> int:
        """Every record routed to an error output so far: the steps' and the sources' bad inputs."""
        return self.total("error_out") + self.source_errors


def progress_line(batch: Any, totals: ProgressTotals) -> str:
    """One micro-batch as a plain line (after ``totals.add(batch)``): rows in, results, the watermark in real
    time, the batch's duration, and the job's open panes, late rows (sent to a late output; dropped), error
    rows and operators rebuilt from stored state so far when there are any."""
    watermark = format_instant(batch.watermark)
    if batch.watermark == LONG_MIN:
        watermark += " (none yet)"
    elif batch.watermark == LONG_MAX:
        watermark += " (end of input)"
    text = (
        f"batch {batch.batch}: {batch.input_rows} rows in, {batch.results} results, "
        f"watermark {watermark} ({batch.duration_ms / 1000:.1f} s)"
    )
    extras = []
    if totals.total("open_panes"):
        extras.append(f"{totals.total('open_panes')} open panes")
    if totals.total("late_out"):
        extras.append(f"{totals.total('late_out')} late rows to late outputs")
    if totals.total("late_dropped"):
        extras.append(f"{totals.total('late_dropped')} late rows dropped")
    if totals.error_rows:
        extras.append(f"{totals.error_rows} error rows")
    if totals.total("restores"):
        seconds = totals.total("restore_ms") / 1000
        extras.append(f"{totals.total('restores')} operators rebuilt from stored state ({seconds:.1f} s)")
    return text + (f"; so far {', '.join(extras)}" if extras else "")


STEP_WIDTH = 28
"""Characters of a step's name the live table keeps on one line; a longer name folds onto the next."""


def render(totals: ProgressTotals) -> Group:
    """The live view of ``totals``: a headline and a table of the steps."""
    headline = Text.assemble(
        ("panes ", "bold"),
        f"batch {max(totals.batches - 1, 0)}  ",
        f"{totals.rows_in:,} rows in  ",
        f"{totals.results:,} results  ",
        *([f"{totals.error_rows:,} error rows  "] if totals.error_rows else []),
        f"{totals.rate:,.0f} rows/s\n",
        "watermark ",
        (watermark_text(totals.watermark), "cyan"),
        f"  last batch {totals.last_duration_ms / 1000:.1f} s",
    )
    table = Table(expand=False, show_edge=False, pad_edge=False)
    rebuilt = totals.total("restores") > 0  # a column only once operators were rebuilt (the table fits 80 columns)
    columns = ("step", "in", "out", "open panes", "late out", "late dropped", "errors", "timers", "state")
    longest = max((len(name) for name in totals.steps), default=4)
    for column in (*columns, "rebuilt") if rebuilt else columns:
        if column == "step":  # whole names (up to STEP_WIDTH, then folded onto more lines), never cut short
            table.add_column(column, justify="left", min_width=min(longest, STEP_WIDTH), overflow="fold")
        else:
            table.add_column(column, justify="right")
    for name, step in totals.steps.items():
        cells = [
            name,
            f"{step['records_in']:,}",
            f"{step['records_out']:,}",
            f"{step['open_panes']:,}",
            f"{step['late_out']:,}",
            f"{step['late_dropped']:,}",
            f"{step['error_out']:,}",
            f"{step['timers']:,}",
            _bytes(step["state_bytes"]),
        ]
        table.add_row(*cells, *([f"{step['restores']:,}"] if rebuilt else []))
    return Group(headline, table)


def _bytes(count: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(count) < 1024 or unit == "GiB":
            return f"{count:,.0f} {unit}" if unit == "B" else f"{count:,.1f} {unit}"
        count /= 1024  # type: ignore[assignment]
    return str(count)


class LiveView:
    """The live table on a terminal (``stream``), redrawn after every batch; a context manager (the table
    stays on the screen when it closes)."""

    def __init__(self, stream: TextIO) -> None:
        self.totals = ProgressTotals()
        self.console = Console(file=stream, force_terminal=True)
        self.live = Live(render(self.totals), console=self.console, auto_refresh=False, transient=False)

    def __enter__(self) -> LiveView:
        self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.stop()

    def __call__(self, batch: Any) -> None:
        """``on_progress``: count ``batch`` and redraw."""
        self.totals.add(batch)
        self.live.update(render(self.totals), refresh=True)


class LineView:
    """One plain line per batch on ``stream`` (output that is not a terminal), each after ``indent``; a batch in
    which nothing happened (no rows in, no results, the watermark where it was: a job that waits for input)
    writes no line, so that a log of a quiet stream stays short."""

    def __init__(self, stream: TextIO, indent: str = "") -> None:
        self.totals = ProgressTotals()
        self.stream = stream
        self.indent = indent

    def __enter__(self) -> LineView:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __call__(self, batch: Any) -> None:
        quiet = self.totals.batches > 0 and not batch.input_rows and not batch.results
        quiet = quiet and not getattr(batch, "source_errors", 0)
        quiet = quiet and batch.watermark == self.totals.watermark
        self.totals.add(batch)
        if not quiet:
            self.stream.write(self.indent + progress_line(batch, self.totals) + "\n")
            self.stream.flush()
