"""Counters of the steps on Spark, in each micro-batch's progress and on the job's result.

Every Python function the query runs reports what its steps counted, as columns ``m<step>_<field>``
(:func:`column`) that Spark sums with ``observe``: aggregated by Spark as the rows flow, no extra job,
nothing collected on the driver.

- A fused call of row-local steps (stateless operators, a timestamps step, and the keying before a keyed
  step, which counts the rows it refuses for their key) adds one metrics row per call (:func:`metered`: its
  ``ch``, or ``shard`` before a keyed step, is :data:`MARK`); the rows are observed, then dropped.
- Each call of a streaming keyed step's processor (one shard, one micro-batch) returns, next to its rows,
  what its operator counted in that call (``panes.operators.metrics.COUNTERS``), the state bytes it wrote,
  and the change of the shard's gauges since its previous call: open panes, pending timers and the bytes the
  shard keeps in Spark's state store (:data:`FIELDS`). Summing the changes over the batches gives the
  current totals, whichever shards a batch called.
- A bounded keyed step reports its counters and final gauges on a metrics row per shard.
- The first fused call after a file or Kafka source counts that source (:data:`SOURCE_FIELDS`) on its metrics
  row: a micro-batch's rows in are then records, not the files Spark read, and the inputs the source could not
  read are counted as error rows.

Streaming, each micro-batch's progress carries the sums under ``observedMetrics["panes-..."]``; bounded,
Spark ``Observation`` objects hold them once the job ran. :class:`JobMetrics` adds them up per step. Spark's
own state metrics of the query (``stateOperators``: ``numRowsTotal``, ``memoryUsedBytes``) count the shards'
log entries, not what they hold: read these instead.

:class:`BatchProgress` is one micro-batch as panes reports it to people: its rows, duration, counters per step
and the watermark it ran with, in real (unshifted) epoch milliseconds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from panes.operators.metrics import COUNTERS, GAUGES, OperatorMetrics
from panes.spark.layout import METRICS
from panes.spark.micro_batch_files import control_rows_read
from panes.spark.rescaling import is_control_source
from panes.spark.sources import offset_control_rows
from panes.spark.watermarks import progress_watermark

FIELDS = (*COUNTERS, *GAUGES, "state_bytes_written", "shard_calls", "shard_call_ms")
"""What a streaming keyed step's call reports: the operator's counters, the changes of its gauges, the state
bytes it wrote, and the call itself (1, and the milliseconds it took in the Python worker, the work in a shard
keeper included): ``restores / shard_calls`` is the share of calls that found no live operator."""
DDL = ", ".join(f"{name} BIGINT" for name in FIELDS)
SOURCE_FIELDS = ("records_out", "error_out", "spark_rows")
"""What the first fused call after a file or Kafka source counts of it (:func:`metered`): the records it made,
the inputs it could not read (sent to the source's error output), and the rows Spark read for them (a file
source's rows are whole files, so Spark's ``numInputRows`` counts files)."""


@dataclass
class Gauges:
    """What a shard last reported of its state."""

    open_panes: int = 0
    timers: int = 0
    state_bytes: int = 0


def counters(done: dict[str, int], before: Gauges, now: Gauges, written: int, call_ms: int) -> dict[str, int]:
    """One call's values of :data:`FIELDS`: ``done`` (what the operator counted in the call), the changes of
    the gauges, the bytes ``written`` and the call's milliseconds."""
    return {
        **{name: done.get(name, 0) for name in COUNTERS},
        "open_panes": now.open_panes - before.open_panes,
        "timers": now.timers - before.timers,
        "state_bytes": now.state_bytes - before.state_bytes,
        "state_bytes_written": written,
        "shard_calls": 1,
        "shard_call_ms": call_ms,
    }


MARK = METRICS
"""The ``ch`` (or ``shard``) value of metrics rows (``layout.METRICS``)."""
_COLUMN = re.compile(r"^m(\d+)_([a-z_]+)$")


def column(index: int, name: str) -> str:
    """The column (and observed metric) of field ``name`` of step ``index``."""
    return f"m{index}_{name}"


def metric_fields(indices: Sequence[int], names: Sequence[str] = COUNTERS) -> list[pa.Field]:
    """The metric columns of steps ``indices``."""
    return [pa.field(column(index, name), pa.int64()) for index in indices for name in names]


def metered(
    batches: Iterator[pa.RecordBatch],
    schema: pa.Schema,
    mark: str,
    values: Callable[[], dict[int, dict[str, int]]],
) -> Iterator[pa.RecordBatch]:
    """``batches`` with ``schema``'s metric columns added (nulls), then one metrics row (column ``mark`` is
    :data:`MARK`) holding ``values()`` (by step index, field -> value), read once ``batches`` are done."""
    names = schema.names
    for batch in batches:
        count = batch.num_rows
        arrays = list(batch.columns)
        arrays.extend(pa.nulls(count, pa.int64()) for _ in range(len(names) - len(arrays)))
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)
    row: dict[str, Any] = {mark: MARK}
    for index, step in values().items():
        for name, value in step.items():
            if column(index, name) in names:
                row[column(index, name)] = value
    yield pa.RecordBatch.from_pylist([row], schema=schema)


def observe(df: Any, name: str, columns: Sequence[str], streaming: bool, mark: str | None = None) -> tuple[Any, Any]:
    """``df`` observing the sums of ``columns`` as ``name`` (streaming: in each micro-batch's
    ``observedMetrics``; bounded: in the returned ``Observation``, else ``None``); with ``mark``, the metrics
    rows and columns are dropped again."""
    from pyspark.sql import functions as F

    target = name if streaming else _observation(df, name)
    sums = [F.coalesce(F.sum(c), F.lit(0)).alias(c) for c in columns]
    df = df.observe(target, *sums)
    if mark is not None:
        df = df.filter(F.col(mark) != MARK).drop(*columns)
    return df, None if streaming else target


def _observation(df: Any, name: str) -> Any:
    """A Spark ``Observation`` of the kind ``df``'s session takes (classic, or Spark Connect's)."""
    from panes.spark.session import is_connect

    if is_connect(df.sparkSession):
        from pyspark.sql.connect.observation import Observation as ConnectObservation

        return ConnectObservation(name)
    from pyspark.sql.observation import Observation

    return Observation(name)


def observe_keyed(df: Any, index: int) -> Any:
    """A streaming keyed step's output (``PAYLOAD_DDL``) observing its counters as step ``index``'s."""
    from pyspark.sql import functions as F

    sums = [F.coalesce(F.sum(name), F.lit(0)).alias(column(index, name)) for name in FIELDS]
    return df.observe(f"panes-{index}", *sums)


@dataclass(frozen=True)
class BatchProgress:
    """One micro-batch: its id, input rows (the records its sources read, see :func:`source_records`),
    duration, the Flink watermark it ran with (Spark's watermark of the batch, moved by the batches before
    it; epoch ms; ``LONG_MIN`` before any, ``LONG_MAX`` at the end of input), the counters of each step (by
    step name), its ``results``: the records the steps whose main output a sink reads emitted there (not
    the rows a step passes on to a further step, nor side outputs, nor the rows of a late data table), and its
    ``source_errors``: the inputs its sources could not read (bad lines of a file, records a Kafka
    deserializer refused), sent to the sources' error outputs; they are not among ``input_rows``."""

    batch: int
    input_rows: int
    duration_ms: int
    watermark: int
    steps: dict[str, dict[str, int]]
    results: int
    source_errors: int = 0


def _field(progress: Any, name: str) -> Any:
    return progress.get(name) if hasattr(progress, "get") else getattr(progress, name, None)


def ran_micro_batch(progress: Any) -> bool:
    """Whether Spark's progress entry ``progress`` (an object or a mapping) is of a micro-batch Spark ran. A trigger
    that found nothing to read and planned no micro-batch reports the id of the micro-batch it did not run, without
    its time in the sink (``addBatch``): Spark does so after ``spark.sql.streaming.noDataProgressEventInterval``
    (10 s) of idleness, and when an ``availableNow`` run finds nothing left (a finished job started again on its
    checkpoint). Such an entry is no micro-batch: the one that later runs under that id reports its own."""
    durations = _field(progress, "durationMs") or {}
    return "addBatch" in durations


def observed_values(row: Any) -> dict[str, Any]:
    """One observation of a progress entry as ``name -> value``: a ``Row`` of the named values (classic
    Spark) or a plain mapping, or Spark Connect's form, a ``Row`` (or, in its JSON, a mapping) of two fields
    ``values`` (the list) and ``schema`` (``{"fields": [{"name": ...}, ...]}``)."""
    values = dict(row.asDict()) if hasattr(row, "asDict") else dict(row)
    if set(values) == {"values", "schema"} and isinstance(values["schema"], dict):
        names = [f["name"] for f in values["schema"].get("fields", [])]
        return dict(zip(names, values["values"], strict=True))
    return values


def source_records(progress: Any, micro_batch_controls: Mapping[str, Sequence[int]] | None = None) -> int:
    """The records the sources read in a micro-batch: Spark's ``numInputRows`` less the control rows of
    panes' micro-batch sources (end-of-input sentinels, clock rows: ``sources.offset_control_rows`` from the Python
    data source's offsets, ``micro_batch_files.control_rows_read`` from files, ``micro_batch_controls`` holding each
    folder's) and the rows of the query's control input (``rescaling``)."""
    control = 0
    read = 0
    for source in _field(progress, "sources") or []:
        control += offset_control_rows(_field(source, "endOffset")) - offset_control_rows(_field(source, "startOffset"))
        control += control_rows_read(source, micro_batch_controls or {})
        rows = int(_field(source, "numInputRows") or 0)
        if is_control_source(_field(source, "description")):
            control += rows  # pieces of rescaled state, not records
        read += rows
    total = _field(progress, "numInputRows")  # Spark Connect's progress has the sources' counts only
    return (read if total is None else int(total)) - control


def source_counts(observed: dict[str, Any], sources: dict[int, str]) -> dict[str, int]:
    """The :data:`SOURCE_FIELDS` of ``sources`` (step indices) in one batch's observed metrics, summed."""
    counts = dict.fromkeys(SOURCE_FIELDS, 0)
    for key, row in observed.items():
        if not key.startswith("panes-") or row is None:
            continue
        for name, value in observed_values(row).items():
            match = _COLUMN.match(name)
            if match is not None and int(match.group(1)) in sources and match.group(2) in counts:
                counts[match.group(2)] += int(value or 0)
    return counts


@dataclass
class JobMetrics:
    """Totals per step (``steps``: index -> name), and per micro-batch, from a query's observed metrics;
    ``results`` are the indices of the steps whose main output a sink reads, a late data table's writer left out
    (see ``BatchProgress``); ``sources``
    the file and Kafka sources (index -> name) whose records the first fused call counts (:data:`SOURCE_FIELDS`),
    totalled in ``source_totals`` (name -> field -> count)."""

    steps: dict[int, str]
    results: frozenset[int] = frozenset()
    sources: dict[int, str] = field(default_factory=dict)
    source_totals: dict[str, dict[str, int]] = field(default_factory=dict)
    totals: dict[str, dict[str, int]] = field(default_factory=dict)
    peak_open_panes: int = 0
    peak_state_bytes_per_pane: float | None = None
    """Stored state bytes per open pane when the open panes were most (last such batch)."""
    batches: list[dict[str, dict[str, int]]] = field(default_factory=list)
    micro_batch_controls: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """The control rows before each file of the micro-batch sources read from files, by folder
    (``translate.Translation.micro_batch_controls``), left out of a micro-batch's input rows."""

    def add(self, progress: Any) -> BatchProgress:
        """Count one micro-batch's progress entry (Spark's: its ``observedMetrics`` named ``panes-...``);
        returns it as a :class:`BatchProgress`."""
        observed = progress.get("observedMetrics") or {}
        batch = self.add_observed(observed)
        read = source_counts(observed, self.sources)
        durations = _field(progress, "durationMs") or {}
        return BatchProgress(
            batch=int(_field(progress, "batchId") or 0),
            input_rows=source_records(progress, self.micro_batch_controls) - read["spark_rows"] + read["records_out"],
            duration_ms=int(durations.get("triggerExecution") or 0),
            watermark=progress_watermark(progress),
            steps=batch,
            results=sum(batch.get(self.steps[index], {}).get("records_out", 0) for index in self.results),
            source_errors=read["error_out"],
        )

    def source_errors(self) -> dict[str, int]:
        """By source name, the inputs each source sent to its error output so far (sources that sent any)."""
        return {name: total["error_out"] for name, total in self.source_totals.items() if total["error_out"]}

    def add_observed(self, observed: dict[str, Any]) -> dict[str, dict[str, int]]:
        """Add one batch's observed metrics: name -> row (or dict) of ``m<step>_<field>`` sums; returns the
        batch's counters per step name."""
        batch: dict[str, dict[str, int]] = {}
        for key, row in observed.items():
            if not key.startswith("panes-") or row is None:
                continue
            values = observed_values(row)
            for name, value in values.items():
                match = _COLUMN.match(name)
                if match is None or int(match.group(1)) not in self.steps:
                    continue
                step = batch.setdefault(self.steps[int(match.group(1))], dict.fromkeys(FIELDS, 0))
                step[match.group(2)] = step.get(match.group(2), 0) + int(value or 0)
        for index, name in self.sources.items():
            counted = source_counts(observed, {index: name})
            total = self.source_totals.setdefault(name, dict.fromkeys(SOURCE_FIELDS, 0))
            for f in SOURCE_FIELDS:
                total[f] += counted[f]
        for name, step in batch.items():
            total = self.totals.setdefault(name, dict.fromkeys(FIELDS, 0))
            for f, value in step.items():
                total[f] = total.get(f, 0) + value
            if total["open_panes"] > 0 and total["open_panes"] >= self.peak_open_panes:
                self.peak_open_panes = total["open_panes"]
                self.peak_state_bytes_per_pane = total["state_bytes"] / total["open_panes"]
        self.batches.append(batch)
        return batch

    def operators(self) -> dict[str, OperatorMetrics]:
        """The totals so far as one ``OperatorMetrics`` per step name (steps that reported nothing yet: 0)."""
        return {name: OperatorMetrics.of(name, self.totals.get(name, {})) for name in self.steps.values()}

    def as_dict(self) -> dict[str, Any]:
        return {
            "steps": self.totals,
            "per_batch": self.batches,
            "peak_state_bytes_per_pane": self.peak_state_bytes_per_pane,
            "sources": self.source_totals,
        }
