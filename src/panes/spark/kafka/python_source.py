"""Spark data source ``panes_kafka``: a Kafka source read by Python on the executors through librdkafka
(``confluent-kafka``), for sessions without Spark's Kafka connector (only pip needed).

It gives Spark's Kafka columns (``records.KAFKA_DDL``), as Spark's connector does:

- streaming (:class:`KafkaStreamReader`): the stream's offsets are the Kafka offsets, ``{"topic": {"0": next
  offset, ...}}``, so Spark's checkpoint keeps them and a restarted query reads exactly the ranges of the micro-batch
  it had not committed, then on. The first offsets are the source's resolved starting offsets; each micro-batch reads
  up to each partition's end as the driver's planner saw it (at most its stopping offset; under
  ``trigger(availableNow=True)``, at most the end when the query started). Partitions are the ones found when the
  query was built (no discovery while it runs).
- bounded (:class:`KafkaBatchReader`): from the starting to the stopping offsets.

Each Kafka partition with records in a micro-batch is one input partition (one Spark task), which reads its
offset range through its own consumer (a group of its own that is never committed to) and yields Arrow batches of at
most :data:`BATCH` records. A range ends at its end offset, or where the consumer's position passed it (transaction
markers, aborted records skipped under ``read_committed``, compacted records); a range the cluster does not
serve within ``default.api.timeout.ms`` fails the task with a ``KafkaConnectorError``.

What travels in the options is the pickled :class:`ReadSpec` under :data:`SPEC_OPTION`, a name Spark's
``spark.redaction.regex`` covers, so plans and logs show it redacted (the properties may hold secrets).
"""

from __future__ import annotations

import base64
import pickle
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from panes.spark.kafka.records import KAFKA_DDL, KAFKA_SCHEMA

SPEC_OPTION = "panes.kafka.secret.spec"
"""The option holding the pickled :class:`ReadSpec` (``secret`` in its name: Spark redacts it)."""

BATCH = 2000
"""Records per Arrow batch a read task yields, and at most per poll of its consumer."""

POLL_S = 0.5
"""Seconds one poll of a read task's consumer waits."""

REPORTED = 5
"""How many of the errors librdkafka reported a read task's failure for a range not served names."""

Position = dict[str, dict[str, int]]
"""Offsets as the stream's offsets: topic -> partition (as a string) -> next offset."""


@dataclass(frozen=True)
class ReadSpec:
    """What the readers need: the cluster and its properties (``client``), the partitions with their starting and
    (bounded) stopping offsets, how long to wait for the cluster, and what errors call the source."""

    bootstrap: str
    properties: dict[str, str]
    start: Position
    stop: Position | None
    timeout: float
    what: str
    client_id: str


def encode_spec(spec: ReadSpec) -> str:
    return base64.b64encode(pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL)).decode()


def _decode_spec(text: str) -> ReadSpec:
    spec: ReadSpec = pickle.loads(base64.b64decode(text))
    return spec


class _Range(InputPartition):
    """Offsets ``[start, end)`` of one Kafka partition."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end


class PanesKafka(DataSource):
    """The data source (see the module docstring); option :data:`SPEC_OPTION`."""

    @classmethod
    def name(cls) -> str:
        return "panes_kafka"

    def schema(self) -> str:
        return KAFKA_DDL

    def reader(self, schema: Any) -> DataSourceReader:
        return KafkaBatchReader(_decode_spec(self.options[SPEC_OPTION]))

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return KafkaStreamReader(_decode_spec(self.options[SPEC_OPTION]))


def _ranges(start: Position, end: Position) -> list[InputPartition]:
    found: list[InputPartition] = []
    for topic in sorted(end):
        for partition, until in sorted(end[topic].items(), key=lambda item: int(item[0])):
            begin = start.get(topic, {}).get(partition, until)
            if until > begin:
                found.append(_Range(topic, int(partition), begin, until))
    return found


class KafkaBatchReader(DataSourceReader):
    """A bounded read: every partition from its starting to its stopping offset."""

    def __init__(self, spec: ReadSpec) -> None:
        self.spec = spec

    def partitions(self) -> list[InputPartition]:
        assert self.spec.stop is not None
        return _ranges(self.spec.start, self.spec.stop)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from read_range(self.spec, partition)  # type: ignore[arg-type]


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A streaming read (see the module docstring); the planner's consumer asks for the partitions' ends."""

    def __init__(self, spec: ReadSpec) -> None:
        self.spec = spec
        self._consumer: Any = None
        self._until: Position | None = spec.stop

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_consumer": None}

    def initialOffset(self) -> Position:
        return self.spec.start

    def prepareForTriggerAvailableNow(self) -> None:
        ends = self._ends()
        self._until = ends if self._until is None else _lowest(ends, self._until)

    def latestOffset(self, start: Position, limit: Any) -> Position:
        ends = self._ends()
        if self._until is not None:
            ends = _lowest(ends, self._until)
        # never behind the start (a partition's end seen by another broker may lag)
        return {
            topic: {p: max(o, start.get(topic, {}).get(p, o)) for p, o in partitions.items()}
            for topic, partitions in ends.items()
        }

    def _ends(self) -> Position:
        """Each partition's end now (its high watermark; the last stable offset under ``read_committed``)."""
        from confluent_kafka import KafkaException, TopicPartition

        if self._consumer is None:
            self._consumer = _consumer(self.spec, "planner")
        ends: Position = {}
        for topic, partitions in self.spec.start.items():
            for partition in partitions:
                try:
                    _, high = self._consumer.get_watermark_offsets(
                        TopicPartition(topic, int(partition)), timeout=self.spec.timeout, cached=False
                    )
                except KafkaException as error:
                    raise _unreachable(self.spec, error) from None
                ends.setdefault(topic, {})[partition] = int(high)
        return ends

    def partitions(self, start: Position, end: Position) -> list[InputPartition]:
        return _ranges(start, end)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from read_range(self.spec, partition)  # type: ignore[arg-type]

    def commit(self, end: Position) -> None:
        return None

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


def _lowest(a: Position, b: Position) -> Position:
    return {t: {p: min(o, b.get(t, {}).get(p, o)) for p, o in parts.items()} for t, parts in a.items()}


def _consumer(spec: ReadSpec, role: str, reported: list[str] | None = None) -> Any:
    """A consumer of the source's cluster; the errors librdkafka reports on its own (a broker down, a request
    timed out) are kept in ``reported`` when given (the last :data:`REPORTED` of them)."""
    from confluent_kafka import Consumer, KafkaException

    from panes.connectors.kafka.errors import failure
    from panes.connectors.kafka.properties import client_config

    fixed: dict[str, Any] = {
        "bootstrap.servers": spec.bootstrap,
        "group.id": f"panes-spark-{uuid.uuid4().hex[:12]}",
        "client.id": f"{spec.client_id}-{role}",
        "enable.auto.commit": False,
        "enable.partition.eof": False,
    }
    config = client_config(spec.properties, **fixed)
    if reported is not None:

        def keep(error: Any) -> None:
            reported.append(f"{error.name()}: {error.str()}")
            del reported[:-REPORTED]

        config["error_cb"] = keep
    config.setdefault("isolation.level", "read_uncommitted")
    config.pop("auto.offset.reset", None)
    try:
        return Consumer(config)
    except (KafkaException, ValueError, TypeError) as error:
        raise failure(
            spec.what,
            "librdkafka (the Kafka client panes uses) refused the source's properties; fix or drop the property it "
            "names",
            spec.properties,
            error,
        ) from None


def _unreachable(spec: ReadSpec, error: BaseException) -> Exception:
    from panes.connectors.kafka.errors import failure

    return failure(
        spec.what,
        f"cannot reach the Kafka cluster at {spec.bootstrap} within {spec.timeout:g} s; check set_bootstrap_servers "
        "and that the brokers run and listen there",
        spec.properties,
        error,
    )


def read_range(spec: ReadSpec, part: _Range) -> Iterator[pa.RecordBatch]:
    """The records of ``part`` as Arrow batches of ``KAFKA_SCHEMA`` (see the module docstring)."""
    from confluent_kafka import TopicPartition

    from panes.connectors.kafka.errors import failure

    reported: list[str] = []
    client = _consumer(spec, f"{part.topic}-{part.partition}", reported)
    try:
        client.assign([TopicPartition(part.topic, part.partition, part.start)])
        rows: dict[str, list[Any]] = {f.name: [] for f in KAFKA_SCHEMA}
        quiet_since = time.monotonic()
        done = False
        while not done:
            messages = client.consume(num_messages=BATCH, timeout=POLL_S)
            if not messages:
                found = client.position([TopicPartition(part.topic, part.partition)])[0]
                if found.offset >= part.end:
                    break
                if time.monotonic() - quiet_since > spec.timeout:
                    raise failure(
                        spec.what,
                        f"the Kafka cluster at {spec.bootstrap} did not serve offsets {part.start} to {part.end} of "
                        f"partition {part.partition} of topic {part.topic!r} within {spec.timeout:g} s "
                        f"(default.api.timeout.ms): {_where_it_stood(client, part, found.offset, reported)}",
                        spec.properties,
                    )
                continue
            quiet_since = time.monotonic()
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.retriable() and not error.fatal():
                        continue
                    raise failure(
                        spec.what,
                        f"the Kafka cluster at {spec.bootstrap} refused a read",
                        spec.properties,
                        RuntimeError(f"{error.name()}: {error.str()}"),
                    )
                offset = int(message.offset())
                if offset >= part.end:
                    done = True
                    break
                kind, stamp = message.timestamp()
                rows["key"].append(message.key())
                rows["value"].append(message.value())
                rows["topic"].append(part.topic)
                rows["partition"].append(part.partition)
                rows["offset"].append(offset)
                rows["timestamp"].append(None if kind == 0 or stamp < 0 else int(stamp) * 1000)
                rows["timestampType"].append(0 if kind == 1 else 1 if kind == 2 else -1)
                rows["headers"].append([{"key": k, "value": v} for k, v in (message.headers() or ())])
                if offset + 1 >= part.end:
                    done = True
                    break
            if len(rows["offset"]) >= BATCH or (done and rows["offset"]):
                yield _batch(rows)
                rows = {f.name: [] for f in KAFKA_SCHEMA}
        if rows["offset"]:
            yield _batch(rows)
    finally:
        client.close()


def _where_it_stood(client: Any, part: _Range, position: int, reported: list[str]) -> str:
    """What a read that waited in vain knew: the position it reached, the partition's offsets as the cluster now
    gives them, and the errors librdkafka reported meanwhile."""
    from confluent_kafka import TopicPartition

    reached = f"the read stood at offset {position}" if position >= 0 else "the read received no record"
    try:
        low, high = client.get_watermark_offsets(TopicPartition(part.topic, part.partition), timeout=5)
        offsets = f"the partition holds offsets {low} to {high} now"
    except Exception as error:  # the cluster is what failed: say so, the reading's failure follows
        offsets = f"its offsets could not be read either ({type(error).__name__}: {error})"
    errors = f"; the client reported {'; '.join(reported)}" if reported else "; the client reported no error"
    return f"{reached}, {offsets}{errors}"


def _batch(rows: dict[str, list[Any]]) -> pa.RecordBatch:
    stamps = pa.array(rows["timestamp"], pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    arrays = [stamps if f.name == "timestamp" else pa.array(rows[f.name], f.type) for f in KAFKA_SCHEMA]
    return pa.RecordBatch.from_arrays(arrays, schema=KAFKA_SCHEMA)
