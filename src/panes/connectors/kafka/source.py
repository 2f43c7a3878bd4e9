"""PyFlink's ``KafkaSource`` and its builder, read by the local runner through librdkafka (``confluent-kafka``).

``KafkaSource.builder()`` then ``set_bootstrap_servers``, one of ``set_topics(*topics)``, ``set_topic_pattern(regex)``
or ``set_partitions({KafkaTopicPartition, ...})``, a deserializer (``set_value_only_deserializer(schema)`` or
``set_deserializer(KafkaRecordDeserializationSchema...)``), and optionally ``set_group_id``,
``set_starting_offsets`` (default ``earliest()``), ``set_bounded(stopping offsets)``, ``set_client_id_prefix``,
``set_property(key, value)`` / ``set_properties(dict)`` (Kafka consumer properties), ``build()``.

``build()`` raises ``ValueError`` with Flink's conditions: no bootstrap servers; no topics, pattern or partitions;
no deserializer; committed offsets (to start or stop) without a group id; and ``set_topics`` with
``set_topic_pattern`` or ``set_partitions`` (raised when the second is set, as Flink does).

How it reads (``panes.connectors.kafka.reader``): the partitions are found when the job starts (each topic must
exist); each is one split, and a source instance reads its partitions together through one consumer, record by
record in the order the cluster gives them. Each element has the record's Kafka timestamp. With ``set_bounded``
the source ends once every partition reached its stopping offset (resolved when the job starts) and the job ends
with it; without, it does not end (give ``LocalRunner(max_records=...)``), and while no record arrives it lets
processing time move (timers fire). New partitions are not discovered while a job runs. The consumer reads with
Kafka's default ``isolation.level`` (``read_uncommitted``, as Flink's Java consumer; set ``read_committed`` to read
only committed transactions). Offsets are never committed to the group.

The Spark runner reads a ``KafkaSource`` too, through Spark's own Kafka connector or panes' Python data source
(``panes.spark.kafka``): as a streaming query whose offsets live in its checkpoint, or, bounded, as one batch read.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from panes.common.serialization import DeserializationSchema
from panes.connectors.kafka.deserialization import KafkaRecordDeserializationSchema, record_deserializer
from panes.connectors.kafka.offsets import KafkaOffsetsInitializer, KafkaTopicPartition
from panes.connectors.kafka.properties import check_property, masked, timeout_seconds
from panes.datastream.sources import Source, SplitsReader
from panes.types import RecordType

__all__ = ["KafkaSource", "KafkaSourceBuilder"]


class KafkaSource(Source):
    """A Kafka source (see the module docstring); build it with :meth:`builder`."""

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        topics: tuple[str, ...] = (),
        topic_pattern: str | None = None,
        partitions: frozenset[KafkaTopicPartition] | None = None,
        deserializer: KafkaRecordDeserializationSchema,
        starting_offsets: KafkaOffsetsInitializer,
        stopping_offsets: KafkaOffsetsInitializer | None = None,
        group_id: str | None = None,
        client_id_prefix: str | None = None,
        properties: dict[str, str] | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topics = topics
        self.topic_pattern = topic_pattern
        self.partitions = partitions
        self.deserializer = deserializer
        self.starting_offsets = starting_offsets
        self.stopping_offsets = stopping_offsets
        self.group_id = group_id
        self.client_id_prefix = client_id_prefix
        self.properties = dict(properties or {})
        timeout_seconds(self.properties)  # checks the timeout property
        self._found: list[KafkaTopicPartition] | None = None
        self._readers = 0
        self._own_group = f"panes-{uuid.uuid4().hex[:12]}"

    @staticmethod
    def builder() -> KafkaSourceBuilder:
        return KafkaSourceBuilder()

    # -- what the runner asks ------------------------------------------

    def discovers_splits(self) -> bool:
        return True

    def check_readable(self) -> None:
        """Finds the partitions (``KafkaConnectorError`` when the cluster cannot be reached or a topic or partition
        does not exist)."""
        from panes.connectors.kafka.cluster import discover_partitions

        self._found = discover_partitions(self)

    def splits(self) -> list[KafkaTopicPartition]:
        """The partitions read, one split each (found by :meth:`check_readable`, which this calls when needed)."""
        if self._found is None:
            self.check_readable()
        assert self._found is not None
        return self._found

    def num_splits(self) -> int:
        return len(self.splits())

    def read_split(self, index: int) -> Iterator[Any]:
        reader = self.read_splits([index])
        try:
            yield from reader
        finally:
            reader.close()

    def read_splits(self, indices: Sequence[int], position: Any = None) -> SplitsReader:
        from panes.connectors.kafka.reader import KafkaSplitsReader

        self._readers += 1
        partitions = [self.splits()[index] for index in indices]
        return KafkaSplitsReader(self, partitions, position, self._readers)

    def is_bounded(self) -> bool:
        return self.stopping_offsets is not None

    def record_type(self) -> RecordType | None:
        """The elements' type when the deserializer declares one (JSON or CSV rows, strings)."""
        return self.deserializer.get_produced_type()

    # -- naming ------------------------------------------

    def consumer_group(self) -> str:
        """The group id (set, else one of this source's own, never committed to)."""
        return self._own_group if self.group_id is None else self.group_id

    def client_id(self, reader: int) -> str:
        """The client id of reader ``reader`` (``<prefix>-<n>``; the prefix defaults to the group id or
        ``KafkaSource``)."""
        prefix = self.client_id_prefix or self.group_id or "KafkaSource"
        return f"{prefix}-{reader}"

    def subscription(self) -> str:
        if self.topic_pattern is not None:
            return f"topic pattern {self.topic_pattern!r}"
        if self.partitions is not None:
            return "partitions " + ", ".join(str(p) for p in sorted(self.partitions))
        return "topics " + ", ".join(repr(t) for t in self.topics)

    def what(self) -> str:
        """How errors name the source: ``KafkaSource(<servers>, <subscription>)``."""
        return f"KafkaSource({self.bootstrap_servers}, {self.subscription()})"

    def __repr__(self) -> str:
        bounded = f"bounded at {self.stopping_offsets!r}" if self.stopping_offsets is not None else "unbounded"
        shown = f", properties {masked(self.properties)}" if self.properties else ""
        return (
            f"KafkaSource({self.bootstrap_servers}, {self.subscription()}, from {self.starting_offsets!r}, {bounded}, "
            f"{self.deserializer!r}{shown})"
        )


class KafkaSourceBuilder:
    """Builds a :class:`KafkaSource` (see the module docstring)."""

    def __init__(self) -> None:
        self._bootstrap_servers: str | None = None
        self._topics: tuple[str, ...] = ()
        self._topic_pattern: str | None = None
        self._partitions: frozenset[KafkaTopicPartition] | None = None
        self._deserializer: KafkaRecordDeserializationSchema | None = None
        self._starting = KafkaOffsetsInitializer.earliest()
        self._stopping: KafkaOffsetsInitializer | None = None
        self._group_id: str | None = None
        self._client_id_prefix: str | None = None
        self._properties: dict[str, str] = {}

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSourceBuilder:
        """The cluster: ``host:port[,host:port...]``."""
        self._bootstrap_servers = bootstrap_servers
        return self

    def set_group_id(self, group_id: str) -> KafkaSourceBuilder:
        """The consumer group (needed for committed offsets; panes never commits to it)."""
        self._group_id = group_id
        return self

    def _subscribing(self, mode: str) -> None:
        current = (
            "topics"
            if self._topics
            else "a topic pattern"
            if self._topic_pattern is not None
            else "partitions"
            if self._partitions is not None
            else None
        )
        if current is not None and current != mode:
            raise ValueError(
                f"cannot read {mode}: the source reads {current} already; give one of set_topics, "
                "set_topic_pattern or set_partitions"
            )

    def set_topics(self, *topics: str) -> KafkaSourceBuilder:
        """Read these topics (each must exist when the job starts)."""
        self._subscribing("topics")
        flat = [t for topic in topics for t in ([topic] if isinstance(topic, str) else list(topic))]
        if not flat or not all(isinstance(t, str) and t for t in flat):
            raise ValueError(f"set_topics takes one or more topic names, not {topics!r}")
        self._topics = tuple(dict.fromkeys(flat))
        return self

    def set_topic_pattern(self, topic_pattern: str) -> KafkaSourceBuilder:
        """Read the topics whose whole name matches the regular expression (found when the job starts)."""
        self._subscribing("a topic pattern")
        try:
            re.compile(topic_pattern)
        except (re.error, TypeError) as error:
            raise ValueError(f"the topic pattern {topic_pattern!r} is not a regular expression: {error}") from None
        self._topic_pattern = topic_pattern
        return self

    def set_partitions(self, partitions: set[KafkaTopicPartition]) -> KafkaSourceBuilder:
        """Read these partitions (each must exist when the job starts)."""
        self._subscribing("partitions")
        given = frozenset(partitions)
        if not given or not all(isinstance(p, KafkaTopicPartition) for p in given):
            raise ValueError(f"set_partitions takes a non-empty set of KafkaTopicPartition, not {partitions!r}")
        self._partitions = given
        return self

    def set_starting_offsets(self, starting_offsets_initializer: KafkaOffsetsInitializer) -> KafkaSourceBuilder:
        """Where each partition is read from (default ``KafkaOffsetsInitializer.earliest()``)."""
        self._starting = _initializer(starting_offsets_initializer, "starting")
        return self

    def set_bounded(self, stopping_offsets_initializer: KafkaOffsetsInitializer) -> KafkaSourceBuilder:
        """End once each partition reached these offsets (resolved when the job starts): a bounded source."""
        self._stopping = _initializer(stopping_offsets_initializer, "stopping")
        return self

    def set_unbounded(self, stopping_offsets_initializer: KafkaOffsetsInitializer) -> KafkaSourceBuilder:
        """Flink's unbounded source that stops at offsets: panes reads it as :meth:`set_bounded` (its runners
        treat a source that ends as bounded)."""
        return self.set_bounded(stopping_offsets_initializer)

    def set_value_only_deserializer(self, deserialization_schema: DeserializationSchema) -> KafkaSourceBuilder:
        """Each record's value through ``deserialization_schema`` (key, headers and the rest are left out)."""
        self._deserializer = KafkaRecordDeserializationSchema.value_only(deserialization_schema)
        return self

    def set_deserializer(
        self, kafka_record_deserialization_schema: KafkaRecordDeserializationSchema
    ) -> KafkaSourceBuilder:
        """The whole record through ``kafka_record_deserialization_schema``."""
        self._deserializer = record_deserializer(kafka_record_deserialization_schema)
        return self

    def set_client_id_prefix(self, prefix: str) -> KafkaSourceBuilder:
        self._client_id_prefix = prefix
        return self

    def set_property(self, key: str, value: str) -> KafkaSourceBuilder:
        """A Kafka consumer property (``group.id`` and ``bootstrap.servers`` set those; see
        ``panes.connectors.kafka.properties`` for which are handed to the client)."""
        name, text = check_property(key, value)
        if name == "group.id":
            self._group_id = text
        elif name == "bootstrap.servers":
            self._bootstrap_servers = text
        elif name == "client.id.prefix":
            self._client_id_prefix = text
        else:
            self._properties[name] = text
        return self

    def set_properties(self, props: dict[str, str]) -> KafkaSourceBuilder:
        for key, value in dict(props).items():
            self.set_property(key, value)
        return self

    def build(self) -> KafkaSource:
        """The source; ``ValueError`` (see the module docstring) when it cannot read."""
        if not self._bootstrap_servers or not isinstance(self._bootstrap_servers, str):
            raise ValueError(
                "property bootstrap.servers is required but not provided: give set_bootstrap_servers('host:port')"
            )
        if not self._topics and self._topic_pattern is None and self._partitions is None:
            raise ValueError("no topics to read: give set_topics(...), set_topic_pattern(...) or set_partitions({...})")
        if self._deserializer is None:
            raise ValueError(
                "no deserializer: give set_value_only_deserializer(SimpleStringSchema()) or "
                "set_deserializer(KafkaRecordDeserializationSchema...)"
            )
        for which, initializer in (("starting", self._starting), ("stopping", self._stopping)):
            if initializer is not None and initializer.kind == "committed" and self._group_id is None:
                raise ValueError(
                    f"property group.id is required when using committed offsets as the {which} offsets: give "
                    "set_group_id(...)"
                )
        auto_commit = self._properties.get("enable.auto.commit", "false").lower() == "true"
        if auto_commit and self._group_id is None:
            raise ValueError("property group.id is required when offset commit is enabled: give set_group_id(...)")
        return KafkaSource(
            self._bootstrap_servers,
            topics=self._topics,
            topic_pattern=self._topic_pattern,
            partitions=self._partitions,
            deserializer=self._deserializer,
            starting_offsets=self._starting,
            stopping_offsets=self._stopping,
            group_id=self._group_id,
            client_id_prefix=self._client_id_prefix,
            properties=self._properties,
        )


def _initializer(initializer: Any, which: str) -> KafkaOffsetsInitializer:
    if not isinstance(initializer, KafkaOffsetsInitializer):
        raise ValueError(
            f"the {which} offsets are a KafkaOffsetsInitializer (earliest(), latest(), timestamp(ms), "
            f"offsets({{...}}), committed_offsets()), not {initializer!r}"
        )
    return initializer
