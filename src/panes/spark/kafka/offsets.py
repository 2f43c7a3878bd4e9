"""Where a Kafka source read by Spark starts and stops, resolved on the driver when the query is built.

A :class:`~panes.connectors.kafka.source.KafkaSource`'s initializers are resolved as on the local runner
(``KafkaOffsetsInitializer.resolve``, through librdkafka on the driver): one offset per partition found when the
job starts. A streaming query uses the starting offsets only on its first start: a query restarted from its
checkpoint reads on from the offsets Spark recorded there, whatever the source says. Committed offsets are read
from the group once, when the query first starts; panes never commits offsets to the group (neither does Spark).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from panes.connectors.kafka.cluster import consumer, unreachable
from panes.connectors.kafka.errors import failure
from panes.connectors.kafka.offsets import KafkaOffsetsInitializer, KafkaTopicPartition, MissingOffsetError
from panes.connectors.kafka.properties import timeout_seconds
from panes.connectors.kafka.source import KafkaSource

Offsets = dict[KafkaTopicPartition, int]


@dataclass(frozen=True)
class Positions:
    """The partitions a source reads, where each starts and (bounded) stops."""

    partitions: list[KafkaTopicPartition]
    start: Offsets
    stop: Offsets | None


def resolve(source: KafkaSource, initializers: list[KafkaOffsetsInitializer]) -> list[Offsets]:
    """The offsets of ``source``'s partitions for each initializer (``KafkaConnectorError`` when the cluster
    cannot be reached or an offset is missing where the reset strategy is ``NONE``)."""
    from confluent_kafka import KafkaException, TopicPartition

    partitions = source.splits()
    timeout = timeout_seconds(source.properties)
    client = consumer(source, **{"group.id": source.consumer_group(), "enable.auto.commit": False})

    def bounds(partition: KafkaTopicPartition) -> tuple[int, int]:
        try:
            low, high = client.get_watermark_offsets(
                TopicPartition(partition.topic, partition.partition), timeout=timeout, cached=False
            )
        except KafkaException as error:
            raise unreachable(source, error) from None
        return int(low), int(high)

    def by_time(asked: list[KafkaTopicPartition], stamp: int) -> dict[KafkaTopicPartition, int | None]:
        try:
            found = client.offsets_for_times([TopicPartition(p.topic, p.partition, stamp) for p in asked], timeout)
        except KafkaException as error:
            raise unreachable(source, error) from None
        return {KafkaTopicPartition(t.topic, t.partition): (t.offset if t.offset >= 0 else None) for t in found}

    def committed(asked: list[KafkaTopicPartition]) -> dict[KafkaTopicPartition, int | None]:
        try:
            found = client.committed([TopicPartition(p.topic, p.partition) for p in asked], timeout=timeout)
        except KafkaException as error:
            raise unreachable(source, error) from None
        return {KafkaTopicPartition(t.topic, t.partition): (t.offset if t.offset >= 0 else None) for t in found}

    try:
        return [initializer.resolve(partitions, bounds, by_time, committed) for initializer in initializers]
    except MissingOffsetError as error:
        raise failure(source.what(), str(error), source.properties) from None
    finally:
        client.close()


def positions(source: KafkaSource) -> Positions:
    """The partitions of ``source`` with their resolved starting and (bounded) stopping offsets."""
    wanted = [source.starting_offsets] + ([] if source.stopping_offsets is None else [source.stopping_offsets])
    found = resolve(source, wanted)
    return Positions(source.splits(), found[0], found[1] if len(found) > 1 else None)


def spark_json(offsets: Offsets) -> str:
    """Offsets as Spark's Kafka options write them: ``{"topic": {"0": 12, "1": 7}}``."""
    by_topic: dict[str, dict[str, int]] = {}
    for partition, offset in sorted(offsets.items()):
        by_topic.setdefault(partition.topic, {})[str(partition.partition)] = offset
    return json.dumps(by_topic, sort_keys=True)
