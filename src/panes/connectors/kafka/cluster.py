"""What a Kafka source asks the cluster when a job starts: which partitions it reads, and the offsets its
initializers need. Every call waits at most ``default.api.timeout.ms`` (30 s by default); a cluster that cannot be
reached, a topic or partition that does not exist and a property librdkafka refuses each raise a
``KafkaConnectorError`` that says so, naming the bootstrap servers (never a secret)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from panes.connectors.kafka.errors import KafkaConnectorError, failure
from panes.connectors.kafka.offsets import KafkaTopicPartition
from panes.connectors.kafka.properties import client_config, require_client, timeout_seconds

if TYPE_CHECKING:
    from panes.connectors.kafka.source import KafkaSource


def consumer(source: KafkaSource, **fixed: Any) -> Any:
    """A librdkafka consumer with ``source``'s properties and ``fixed`` on top (``KafkaConnectorError`` when
    librdkafka refuses them; ``ImportError`` without confluent-kafka)."""
    require_client()
    from confluent_kafka import Consumer, KafkaException

    config = client_config(source.properties, **{"bootstrap.servers": source.bootstrap_servers, **fixed})
    try:
        return Consumer(config)
    except (KafkaException, ValueError, TypeError) as error:
        raise failure(
            source.what(),
            "librdkafka (the Kafka client panes uses) refused the source's properties; fix or drop the property it "
            "names",
            source.properties,
            error,
        ) from None


def unreachable(source: KafkaSource, error: BaseException) -> KafkaConnectorError:
    """The error of a cluster that did not answer within the timeout."""
    return failure(
        source.what(),
        f"cannot reach the Kafka cluster at {source.bootstrap_servers} within "
        f"{timeout_seconds(source.properties):g} s; check set_bootstrap_servers and that the brokers run and "
        "listen there",
        source.properties,
        error,
    )


def lost(source: KafkaSource, error: BaseException) -> KafkaConnectorError:
    """The error of a cluster that stopped answering while the source read it."""
    return failure(
        source.what(),
        f"lost the Kafka cluster at {source.bootstrap_servers}: it did not answer for "
        f"{timeout_seconds(source.properties):g} s (default.api.timeout.ms) while the source read it; check that the "
        "brokers run",
        source.properties,
        error,
    )


def discover_partitions(source: KafkaSource) -> list[KafkaTopicPartition]:
    """The partitions ``source`` reads, sorted by topic and number: its topics' (each must exist), those of the
    topics its pattern matches (internal topics, named ``__...``, left out), or its partitions (each must exist)."""
    require_client()
    from confluent_kafka import KafkaException

    client = consumer(source, **{"group.id": source.consumer_group()})
    try:
        metadata = client.list_topics(timeout=timeout_seconds(source.properties))
    except KafkaException as error:
        raise unreachable(source, error) from None
    finally:
        client.close()
    counts = {name: len(topic.partitions) for name, topic in metadata.topics.items() if topic.error is None}
    if source.topic_pattern is not None:
        pattern = re.compile(source.topic_pattern)
        return sorted(
            KafkaTopicPartition(name, number)
            for name, count in counts.items()
            if not name.startswith("__") and pattern.fullmatch(name)
            for number in range(count)
        )
    if source.partitions is not None:
        for partition in source.partitions:
            if partition.topic not in counts:
                raise _missing_topic(source, partition.topic)
            if partition.partition >= counts[partition.topic]:
                raise failure(
                    source.what(),
                    f"topic {partition.topic!r} has {counts[partition.topic]} partitions, so partition "
                    f"{partition.partition} does not exist on the Kafka cluster at {source.bootstrap_servers}",
                    source.properties,
                )
        return sorted(source.partitions)
    found: list[KafkaTopicPartition] = []
    for topic in source.topics:
        if topic not in counts:
            raise _missing_topic(source, topic)
        found += [KafkaTopicPartition(topic, number) for number in range(counts[topic])]
    return sorted(set(found))


def _missing_topic(source: KafkaSource, topic: str) -> KafkaConnectorError:
    return failure(
        source.what(),
        f"topic {topic!r} does not exist on the Kafka cluster at {source.bootstrap_servers}; create it first (or "
        "read set_topic_pattern(...), which reads the topics that exist)",
        source.properties,
    )
