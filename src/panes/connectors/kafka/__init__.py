"""PyFlink's Kafka connector (``pyflink.datastream.connectors.kafka``) on panes: ``KafkaSource`` and ``KafkaSink``
with PyFlink's builders, offsets initializers and record (de)serialization schemas, so a PyFlink job that reads or
writes Kafka moves by changing its imports. The local runner reads and writes them through librdkafka (the
``confluent-kafka`` package, panes' ``kafka`` extra); the Spark runner through Spark's Kafka connector or panes'
Python data source, and Spark tasks (``panes.spark.kafka``).

- ``source``: ``KafkaSource``, ``KafkaSourceBuilder``; ``reader``: how the local runner reads it.
- ``offsets``: ``KafkaOffsetsInitializer``, ``KafkaOffsetResetStrategy``, ``KafkaTopicPartition``.
- ``deserialization``: ``KafkaRecordDeserializationSchema``, ``ConsumerRecord`` (a record with its metadata).
- ``sink``: ``KafkaSink``, ``KafkaSinkBuilder`` and the writer; ``serialization``: ``KafkaRecordSerializationSchema``,
  its builder, ``KafkaTopicSelector``.
- ``properties``: which properties reach the client, timeouts, secrets kept out of messages.

The legacy ``FlinkKafkaConsumer``/``FlinkKafkaProducer`` (and their ``Semantic``) are not here: use
``KafkaSource`` and ``KafkaSink``.
"""

from panes.connectors.base import DeliveryGuarantee
from panes.connectors.kafka.deserialization import (
    ConsumerRecord,
    KafkaRecordDeserializationSchema,
    SimpleStringValueKafkaRecordDeserializationSchema,
)
from panes.connectors.kafka.errors import KafkaConnectorError
from panes.connectors.kafka.offsets import KafkaOffsetResetStrategy, KafkaOffsetsInitializer, KafkaTopicPartition
from panes.connectors.kafka.serialization import (
    KafkaRecordSerializationSchema,
    KafkaRecordSerializationSchemaBuilder,
    KafkaTopicSelector,
)
from panes.connectors.kafka.sink import KafkaSink, KafkaSinkBuilder
from panes.connectors.kafka.source import KafkaSource, KafkaSourceBuilder

__all__ = [
    "ConsumerRecord",
    "DeliveryGuarantee",
    "KafkaConnectorError",
    "KafkaOffsetResetStrategy",
    "KafkaOffsetsInitializer",
    "KafkaRecordDeserializationSchema",
    "KafkaRecordSerializationSchema",
    "KafkaRecordSerializationSchemaBuilder",
    "KafkaSink",
    "KafkaSinkBuilder",
    "KafkaSource",
    "KafkaSourceBuilder",
    "KafkaTopicPartition",
    "KafkaTopicSelector",
    "SimpleStringValueKafkaRecordDeserializationSchema",
]
