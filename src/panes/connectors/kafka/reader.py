"""How a source instance reads its partitions: one librdkafka consumer assigned to all of them, from offsets resolved
when it first reads (or restored from a snapshot), element by element.

Each record goes through the source's deserializer; its elements are emitted one by one with the record's
timestamp, a record the deserializer raised on as one :class:`~panes.connectors.kafka.deserialization.KafkaBadRecord`.
Each partition is a split (:meth:`KafkaSplitsReader.split_ids`, :meth:`KafkaSplitsReader.current_split`), so a
watermark strategy given to ``env.from_source`` runs a generator per partition. The position
(:meth:`KafkaSplitsReader.position`) is the next offset of every partition, the stopping offsets of
a bounded source and how many elements of a record were emitted, so a job restored from a snapshot reads on from
the element after the last one it had emitted.

Bounded: a partition is done once its next offset (the consumer's position, which steps over transaction markers)
reaches its stopping offset; the reader ends when all are. Unbounded: while no record arrives, the reader yields
``ProcessingTimeAdvance(now)`` every :data:`IDLE_POLL` seconds, so processing-time timers fire on an idle topic.
Errors the client reports that it does not retry (authorization, ...) end the job at once; errors it retries (the
cluster not answering) end it once they lasted ``default.api.timeout.ms`` without a record and the cluster does not
answer a request for its topics either.
"""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING, Any

from panes.connectors.kafka.cluster import consumer, lost, unreachable
from panes.connectors.kafka.deserialization import ConsumerRecord, KafkaBadRecord
from panes.connectors.kafka.errors import failure
from panes.connectors.kafka.offsets import KafkaTopicPartition, MissingOffsetError
from panes.connectors.kafka.properties import timeout_seconds
from panes.datastream.sources import ProcessingTimeAdvance, SplitsReader
from panes.elements import StreamRecord

if TYPE_CHECKING:
    from panes.connectors.kafka.source import KafkaSource

IDLE_POLL = 0.2
"""Seconds one poll of the cluster waits for records."""

BATCH = 500
"""Records fetched from the client at most per poll."""

_TIMESTAMP_TYPES = {0: "NoTimestampType", 1: "CreateTime", 2: "LogAppendTime"}


def _record(message: Any) -> ConsumerRecord:
    """A fetched message (one without an error) as the record a deserializer reads."""
    kind, stamp = message.timestamp()
    return ConsumerRecord(
        message.topic(),
        message.partition(),
        int(message.offset()),
        None if kind == 0 or stamp < 0 else int(stamp),
        _TIMESTAMP_TYPES.get(kind, "NoTimestampType"),
        message.key(),
        message.value(),
        tuple(message.headers() or ()),
    )


class KafkaSplitsReader(SplitsReader):
    """Reads ``partitions`` of ``source`` together (see the module docstring)."""

    def __init__(self, source: KafkaSource, partitions: list[KafkaTopicPartition], position: Any, number: int) -> None:
        self._source = source
        self._partitions = partitions
        self._restored = position
        self._number = number
        self._timeout = timeout_seconds(source.properties)
        self._consumer: Any = None
        self._next: dict[KafkaTopicPartition, int] = {}
        self._stop: dict[KafkaTopicPartition, int] | None = None
        self._done: set[KafkaTopicPartition] = set()
        self._fetched: deque[Any] = deque()
        self._read: dict[tuple[str, int, int], list[Any] | Exception] = {}
        """What the deserializer made of each fetched record (by topic, partition and offset): its elements or its
        failure, read for all the fetched records at once (``deserialize_batch``: JSON rows in one parse)."""
        self._pending: deque[Any] = deque()
        self._current: tuple[KafkaTopicPartition, int] | None = None
        self._last: KafkaTopicPartition | None = None
        self._emitted = 0
        self._skip: tuple[KafkaTopicPartition, int, int] | None = None
        self._trouble_since: float | None = None
        self._trouble = ""
        self._closed = False

    # -- opening ------------------------------------------

    def _open(self) -> None:
        source = self._source
        fixed: dict[str, Any] = {
            "group.id": source.consumer_group(),
            "client.id": source.client_id(self._number),
            "enable.partition.eof": False,
            "auto.offset.reset": source.starting_offsets.auto_offset_reset(),
        }
        if "enable.auto.commit" not in source.properties:
            fixed["enable.auto.commit"] = False
        if "isolation.level" not in source.properties:
            fixed["isolation.level"] = "read_uncommitted"
        fixed["error_cb"] = self._on_client_error
        self._consumer = consumer(source, **fixed)
        restored = self._restored
        try:
            if restored is None:
                self._next = source.starting_offsets.resolve(
                    self._partitions, self._bounds, self._by_time, self._committed
                )
                if source.stopping_offsets is not None:
                    self._stop = source.stopping_offsets.resolve(
                        self._partitions, self._bounds, self._by_time, self._committed
                    )
            else:
                self._next = {KafkaTopicPartition(*key): offset for key, offset in restored["next"].items()}
                stop = restored["stop"]
                self._stop = None if stop is None else {KafkaTopicPartition(*k): o for k, o in stop.items()}
                partial = restored["partial"]
                if partial is not None:
                    self._skip = (KafkaTopicPartition(partial[0], partial[1]), partial[2], partial[3])
        except MissingOffsetError as error:
            raise failure(source.what(), str(error), source.properties) from None
        from confluent_kafka import TopicPartition

        if self._stop is not None:
            self._done = {p for p in self._partitions if self._next[p] >= self._stop[p]}
        assigned = [
            TopicPartition(p.topic, p.partition, self._next[p]) for p in self._partitions if p not in self._done
        ]
        if assigned:
            self._consumer.assign(assigned)

    def _bounds(self, partition: KafkaTopicPartition) -> tuple[int, int]:
        from confluent_kafka import KafkaException, TopicPartition

        try:
            low, high = self._consumer.get_watermark_offsets(
                TopicPartition(partition.topic, partition.partition), timeout=self._timeout, cached=False
            )
        except KafkaException as error:
            raise unreachable(self._source, error) from None
        return int(low), int(high)

    def _by_time(self, partitions: list[KafkaTopicPartition], timestamp: int) -> dict[KafkaTopicPartition, int | None]:
        from confluent_kafka import KafkaException, TopicPartition

        asked = [TopicPartition(p.topic, p.partition, timestamp) for p in partitions]
        try:
            found = self._consumer.offsets_for_times(asked, timeout=self._timeout)
        except KafkaException as error:
            raise unreachable(self._source, error) from None
        return {KafkaTopicPartition(t.topic, t.partition): (t.offset if t.offset >= 0 else None) for t in found}

    def _committed(self, partitions: list[KafkaTopicPartition]) -> dict[KafkaTopicPartition, int | None]:
        from confluent_kafka import KafkaException, TopicPartition

        try:
            found = self._consumer.committed(
                [TopicPartition(p.topic, p.partition) for p in partitions], timeout=self._timeout
            )
        except KafkaException as error:
            raise unreachable(self._source, error) from None
        return {KafkaTopicPartition(t.topic, t.partition): (t.offset if t.offset >= 0 else None) for t in found}

    # -- reading ------------------------------------------

    def __next__(self) -> Any:
        if self._closed:
            raise StopIteration
        if self._consumer is None:
            self._open()
        while True:
            if self._pending:
                element = self._pending.popleft()
                self._emitted += 1
                assert self._current is not None
                self._last = self._current[0]
                if not self._pending:
                    self._finished(*self._current)
                return element
            if self._stop is not None and len(self._done) == len(self._partitions):
                raise StopIteration
            if not self._fetched:
                idle = self._fetch()
                if idle is not None:
                    return idle
                continue
            self._take(self._fetched.popleft())

    def _fetch(self) -> Any:
        """Fetch records; when none came, what to yield meanwhile (``None``: poll again)."""
        messages = self._consumer.consume(num_messages=BATCH, timeout=IDLE_POLL)
        if messages:
            self._fetched.extend(messages)
            records = [_record(message) for message in messages if message.error() is None]
            read = self._source.deserializer.deserialize_batch(records)
            self._read = {(r.topic, r.partition, r.offset): found for r, found in zip(records, read, strict=True)}
            return None
        if self._stop is not None:
            self._check_positions()
            return None
        self._check_trouble()
        return ProcessingTimeAdvance(int(time.time() * 1000))

    def _check_positions(self) -> None:
        """Partitions whose position reached the stopping offset (past transaction markers, compacted records) are
        done."""
        from confluent_kafka import TopicPartition

        assert self._stop is not None
        open_ = [p for p in self._partitions if p not in self._done]
        for found in self._consumer.position([TopicPartition(p.topic, p.partition) for p in open_]):
            partition = KafkaTopicPartition(found.topic, found.partition)
            if found.offset >= 0 and found.offset >= self._stop[partition]:
                self._next[partition] = max(self._next[partition], found.offset)
                self._mark_done(partition)
        self._check_trouble()

    def _on_client_error(self, error: Any) -> None:
        """librdkafka's report of a client-wide error (the cluster not answering): the reader is in trouble from
        then on, until a record arrives or the cluster answers again (:meth:`_check_trouble`)."""
        if self._trouble_since is None:
            self._trouble_since = time.monotonic()
        self._trouble = f"{error.name()}: {error.str()}"

    def _check_trouble(self) -> None:
        """In trouble for longer than the timeout: ask the cluster for its topics; ``KafkaConnectorError`` when it
        does not answer, else the trouble is over."""
        if self._trouble_since is None or time.monotonic() - self._trouble_since <= self._timeout:
            return
        from confluent_kafka import KafkaException

        try:
            self._consumer.list_topics(timeout=min(self._timeout, 5.0))
        except KafkaException:
            raise lost(self._source, RuntimeError(self._trouble)) from None
        self._trouble_since = None

    def _take(self, message: Any) -> None:
        """Deserialize one fetched record into the pending elements (or handle the client's error it carries)."""
        error = message.error()
        if error is not None:
            self._client_error(error)
            return
        self._trouble_since = None
        partition = KafkaTopicPartition(message.topic(), message.partition())
        offset = int(message.offset())
        if self._stop is not None and (partition in self._done or offset >= self._stop[partition]):
            self._mark_done(partition)
            return
        record = _record(message)
        read = self._read.pop((partition.topic, partition.partition, offset), None)
        if read is None:
            (read,) = self._source.deserializer.deserialize_batch([record])
        elements: list[Any]
        if isinstance(read, Exception):
            elements = [KafkaBadRecord(record, f"{type(read).__name__}: {read}", type(read).__name__)]
        else:
            elements = [e if record.timestamp is None else StreamRecord(e, record.timestamp) for e in read]
        already = 0
        if self._skip is not None and self._skip[:2] == (partition, offset):
            already = self._skip[2]  # emitted before the snapshot this reader was restored from
            self._skip = None
        elements = elements[already:]
        self._current = (partition, offset)
        self._emitted = already
        if not elements:
            self._finished(partition, offset)
            return
        self._pending.extend(elements)

    def _finished(self, partition: KafkaTopicPartition, offset: int) -> None:
        self._current = None
        self._emitted = 0
        self._next[partition] = offset + 1
        if self._stop is not None and offset + 1 >= self._stop[partition]:
            self._mark_done(partition)

    def _mark_done(self, partition: KafkaTopicPartition) -> None:
        if partition not in self._done:
            from confluent_kafka import TopicPartition

            self._done.add(partition)
            self._consumer.pause([TopicPartition(partition.topic, partition.partition)])

    def _client_error(self, error: Any) -> None:
        from confluent_kafka import KafkaError

        if error.code() == KafkaError._PARTITION_EOF:
            return
        if error.retriable() and not error.fatal():
            self._on_client_error(error)
            return
        raise failure(
            self._source.what(),
            f"the Kafka cluster at {self._source.bootstrap_servers} refused a read",
            self._source.properties,
            RuntimeError(f"{error.name()}: {error.str()}"),
        )

    # -- splits ------------------------------------------

    def split_ids(self) -> list[Any]:
        """The partitions read (``KafkaTopicPartition``), each a split with its own watermark generator."""
        return list(self._partitions)

    def current_split(self) -> KafkaTopicPartition | None:
        """The partition of the element returned last."""
        return self._last

    def finished_splits(self) -> set[KafkaTopicPartition]:
        """The partitions of a bounded source that reached their stopping offsets."""
        return self._done

    # -- position and closing ------------------------------------------

    def position(self) -> Any:
        if self._consumer is None:
            return self._restored
        partial = None
        if self._current is not None and self._emitted:
            partition, offset = self._current
            partial = (partition.topic, partition.partition, offset, self._emitted)
        stop = None if self._stop is None else {(p.topic, p.partition): o for p, o in self._stop.items()}
        return {
            "next": {(p.topic, p.partition): o for p, o in self._next.items()},
            "stop": stop,
            "partial": partial,
        }

    def close(self) -> None:
        if self._consumer is not None and not self._closed:
            self._consumer.close()
        self._closed = True
