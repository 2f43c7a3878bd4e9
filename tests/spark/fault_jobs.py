"""Streaming jobs the fault tests kill and restart: ``python -m tests.spark.fault_jobs <job> <checkpoint> <output>
[master]`` runs job ``<job>`` (a name of :data:`JOBS`) over its explicit micro-batches on Spark, writing its outputs
under ``<output>``.

Every job has event time that advances by ~600 ms per micro-batch (6 batches of a few rows, then the end of
input and one more of Spark's: micro-batches 0 to 7), stragglers that arrive late (some within the windows'
allowed lateness, some beyond it), and sinks Spark writes by tasks and replaces when a batch is replayed, so a
killed job restarted from its checkpoint must give exactly the output of an uninterrupted run. The batches are
few because each run a test compares (a killed run, its restart, the uninterrupted run) runs every one again:
the stragglers (:func:`events`) come early enough that 6 hold a window fired again within its allowed lateness,
sessions that fired and grow in a later batch, and a row beyond the lateness. The jobs:

- ``tumbling``: tumbling event-time windows with allowed lateness and a late side output (files only: the
  query's tasks write them directly);
- ``sessions``: event-time session windows per page with allowed lateness and a late side output (late elements
  merge into sessions that already fired);
- ``count``: count windows per key with allowed lateness and a late side output — Flink never finds an element
  of a ``GlobalWindows`` window late (``WindowOperator.isWindowLate`` asks ``isEventTime()`` of the assigner),
  so stragglers are counted and the late output stays empty;
- ``timers``: a keyed process function with event-time timers (which flush what the key gathered) and
  processing-time timers (which report it), at processing times the batches give;
- ``branching``: one source, two keyed steps (windows per user, a keyed process function per page), and five
  sinks: three file sinks, a ``ForeachBatchSink`` writing Parquet per batch id, and a driver-side function
  sink (so the query writes through ``foreachBatch``);
- ``all``: the five above in one query over one source, each under a folder of its name.

Each job's :attr:`FaultJob.accounting` states what every run must satisfy whatever the kill: each input row is
counted once or reported late once.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from panes.datastream import KeyedProcessFunction, OutputTag, StreamEnvironment
from panes.functions.stream import TimeDomain
from panes.watermarks import WatermarkStrategy
from panes.windowing import EventTimeSessionWindows, ProcessWindowFunction, TumblingEventTimeWindows

LATE: OutputTag[Any] = OutputTag("late")
BATCHES = 6
ROWS_PER_BATCH = 5
STEP_MS = 600
"""How far event time moves per micro-batch."""
PROCESSING_TIMES = [b * 400 for b in range(BATCHES)]
"""The processing time of each micro-batch (a replayed batch and an uninterrupted run's see the same times)."""

Rows = dict[str, list[tuple[Any, ...]]]
"""A run's outputs: output name -> its rows, sorted (the micro-batch they came in last when the sink records it)."""


def events(batches: int = BATCHES) -> list[list[dict[str, Any]]]:
    """``batches`` micro-batches of ``ROWS_PER_BATCH`` rows ``{user, page, ts, n}`` (``n`` unique), event time
    moving on by :data:`STEP_MS` per batch; every batch but every third (1, 2, 4, 5, ...) adds a straggler 900 ms
    behind (in batch 4 late for the tumbling windows but within their 500 ms of allowed lateness: ``u0``'s
    window ``[1000, 2000)`` fires again; in batches 4 and 6 a session of ``/p1`` that fired grows), every fourth
    from the fourth (3, 7, ...) one 3 s behind (beyond the allowed lateness: the late output)."""
    result = []
    for b in range(batches):
        rows = [
            {"user": f"u{(b * 2 + i) % 3}", "page": f"/p{(b + i) % 4}", "ts": b * STEP_MS + i * 110, "n": b * 100 + i}
            for i in range(ROWS_PER_BATCH)
        ]
        if b % 3 != 0:
            rows.append({"user": "u0", "page": "/p1", "ts": b * STEP_MS - 900, "n": b * 100 + 50})
        if b % 4 == 3:
            rows.append({"user": "u1", "page": "/p2", "ts": b * STEP_MS - 3000, "n": b * 100 + 60})
        result.append(rows)
    return result


def stamped(env: StreamEnvironment) -> Any:
    """The clicks of :func:`events`, each micro-batch at its processing time (:data:`PROCESSING_TIMES`)."""
    source = env.from_micro_batches(events(), processing_times=PROCESSING_TIMES)
    return source.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(200).with_timestamp_assigner("ts")
    )


class WindowCount(ProcessWindowFunction[Any, Any, Any, Any]):
    """``(key, start, end, elements, sum of n)`` of each firing; a late firing repeats the window with all its
    elements so far."""

    def process(self, key: Any, context: Any, elements: Any) -> Iterator[tuple[Any, ...]]:
        rows = list(elements)
        window = context.window()
        yield (key, window.start, window.end, len(rows), sum(r["n"] for r in rows))


WINDOW_SCHEMA = "key STRING, start BIGINT, end BIGINT, elements BIGINT, total BIGINT"
LATE_SCHEMA = "user STRING, page STRING, ts BIGINT, n BIGINT"


def _windowed(stream: Any, assigner: Any, output: str, name: str, key: str = "user") -> None:
    fired = (
        stream.key_by(key)
        .window(assigner)
        .allowed_lateness(500)
        .side_output_late_data(LATE)
        .process(WindowCount(), output_type=WINDOW_SCHEMA)
    )
    fired.sink_to_files(f"{output}/{name}", schema=WINDOW_SCHEMA)
    fired.get_side_output(LATE).sink_to_files(f"{output}/late", schema=LATE_SCHEMA)


def build_tumbling(clicks: Any, output: str) -> None:
    _windowed(clicks, TumblingEventTimeWindows.of(1000), output, "windows")


def build_sessions(clicks: Any, output: str) -> None:
    # a page comes back after 440 or 490 ms: sessions of one or two rows, some merged by a straggler
    _windowed(clicks, EventTimeSessionWindows.with_gap(450), output, "windows", key="page")


def build_count(clicks: Any, output: str) -> None:
    fired = (
        clicks.key_by("user")
        .count_window(3)
        .allowed_lateness(500)
        .side_output_late_data(LATE)
        .process(CountWindowRow(), output_type="key STRING, elements BIGINT, total BIGINT, first BIGINT")
    )
    fired.sink_to_files(f"{output}/windows", schema="key STRING, elements BIGINT, total BIGINT, first BIGINT")
    fired.get_side_output(LATE).sink_to_files(f"{output}/late", schema=LATE_SCHEMA)


class CountWindowRow(ProcessWindowFunction[Any, Any, Any, Any]):
    """``(key, elements, sum of n, smallest n)`` of a count window."""

    def process(self, key: Any, context: Any, elements: Any) -> Iterator[tuple[Any, ...]]:
        ns = [r["n"] for r in elements]
        yield (key, len(ns), sum(ns), min(ns))


class Flusher(KeyedProcessFunction[Any, Any, Any]):
    """Gathers a key's rows; an event-time timer at the end of each row's 500 ms slot flushes what was gathered
    (``("event", key, timer, rows, sum of n)``); a processing-time timer 250 ms after each row reports the rows
    gathered and seen so far (``("processing", key, timer, gathered, seen)``). The rows seen are counted per
    slot in map state (entries added and updated across micro-batches: their logged changes replay on restart)."""

    def open(self, runtime_context: Any) -> None:
        from panes.state import MapStateDescriptor, ValueStateDescriptor

        self.gathered = runtime_context.get_state(ValueStateDescriptor("gathered"))
        self.seen = runtime_context.get_map_state(MapStateDescriptor("seen per slot"))

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        rows, total = self.gathered.value() or (0, 0)
        self.gathered.update((rows + 1, total + value["n"]))
        slot = value["ts"] // 500
        self.seen.put(slot, (self.seen.get(slot) or 0) + 1)
        timers = ctx.timer_service()
        timers.register_event_time_timer((value["ts"] // 500 + 1) * 500)
        timers.register_processing_time_timer(timers.current_processing_time() + 250)
        return iter(())

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        rows, total = self.gathered.value() or (0, 0)
        if ctx.time_domain() == TimeDomain.EVENT_TIME:
            if rows:
                self.gathered.clear()
                yield ("event", ctx.get_current_key(), timestamp, rows, total)
        else:
            yield ("processing", ctx.get_current_key(), timestamp, rows, sum(self.seen.values()))


TIMER_SCHEMA = "kind STRING, key STRING, at BIGINT, elements BIGINT, total BIGINT"


def build_timers(clicks: Any, output: str) -> None:
    flushed = clicks.key_by("user").process(Flusher(), output_type=TIMER_SCHEMA)
    flushed.sink_to_files(f"{output}/timers", schema=TIMER_SCHEMA)


@dataclass(frozen=True)
class ParquetPerBatch:
    """A ``ForeachBatchSink`` function writing each batch to ``path/batch_id=<id>`` (overwrite: idempotent)."""

    path: str

    def __call__(self, frame: Any, batch_id: int) -> None:
        frame.write.mode("overwrite").parquet(f"{self.path}/batch_id={batch_id}")


@dataclass(frozen=True)
class AppendLines:
    """A driver-side sink appending each value as a JSON line to ``path`` (flushed at once, so the lines a killed
    process delivered stay)."""

    path: str

    def __call__(self, value: Any) -> None:
        fields = list(value.values()) if isinstance(value, dict) else list(value)  # a typed row comes as a dict
        with open(self.path, "a") as handle:
            handle.write(json.dumps(fields) + "\n")


def build_branching(clicks: Any, output: str) -> None:
    from panes.spark import ForeachBatchSink

    sampled = clicks.filter(lambda row: row["n"] % 5 == 0).map(
        lambda row: (row["n"], row["ts"]), output_type="n BIGINT, ts BIGINT"
    )
    sampled.sink_to_files(f"{output}/sampled", schema="n BIGINT, ts BIGINT")
    per_user = (
        clicks.key_by("user")
        .window(TumblingEventTimeWindows.of(1000))
        .allowed_lateness(500)
        .side_output_late_data(LATE)
        .process(WindowCount(), output_type=WINDOW_SCHEMA)
    )
    per_user.sink_to_files(f"{output}/windows", schema=WINDOW_SCHEMA)
    per_user.get_side_output(LATE).sink_to_files(f"{output}/late", schema=LATE_SCHEMA)
    os.makedirs(output, exist_ok=True)
    per_user.add_sink(AppendLines(f"{output}/driver.jsonl"))
    per_page = clicks.key_by("page").process(Flusher(), output_type=TIMER_SCHEMA)
    per_page.sink_to(ForeachBatchSink(ParquetPerBatch(f"{output}/per_page"), schema=TIMER_SCHEMA))


# -- accounting identities -------------------------------------------------------------------------------------


def _all_rows() -> list[dict[str, Any]]:
    return [row for batch in events() for row in batch]


def _strip_batch(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows without the trailing micro-batch column the file sinks' folders add."""
    return [row[:-1] for row in rows]


def _windows_account(outputs: Rows) -> None:
    """Each window's last firing holds all its elements (firings repeat, never purge): those counts plus the late
    rows are every input row, and their ``n`` sums are every row's."""
    last: dict[tuple[Any, ...], tuple[int, int]] = {}
    for key, start, end, elements, total in _strip_batch(outputs["windows"]):
        last[(key, start, end)] = max(last.get((key, start, end), (0, 0)), (elements, total))
    # merged sessions: a window inside another of its key was merged into it
    final = {
        w: v
        for w, v in last.items()
        if not any(o != w and o[0] == w[0] and o[1] <= w[1] and w[2] <= o[2] for o in last)
    }
    late = _strip_batch(outputs["late"])
    rows = _all_rows()
    assert sum(e for e, _ in final.values()) + len(late) == len(rows), "every row counted once or late once"
    assert sum(t for _, t in final.values()) + sum(r[3] for r in late) == sum(r["n"] for r in rows)


def _count_account(outputs: Rows) -> None:
    """Count windows of 3 fire every third element of a key, none is late; the rest of each key never fires."""
    per_key = Counter(row["user"] for row in _all_rows())
    fired: Counter[str] = Counter()
    for key, elements, _total, _first in _strip_batch(outputs["windows"]):
        assert elements == 3
        fired[key] += elements
    assert fired == Counter({k: n - n % 3 for k, n in per_key.items() if n >= 3})
    assert outputs["late"] == [], "no element of a GlobalWindows window is late"


def _timers_account(outputs: Rows, key: str = "user", name: str = "timers") -> None:
    """Every row is flushed by exactly one event-time timer (all fire at the end of input)."""
    flushes = [r for r in _strip_batch(outputs[name]) if r[0] == "event"]
    per_key = Counter(row[key] for row in _all_rows())
    flushed: Counter[str] = Counter()
    for _, k, _, elements, _ in flushes:
        flushed[k] += elements
    assert flushed == per_key
    assert sum(r[4] for r in flushes) == sum(row["n"] for row in _all_rows())
    assert any(r[0] == "processing" for r in _strip_batch(outputs[name])), "processing-time timers fired"


def _branching_account(outputs: Rows) -> None:
    _windows_account(outputs)
    _timers_account(outputs, key="page", name="per_page")
    assert sorted(_strip_batch(outputs["sampled"])) == sorted((r["n"], r["ts"]) for r in _all_rows() if r["n"] % 5 == 0)


@dataclass(frozen=True)
class FaultJob:
    """A job of this module: how to build it on the stamped clicks, its outputs (folders under the output path),
    and what its outputs must satisfy (``accounting``)."""

    name: str
    build: Callable[[Any, str], None]
    outputs: tuple[str, ...]
    accounting: Callable[[Rows], None]
    driver_lines: str | None = None
    """The folder (under the output path) of the job's at-least-once driver sink's ``driver.jsonl``, if it has one."""


PARTS: tuple[FaultJob, ...] = (
    FaultJob("tumbling", build_tumbling, ("windows", "late"), _windows_account),
    FaultJob("sessions", build_sessions, ("windows", "late"), _windows_account),
    FaultJob("count", build_count, ("windows", "late"), _count_account),
    FaultJob("timers", build_timers, ("timers",), _timers_account),
    FaultJob("branching", build_branching, ("sampled", "windows", "late", "per_page"), _branching_account, ""),
)
"""The jobs of one kind of step each."""


def build_all(clicks: Any, output: str) -> None:
    for part in PARTS:
        part.build(clicks, os.path.join(output, part.name))


def _all_account(outputs: Rows) -> None:
    for part in PARTS:
        part.accounting({name: outputs[f"{part.name}/{name}"] for name in part.outputs})


ALL = FaultJob(
    "all",
    build_all,
    tuple(f"{part.name}/{name}" for part in PARTS for name in part.outputs),
    _all_account,
    "branching",
)
"""Every job of :data:`PARTS` in one query, over one source, each under its own folder: a kill meets every kind
of step (windows of three assigners with lateness, timers, a plan that branches into a driver sink and
``foreachBatch``) at once."""

JOBS: dict[str, FaultJob] = {job.name: job for job in (*PARTS, ALL)}


def run(spark: Any, job: str, checkpoint: str, output: str, num_shards: int = 3) -> None:
    """Run ``job`` to its end with ``checkpoint`` (continuing from it when it holds progress)."""
    from panes.spark import SparkRunner

    env = StreamEnvironment(SparkRunner(spark, checkpoint_location=checkpoint, num_shards=num_shards))
    JOBS[job].build(stamped(env), output)
    env.execute(f"fault-{job}")


def read_outputs(job: str, output: str) -> Rows:
    """Every row of every output of ``job`` under ``output``, sorted, with the micro-batch it was written in (the
    files' ``batch=``/``batch_id=`` folder) as the last column."""
    import pyarrow.parquet as pq

    result: Rows = {}
    for name in JOBS[job].outputs:
        path = os.path.join(output, name)
        if not os.path.isdir(path):
            result[name] = []
            continue
        table = pq.read_table(path)
        rows = []
        for row in table.to_pylist():
            batch = row.pop("batch", None)
            batch = row.pop("batch_id", batch)
            rows.append((*row.values(), int(batch)))
        result[name] = sorted(rows)
    return result


def read_driver_lines(job: str, output: str) -> list[tuple[Any, ...]]:
    """The values the driver-side sink of ``job`` received, in every process that ran it (none when it has no
    such sink)."""
    folder = JOBS[job].driver_lines
    if folder is None:
        return []
    path = os.path.join(output, folder, "driver.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        return [tuple(json.loads(line)) for line in handle if line.strip()]


if __name__ == "__main__":
    from panes.spark import create_session
    from panes.spark.crash_hook import VARIABLE

    master = sys.argv[4] if len(sys.argv) > 4 else "local[2]"
    # a crash hook (tests.spark.crash_points) reaches executors on a cluster through Spark's executor environment
    hook = {f"spark.executorEnv.{VARIABLE}": os.environ[VARIABLE]} if VARIABLE in os.environ else {}
    run(create_session(master, config=hook), sys.argv[1], sys.argv[2], sys.argv[3])
