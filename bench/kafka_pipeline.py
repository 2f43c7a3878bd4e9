"""Kafka in, Kafka out (issue 40): a tumbling-window count+sum read from a Kafka topic and written to another, on
panes (``KafkaSource`` -> ``TumblingEventTimeWindows`` -> ``KafkaSink``) against Spark's native query reading and
writing the same topics through Spark's connector with its own window aggregation, in one process and one
``local[2]`` session: throughput over a filled topic, and end-to-end latency of a running query.

    flock /tmp/panes-spark.lock .venv/bin/python bench/kafka_pipeline.py                 # about 13 minutes
    flock /tmp/panes-spark.lock .venv/bin/python bench/kafka_pipeline.py --records 100000 --duration 40
    flock /tmp/panes-spark.lock .venv/bin/python bench/kafka_pipeline.py --json bench/measured/kafka_pipeline.json

A broker of ``scripts/kafka.sh`` is started for the run and stopped after it, unless ``--bootstrap`` names one;
Spark's connector comes from ``bash scripts/spark-kafka.sh fetch`` (the session ``create_session`` makes loads it).

**Throughput.** ``--records`` events (JSON values ``{"key", "value", "ts"}``: ``--keys`` keys, integer values,
event times over an hour with up to 5 s of disorder, as ``workload.write_events`` makes them; the Kafka timestamp
is the event time) fill a topic of two partitions, record ``i`` in partition ``i % 2``, then one event ten hours
on in each partition, which closes every window on both sides. Native: ``spark.readStream.format("kafka")`` ->
``from_json`` -> ``withWatermark`` 5 s on the Kafka timestamp -> ``groupBy(window(10 s), key)`` count+sum ->
``to_json`` -> ``writeStream.format("kafka")`` (append, ``trigger(availableNow=True)``, its own checkpoint).
panes: a PyFlink job, ``KafkaSource`` with a ``SimpleStringSchema`` -> ``env.from_source(source,
WatermarkStrategy.for_bounded_out_of_orderness(5 s), "in")`` (the Kafka timestamps, a watermark per partition) ->
``map(json.loads)`` to a typed row -> ``key_by`` -> ``TumblingEventTimeWindows`` 10 s -> ``aggregate`` count+sum ->
``KafkaSink`` with a ``JsonRowSerializationSchema``, ``EXACTLY_ONCE`` and ``AT_LEAST_ONCE``, on
``SparkRunner(trigger="available_now")`` with its own checkpoint. (The source parses with ``json.loads`` in a
``map``, not with ``JsonRowDeserializationSchema``: when this bench was written that one ran a pyarrow JSON reader
per message, about 0.9 ms each; it now reads a task's records in one parse, about 9 us a message, against 6 us for
``json.loads``. ``CsvRowDeserializationSchema`` still parses per message, about 0.4 ms.)

Neither side limits the offsets per trigger (panes' ``KafkaSource`` on Spark has no counterpart of Spark's
``maxOffsetsPerTrigger``), so each reads the topic in one data micro-batch (two tasks, one per partition) and the
windows come out in it (panes) or in the no-data micro-batch after it (native: Spark moves its watermark after a
micro-batch). Each side runs once on a small topic to warm up, then ``--repeat`` times in turn on the filled one,
each run into a fresh output topic; a figure is the best run, wall time from the query's start to its end. Every
output topic, read back by a ``read_committed`` consumer, must hold exactly the windows computed from the generated
events (as a multiset of ``(window start, key, count, sum)``), else no figure counts. Printed: events per second of
each side and the ratio panes/native (above 1: panes faster; issue 40's target: >= 1.0), with each run's
micro-batches and the CPU seconds of the JVM, the Python workers and the broker.

**Latency.** For each trigger (``--triggers``, default ``0 seconds`` and ``1 second``) and each side, a query over
fresh topics runs while a probe process (its own interpreter, so the driver's Python does not delay it) produces
``--rate`` records per second over ``--latency-keys`` keys, alternating the two partitions, each with event time =
the wall clock when it is produced, and reads the output topic with a ``read_committed`` consumer. Same query, but
tumbling ``--latency-window`` windows (2 s: one closes every 2 s, so 30 samples take a minute; how long the window
is does not change what a closing window waits for) and a 1 s bound. A window ending at ``E`` closes with the first
record whose event time is at least ``E + bound``: on every partition for panes (its watermark is the smallest of the
partitions'), on any for native (Spark's is the largest). A sample: the time the last of the window's results (one
per key) is readable, minus the time that record was produced; its results must be the counts and sums of what was
produced into the window. Windows closed in the first ``--warmup`` seconds are left out, then ``--duration`` seconds
of windows count. panes writes ``EXACTLY_ONCE`` (one transaction per micro-batch), native Spark's sink at least once
(no transactions: readable as its tasks write). Printed: p50, p90 and p99 of each side in milliseconds (p99 by
nearest rank: with fewer than 100 samples it is the largest), the micro-batches' median ``triggerExecution``, and
panes' median over native's.

``--json FILE`` also writes the figures and ``bench/RESULTS.md``'s "Kafka pipeline" section.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import multiprocessing
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from measure import MemorySampler, cpu_seconds, write_section  # noqa: E402

BEGIN, END = "<!-- kafka_pipeline.py writes from here -->", "<!-- kafka_pipeline.py to here -->"
SCRIPT = HERE.parent / "scripts" / "kafka.sh"
BASE = 1_767_225_600_000  # 2026-01-01T00:00:00Z, as workload.BASE
WINDOW_MS = 10_000
BOUND_MS = 5_000
LATENCY_BOUND_MS = 1_000
EVENT_DDL = "key STRING, value BIGINT, ts BIGINT"
Window = tuple[int, str, int, int]
"""One window's result: (window start, key, count, sum)."""


# -- the broker and its topics ------------------------------------------------------------------------------------


@contextlib.contextmanager
def broker(bootstrap: str | None) -> Iterator[tuple[str, int | None]]:
    """``bootstrap`` (and no pid), or the address and pid of a broker of ``scripts/kafka.sh`` started for the run
    and stopped after it."""
    if bootstrap is not None:
        yield bootstrap, None
        return
    folder = tempfile.mkdtemp(prefix="bench-kafka-")
    started = subprocess.run(["bash", str(SCRIPT), "start", folder], check=True, capture_output=True, text=True)
    try:
        yield started.stdout.strip().splitlines()[-1], int(Path(folder, "kafka.pid").read_text())
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", folder], check=False, capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def new_topic(bootstrap: str, partitions: int = 2) -> str:
    """A fresh topic, once the broker serves every partition of it."""
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    name = f"bench-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = admin.list_topics(name, timeout=10).topics.get(name)
        ready = found is not None and found.error is None and len(found.partitions) == partitions
        if ready and all(p.leader >= 0 and p.error is None for p in found.partitions.values()):
            return name
        time.sleep(0.05)
    raise RuntimeError(f"topic {name} was created but not served within 30 s")


def fill(bootstrap: str, records: int, keys: int, seed: int = 1) -> tuple[str, Counter[Window]]:
    """A new topic of two partitions holding ``records`` events and one closing event per partition, and the
    windows both sides must write (the closing events' own windows never close)."""
    import numpy as np
    import pandas as pd
    from confluent_kafka import Producer

    rng = np.random.default_rng(seed)
    ts = BASE + np.sort(rng.integers(0, 3_600_000, records)) + rng.integers(-5_000, 1, records)
    key = rng.integers(0, keys, records)
    value = rng.integers(0, 1_000, records)
    topic = new_topic(bootstrap)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000})
    rows = zip(ts.tolist(), key.tolist(), value.tolist(), strict=True)
    closing = [(BASE + 36_000_000, -1, 0)] * 2
    for i, (t, k, v) in enumerate([*rows, *closing]):
        name = "flush" if k < 0 else f"k{k}"
        message = f'{{"key":"{name}","value":{v},"ts":{t}}}'.encode()
        while True:
            try:
                producer.produce(topic, message, partition=i % 2, timestamp=t)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(120) != 0:
        raise RuntimeError("the events were not all acknowledged within 120 s")
    frame = pd.DataFrame({"start": ts - ts % WINDOW_MS, "key": key, "value": value})
    grouped = frame.groupby(["start", "key"])["value"].agg(["size", "sum"]).reset_index()
    expected = Counter(
        zip(
            grouped["start"].tolist(),
            [f"k{k}" for k in grouped["key"].tolist()],
            grouped["size"].tolist(),
            grouped["sum"].tolist(),
            strict=True,
        )
    )
    return topic, expected


def read_windows(bootstrap: str, topic: str) -> Counter[Window]:
    """Every window result in ``topic``, read to its end by a ``read_committed`` consumer."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-read-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    found: Counter[Window] = Counter()
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        pending = set(partitions)
        deadline = time.monotonic() + 300
        while pending and time.monotonic() < deadline:
            for message in consumer.consume(10_000, timeout=0.5):
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        pending.discard(message.partition())
                    continue
                row = json.loads(message.value())
                found[(row["window_start"], row["key"], row["n"], row["total"])] += 1
    finally:
        consumer.close()
    return found


# -- the two queries ----------------------------------------------------------------------------------------------


def native_query(
    spark: Any, bootstrap: str, source: str, output: str, checkpoint: str, trigger: str, window_ms: int, bound_ms: int
) -> Any:
    """Spark's own query: Kafka -> from_json -> watermark on the Kafka timestamp -> window count+sum -> to_json ->
    Kafka (append mode); ``trigger``: ``available_now`` or a processing-time interval."""
    from pyspark.sql import functions as F

    raw = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .load()
    )
    events = raw.select(F.from_json(F.col("value").cast("string"), EVENT_DDL).alias("e"), "timestamp").select(
        "e.key", "e.value", F.col("timestamp").alias("event_time")
    )
    counted = (
        events.withWatermark("event_time", f"{bound_ms} milliseconds")
        .groupBy(F.window("event_time", f"{window_ms} milliseconds").alias("w"), "key")
        .agg(F.count("*").alias("n"), F.sum("value").alias("total"))
    )
    result = counted.select(
        F.to_json(
            F.struct(
                "key",
                F.unix_millis(F.col("w.start")).alias("window_start"),
                F.unix_millis(F.col("w.end")).alias("window_end"),
                "n",
                "total",
            )
        ).alias("value")
    )
    writer = (
        result.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", output)
        .option("checkpointLocation", checkpoint)
        .outputMode("append")
    )
    writer = writer.trigger(availableNow=True) if trigger == "available_now" else writer.trigger(processingTime=trigger)
    return writer.start()


def panes_job(
    spark: Any,
    bootstrap: str,
    source: str,
    output: str,
    checkpoint: str,
    trigger: str,
    window_ms: int,
    bound_ms: int,
    guarantee: str,
) -> tuple[Any, Any]:
    """The same job as a PyFlink user writes it, on panes' Spark runner: ``(runner, env)``."""
    from panes.common import SimpleStringSchema, Types, WatermarkStrategy
    from panes.connectors.kafka import (
        DeliveryGuarantee,
        KafkaOffsetsInitializer,
        KafkaRecordSerializationSchema,
        KafkaSink,
        KafkaSource,
    )
    from panes.datastream import StreamExecutionEnvironment
    from panes.datastream.formats.json import JsonRowSerializationSchema
    from panes.functions import Aggregates, Count, Sum
    from panes.spark import SparkRunner
    from panes.windowing import TumblingEventTimeWindows, WindowRow

    event = Types.ROW_NAMED(["key", "value", "ts"], [Types.STRING(), Types.LONG(), Types.LONG()])
    result = Types.ROW_NAMED(
        ["key", "window_start", "window_end", "n", "total"],
        [Types.STRING(), Types.LONG(), Types.LONG(), Types.LONG(), Types.LONG()],
    )
    kafka = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap)
        .set_topics(source)
        .set_value_only_deserializer(SimpleStringSchema())
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .build()
    )
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic(output)
        .set_value_serialization_schema(JsonRowSerializationSchema.builder().with_type_info(result).build())
        .build()
    )
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(bootstrap)
        .set_record_serializer(serializer)
        .set_delivery_guarantee(DeliveryGuarantee[guarantee])
        .set_transactional_id_prefix(f"bench-{uuid.uuid4().hex[:8]}")
        .build()
    )
    runner = SparkRunner(spark, checkpoint_location=checkpoint, trigger=trigger, quiet=True)
    env = StreamExecutionEnvironment.get_execution_environment(runner)
    (
        env.from_source(kafka, WatermarkStrategy.for_bounded_out_of_orderness(bound_ms), "in")
        .map(json.loads, output_type=event)
        .key_by("key")
        .window(TumblingEventTimeWindows.of(window_ms))
        .aggregate(
            Aggregates(n=Count(), total=Sum("value")), WindowRow(key="key", start="window_start", end="window_end")
        )
        .sink_to(sink)
    )
    return runner, env


# -- throughput ---------------------------------------------------------------------------------------------------


@dataclass
class Run:
    """One run of one side over the filled topic."""

    seconds: float
    batches: list[tuple[int, int, int]]
    """Each micro-batch's input rows, ``triggerExecution`` and ``addBatch`` milliseconds."""
    cpu_jvm: float
    cpu_python: float
    cpu_broker: float
    identical: bool


def batches_of(progress: list[Any]) -> list[tuple[int, int, int]]:
    ordered = sorted(progress, key=lambda p: p["batchId"])
    return [
        (
            int(p["numInputRows"]),
            int(p["durationMs"].get("triggerExecution", 0)),
            int(p["durationMs"].get("addBatch", 0)),
        )
        for p in ordered
    ]


def run_side(
    spark: Any,
    bootstrap: str,
    broker_pid: int | None,
    side: str,
    topic: str,
    expected: Counter[Window] | None,
    work: str,
) -> Run:
    """One run of ``side`` (``native``, or ``panes EXACTLY_ONCE`` / ``panes AT_LEAST_ONCE``) from ``topic`` into a
    fresh topic, checked against ``expected`` (``None``: not checked)."""
    output = new_topic(bootstrap)
    checkpoint = tempfile.mkdtemp(prefix="ck-", dir=work)
    sampler = MemorySampler()
    broker_before = cpu_seconds(broker_pid) if broker_pid else 0.0
    sampler.start()
    started = time.perf_counter()
    if side == "native":
        query = native_query(spark, bootstrap, topic, output, checkpoint, "available_now", WINDOW_MS, BOUND_MS)
        query.awaitTermination()
        seconds = time.perf_counter() - started
        progress = list(query.recentProgress)
    else:
        _, env = panes_job(
            spark, bootstrap, topic, output, checkpoint, "available_now", WINDOW_MS, BOUND_MS, side.split()[1]
        )
        outcome = env.execute("kafka-pipeline")
        seconds = time.perf_counter() - started
        progress = list(outcome.details.get("progress", []))
    sampler.stop()
    broker_cpu = (cpu_seconds(broker_pid) - broker_before) if broker_pid else 0.0
    identical = expected is None or read_windows(bootstrap, output) == expected
    return Run(
        seconds,
        batches_of(progress),
        sampler.cpu_seconds("jvm"),
        sampler.cpu_seconds("python"),
        broker_cpu,
        identical,
    )


@dataclass
class Throughput:
    records: int
    windows: int
    runs: dict[str, list[Run]] = field(default_factory=dict)

    def best(self, side: str) -> Run:
        return min(self.runs[side], key=lambda r: r.seconds)

    def rate(self, side: str) -> float:
        return self.records / self.best(side).seconds

    def ratio(self, side: str) -> float:
        return self.rate(side) / self.rate("native")

    @property
    def identical(self) -> bool:
        return all(run.identical for runs in self.runs.values() for run in runs)


SIDES = ["native", "panes EXACTLY_ONCE", "panes AT_LEAST_ONCE"]


def throughput(
    spark: Any, bootstrap: str, broker_pid: int | None, records: int, keys: int, repeat: int, work: str
) -> Throughput:
    warm, _ = fill(bootstrap, 20_000, keys, seed=2)
    topic, expected = fill(bootstrap, records, keys)
    for side in SIDES:  # warms the JVM's compilers and the Python workers for each side
        run_side(spark, bootstrap, broker_pid, side, warm, None, work)
    found = Throughput(records, sum(expected.values()), {side: [] for side in SIDES})
    for _ in range(repeat):  # the sides in turn, so that none has the warmer JVM
        for side in SIDES:
            run = run_side(spark, bootstrap, broker_pid, side, topic, expected, work)
            found.runs[side].append(run)
            verdict = "identical" if run.identical else "DIFFERENT from the expected windows"
            print(
                f"  {side:20} {run.seconds:6.2f} s ({records / run.seconds:8,.0f} events/s), micro-batches "
                f"(rows, ms, addBatch ms) {run.batches}, CPU s JVM {run.cpu_jvm:.1f} / Python {run.cpu_python:.1f} "
                f"/ broker {run.cpu_broker:.1f}; output {verdict}",
                flush=True,
            )
    return found


# -- latency ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeSettings:
    bootstrap: str
    source: str
    output: str
    rate: int
    keys: int
    window_ms: int
    bound_ms: int
    warmup: float
    duration: float
    grace: float
    every_partition: bool
    """Whether a window closes once every partition passed it (panes), or any one (native)."""


def probe(settings: ProbeSettings, answer: Any) -> None:
    """Produces into ``settings.source`` at ``settings.rate`` records/s (event time = wall clock, partitions in
    turn) and reads ``settings.output`` (``read_committed``) in a thread; puts on ``answer`` one dict per window
    closed in the measured span: its end, when its closing record was produced, when its first and last results
    arrived, and whether they were right."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    s = settings
    arrived: dict[tuple[int, str], list[tuple[float, int, int]]] = {}
    done = threading.Event()

    def consume() -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": s.bootstrap,
                "group.id": f"bench-probe-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "fetch.wait.max.ms": 10,
            }
        )
        consumer.assign([TopicPartition(s.output, p, 0) for p in (0, 1)])
        while not done.is_set():
            message = consumer.poll(0.02)
            if message is None or message.error() is not None:
                continue
            at = time.time()
            row = json.loads(message.value())
            arrived.setdefault((row["window_end"], row["key"]), []).append((at, row["n"], row["total"]))
        consumer.close()

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    producer = Producer({"bootstrap.servers": s.bootstrap, "linger.ms": 1})
    expected: dict[int, dict[str, list[int]]] = {}
    passed: list[dict[int, float]] = [{}, {}]  # per partition: window end -> when the record that passed it left
    next_end: list[int | None] = [None, None]
    started = time.time()
    measured_from, measured_to = started + s.warmup, started + s.warmup + s.duration
    stop_at = measured_to + s.grace
    sent = 0
    while True:
        now = time.time()
        if now >= stop_at:
            break
        due = int((now - started) * s.rate)
        while sent < due:
            at = time.time()
            ts = int(at * 1000)
            partition, key, value = sent % 2, f"k{sent % s.keys}", (sent * 7) % 1000
            producer.produce(
                s.source, f'{{"key":"{key}","value":{value},"ts":{ts}}}'.encode(), partition=partition, timestamp=ts
            )
            pane = expected.setdefault(ts - ts % s.window_ms + s.window_ms, {}).setdefault(key, [0, 0])
            pane[0] += 1
            pane[1] += value
            end = next_end[partition]
            if end is None:
                end = ts - ts % s.window_ms + s.window_ms
            while ts >= end + s.bound_ms:
                passed[partition][end] = at
                end += s.window_ms
            next_end[partition] = end
            sent += 1
        producer.poll(0)
        if now > measured_to and all(
            _complete(arrived, expected, e) for e in _measured(s, passed, measured_from, measured_to)
        ):
            break
        time.sleep(0.004)
    producer.flush(10)
    time.sleep(0.5)
    done.set()
    reader.join(5)
    samples = []
    for end in _measured(s, passed, measured_from, measured_to):
        closed = _closed_at(s, passed, end)
        panes = expected[end]
        results = {key: arrived.get((end, key), []) for key in panes}
        complete = all(results.values())
        right = all([(n, total) for _, n, total in results[key]] == [tuple(pane)] for key, pane in panes.items())
        extra = sum(1 for (e, key) in arrived if e == end and key not in expected[end])
        samples.append(
            {
                "end": end,
                "closed": closed,
                "first": min(r[0][0] for r in results.values()) if complete else None,
                "last": max(r[0][0] for r in results.values()) if complete else None,
                "right": right and not extra,
            }
        )
    answer.put({"samples": samples, "produced": sent, "seconds": time.time() - started})


def _closed_at(s: ProbeSettings, passed: list[dict[int, float]], end: int) -> float | None:
    times = [p.get(end) for p in passed]
    if s.every_partition:
        return None if None in times else max(t for t in times if t is not None)
    known = [t for t in times if t is not None]
    return min(known) if known else None


def _measured(s: ProbeSettings, passed: list[dict[int, float]], start: float, end: float) -> list[int]:
    """The window ends whose closing record was produced between ``start`` and ``end``."""
    ends = sorted(set(passed[0]) | set(passed[1]))
    chosen = []
    for window_end in ends:
        closed = _closed_at(s, passed, window_end)
        if closed is not None and start <= closed < end:
            chosen.append(window_end)
    return chosen


def _complete(arrived: dict[tuple[int, str], Any], expected: dict[int, dict[str, list[int]]], end: int) -> bool:
    return all((end, key) in arrived for key in expected.get(end, {}))


@dataclass
class Latency:
    """One side's samples at one trigger, in milliseconds."""

    trigger: str
    side: str
    samples: list[float]
    wrong: int
    missing: int
    batch_ms: float
    """The median ``triggerExecution`` of the query's micro-batches in the measured span."""
    batches: int
    batch_rows: float
    """Their median input rows."""
    phases: dict[str, float]
    """The median milliseconds of each phase of Spark's progress (``durationMs``) over those micro-batches."""

    def quantile(self, q: float) -> float:
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]

    @property
    def p50(self) -> float:
        return self.quantile(0.5)

    @property
    def p90(self) -> float:
        return self.quantile(0.9)

    @property
    def p99(self) -> float:
        return self.quantile(0.99)


def latency(spark: Any, bootstrap: str, trigger: str, side: str, args: argparse.Namespace, work: str) -> Latency:
    source, output = new_topic(bootstrap), new_topic(bootstrap)
    checkpoint = tempfile.mkdtemp(prefix="ck-", dir=work)
    if side == "native":
        query = native_query(
            spark, bootstrap, source, output, checkpoint, trigger, args.latency_window, LATENCY_BOUND_MS
        )
        stop, progress = query.stop, lambda: list(query.recentProgress)
    else:
        runner, env = panes_job(
            spark, bootstrap, source, output, checkpoint, trigger, args.latency_window, LATENCY_BOUND_MS, "EXACTLY_ONCE"
        )
        job = runner.start(env.plan(), env.config(), f"latency-{uuid.uuid4().hex[:6]}")
        stop, progress = job.stop, lambda: list(job.query.recentProgress)
    settings = ProbeSettings(
        bootstrap,
        source,
        output,
        args.rate,
        args.latency_keys,
        args.latency_window,
        LATENCY_BOUND_MS,
        args.warmup,
        args.duration,
        grace=20.0,
        every_partition=side != "native",
    )
    context = multiprocessing.get_context("spawn")
    answer = context.Queue()
    process = context.Process(target=probe, args=(settings, answer))
    began = time.time()
    try:
        process.start()
        deadline = time.monotonic() + args.warmup + args.duration + 120
        found = None
        while found is None:
            with contextlib.suppress(queue.Empty):
                found = answer.get(timeout=1)
            if found is None and (not process.is_alive() or time.monotonic() > deadline):
                raise RuntimeError(f"the latency probe gave no answer (exit code {process.exitcode})")
        process.join(30)
        entries = progress()
    finally:
        stop()
        if process.is_alive():
            process.kill()
    start, end = began + args.warmup, began + args.warmup + args.duration
    measured = [
        p
        for p in entries
        if start <= datetime.datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp() < end
    ]
    phases = sorted({name for p in measured for name in p["durationMs"]})
    samples = found["samples"]
    return Latency(
        trigger,
        side,
        [1000 * (s["last"] - s["closed"]) for s in samples if s["last"] is not None and s["right"]],
        sum(1 for s in samples if s["last"] is not None and not s["right"]),
        sum(1 for s in samples if s["last"] is None),
        _median([p["durationMs"].get("triggerExecution", 0) for p in measured]),
        len(measured),
        _median([p["numInputRows"] for p in measured]),
        {name: _median([p["durationMs"].get(name, 0) for p in measured]) for name in phases},
    )


def _median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else 0.0


# -- the report ---------------------------------------------------------------------------------------------------


def latency_line(native: Latency, panes: Latency) -> str:
    def shown(x: Latency) -> str:
        return f"{x.p50:.0f} / {x.p90:.0f} / {x.p99:.0f}"

    return (
        f"| {native.trigger} | {shown(native)} | {shown(panes)} | {panes.p50 / native.p50:.2f}x | "
        f"{native.batch_ms:.0f} / {panes.batch_ms:.0f} | {native.batch_rows:,.0f} / {panes.batch_rows:,.0f} | "
        f"{len(native.samples)} / {len(panes.samples)} |"
    )


def report(found: Throughput, pairs: list[tuple[Latency, Latency]], command: str, args: argparse.Namespace) -> str:
    import pyspark

    def runs(side: str) -> str:
        return ", ".join(f"{r.seconds:.1f}" for r in found.runs[side])

    lines = [
        f"`{command}` on {datetime.date.today().isoformat()}, {os.cpu_count()} cores, Spark {pyspark.__version__} "
        f"`local[2]` with Spark's Kafka connector {args.connector}, {args.broker}. The same session runs both sides, "
        "one query at a time.",
        "",
        f"Throughput: {found.records:,} events over {args.keys:,} keys (an hour of event time, 5 s of disorder) in a "
        f"topic of two partitions, tumbling 10 s count+sum, {found.windows:,} windows written to a fresh topic; one "
        f"data micro-batch on each side (no limit per trigger); best of {args.repeat} run(s) after a warm-up, wall "
        "time of the whole query; every output read back `read_committed` and "
        + ("**identical** to the expected windows" if found.identical else "**NOT identical** (no figure counts)")
        + ". CPU seconds of the best run.",
        "",
        "| side | events/s | ratio panes/native | runs s | micro-batches s (data / closing) | CPU s JVM / Python / "
        "broker |",
        "|---|---|---|---|---|---|",
    ]
    for side in SIDES:
        best = found.best(side)
        ratio = "" if side == "native" else f"**{found.ratio(side):.2f}x**"
        lines.append(
            f"| {side} | {found.rate(side):,.0f} | {ratio} | {runs(side)} | "
            f"{' / '.join(f'{ms / 1000:.1f}' for _, ms, _ in best.batches)} | {best.cpu_jvm:.0f} / "
            f"{best.cpu_python:.0f} / {best.cpu_broker:.0f} |"
        )
    if pairs:
        samples = min(len(x.samples) for pair in pairs for x in pair)
        wrong = sum(x.wrong + x.missing for pair in pairs for x in pair)
        lines += [
            "",
            f"End-to-end latency: {args.rate:,} records/s over {args.latency_keys} keys (event time = wall clock), "
            f"tumbling {args.latency_window / 1000:g} s count+sum, 1 s bound; from the production of the record that "
            "closes a window to the time its last result is readable by a `read_committed` consumer; "
            f"{args.duration:g} s of windows after {args.warmup:g} s of warm-up per query, at least {samples} samples "
            f"each (p99 by nearest rank, which below 100 samples is the largest). panes `EXACTLY_ONCE`, native at "
            "least once. "
            + (
                "Every sampled window's results right."
                if wrong == 0
                else f"{wrong} windows wrong or missing, left out."
            )
            + " Milliseconds:",
            "",
            "| trigger | native p50 / p90 / p99 | panes p50 / p90 / p99 | panes/native p50 | median micro-batch ms "
            "native / panes | its rows native / panes | samples |",
            "|---|---|---|---|---|---|---|",
            *(latency_line(native, panes) for native, panes in pairs),
        ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", default=None, help="a broker's host:port (default: start one)")
    parser.add_argument("--records", type=int, default=500_000, help="events in the throughput topic")
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=2, help="counted runs of each side")
    parser.add_argument("--triggers", nargs="*", default=["0 seconds", "1 second"], help="none: no latency part")
    parser.add_argument("--rate", type=int, default=2_000, help="records/s the latency probe produces")
    parser.add_argument("--latency-keys", type=int, default=100)
    parser.add_argument("--latency-window", type=int, default=2_000, help="ms")
    parser.add_argument("--warmup", type=float, default=12.0, help="s of each latency query left out")
    parser.add_argument("--duration", type=float, default=70.0, help="s of windows sampled per latency query")
    parser.add_argument("--json", default=None, help="write the figures here and the section of bench/RESULTS.md")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # Spark's Kafka connector, fetched once (a complete cache is kept); the session created below loads it
    fetched = subprocess.run(
        ["bash", str(HERE.parent / "scripts" / "spark-kafka.sh"), "fetch"], check=True, capture_output=True, text=True
    )
    args.connector = Path(fetched.stdout.strip().splitlines()[-1]).name
    from panes.spark import create_session

    work = tempfile.mkdtemp(prefix="bench-kafka-pipeline-")
    pairs: list[tuple[Latency, Latency]] = []
    with broker(args.bootstrap) as (bootstrap, broker_pid):
        version = os.environ.get("PANES_KAFKA_VERSION", "4.4.0")  # scripts/kafka.sh's default
        args.broker = (
            f"the broker at {bootstrap}"
            if broker_pid is None
            else f"one broker of `scripts/kafka.sh` (Kafka {version}) on loopback"
        )
        spark = create_session(app_name="panes-kafka-pipeline")
        spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "1000")  # every micro-batch of a latency run
        try:
            print(f"throughput: {args.records:,} events, {args.keys:,} keys", flush=True)
            found = throughput(spark, bootstrap, broker_pid, args.records, args.keys, args.repeat, work)
            for side in SIDES[1:]:
                print(
                    f"{side}: {found.rate(side):,.0f} events/s against native's {found.rate('native'):,.0f}: "
                    f"ratio panes/native {found.ratio(side):.2f}",
                    flush=True,
                )
            for trigger in args.triggers:
                native = latency(spark, bootstrap, trigger, "native", args, work)
                panes = latency(spark, bootstrap, trigger, "panes", args, work)
                pairs.append((native, panes))
                for x in (native, panes):
                    print(
                        f"latency, trigger {trigger}, {x.side}: p50 {x.p50:.0f} ms, p90 {x.p90:.0f}, p99 {x.p99:.0f} "
                        f"({len(x.samples)} samples, {x.wrong} wrong, {x.missing} missing; median micro-batch "
                        f"{x.batch_ms:.0f} ms of {x.batches}, median rows {x.batch_rows:.0f}; phases {x.phases})",
                        flush=True,
                    )
        finally:
            spark.stop()
            shutil.rmtree(work, ignore_errors=True)
    command = " ".join(["flock /tmp/panes-spark.lock .venv/bin/python", "bench/kafka_pipeline.py", *sys.argv[1:]])
    text = report(found, pairs, command, args)
    print(text)
    if args.json is not None:
        document = {
            "command": " ".join(["bench/kafka_pipeline.py", *sys.argv[1:]]),
            "date": datetime.date.today().isoformat(),
            "records": found.records,
            "keys": args.keys,
            "windows": found.windows,
            "identical": found.identical,
            "throughput": {
                side: {"events_per_s": found.rate(side), "runs": [asdict(r) for r in found.runs[side]]}
                for side in SIDES
            },
            "ratios": {side: found.ratio(side) for side in SIDES[1:]},
            "latency": [{**asdict(x), "p50": x.p50, "p90": x.p90, "p99": x.p99} for pair in pairs for x in pair],
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(document, indent=1) + "\n")
        write_section(HERE / "RESULTS.md", BEGIN, END, text, "Kafka pipeline (issue 40)")
    return 0 if found.identical else 1


if __name__ == "__main__":
    raise SystemExit(main())
