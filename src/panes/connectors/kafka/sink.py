"""PyFlink's ``KafkaSink`` and its builder, written by the local runner through librdkafka (``confluent-kafka``).

``KafkaSink.builder()`` then ``set_bootstrap_servers``, ``set_record_serializer(KafkaRecordSerializationSchema
.builder()...build())``, and optionally ``set_delivery_guarantee`` (default ``DeliveryGuarantee.NONE``),
``set_transactional_id_prefix`` and ``set_property(key, value)`` (Kafka producer properties), ``build()``.
``build()`` raises ``ValueError`` with Flink's conditions: no bootstrap servers, no record serializer,
``EXACTLY_ONCE`` without a transactional id prefix, a prefix longer than 6400 bytes.

Each parallel instance of the sink has one producer, opened when the job starts (a fixed topic must exist then:
the job fails at once naming it, as it does when the cluster cannot be reached within ``default.api.timeout.ms``).
What each guarantee does on the local runner:

- ``NONE``: records are handed to the producer as they come and flushed when the job ends.
- ``AT_LEAST_ONCE``: also flushed (every record acknowledged) whenever the job is snapshotted
  (``LocalJob.snapshot``).
- ``EXACTLY_ONCE``: the records go in a Kafka transaction (transactional id ``<prefix>-<instance>``), committed
  when the job is snapshotted and when it ends; a failing job aborts it, and a job restored from a snapshot fences
  the transaction its failed run left open (same transactional id), so a ``read_committed`` consumer sees each
  record once. The transaction times out after ``transaction.timeout.ms`` (default here 15 minutes, the broker's
  default maximum; Flink's builder asks for an hour, which brokers refuse unless raised): snapshot the job (or let it
  end) within that time.

A record that cannot be delivered fails the job (at the next record, snapshot or end) naming the topic and
Kafka's error; ``delivery.timeout.ms`` (default 120 s, the Java producer's) bounds how long the producer tries.
An element the serializer cannot write is a bad record of the sink. On the Spark runner the sink is written by
Spark tasks, exactly once through a transaction per writer and micro-batch (``panes.spark.kafka.sink``).
"""

from __future__ import annotations

from typing import Any

from panes.connectors.base import DeliveryGuarantee
from panes.connectors.kafka.errors import failure
from panes.connectors.kafka.properties import check_property, client_config, masked, require_client, timeout_seconds
from panes.connectors.kafka.serialization import KafkaRecordSerializationSchema, ProducerRecord
from panes.datastream.sinks import SinkWriter, WriterSink
from panes.elements import StreamRecord
from panes.errors import BadRecordError

__all__ = ["KafkaSink", "KafkaSinkBuilder"]

MAXIMUM_PREFIX_BYTES = 6400
"""The longest transactional id prefix (UTF-8 bytes), as Flink's."""

DEFAULT_TRANSACTION_TIMEOUT_MS = 900_000
DEFAULT_DELIVERY_TIMEOUT_MS = 120_000


class KafkaSink(WriterSink):
    """A Kafka sink (see the module docstring); build it with :meth:`builder`."""

    def __init__(
        self,
        bootstrap_servers: str,
        record_serializer: KafkaRecordSerializationSchema,
        delivery_guarantee: DeliveryGuarantee = DeliveryGuarantee.NONE,
        transactional_id_prefix: str | None = None,
        properties: dict[str, str] | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.record_serializer = record_serializer
        self.delivery_guarantee = delivery_guarantee
        self.transactional_id_prefix = transactional_id_prefix
        self.properties = dict(properties or {})
        timeout_seconds(self.properties)  # checks the timeout property

    @staticmethod
    def builder() -> KafkaSinkBuilder:
        return KafkaSinkBuilder()

    def create_writer(self, subtask: int, parallelism: int) -> SinkWriter:
        return KafkaSinkWriter(self, subtask)

    def what(self) -> str:
        """How errors name the sink: ``KafkaSink(<servers>, <topic>)``."""
        topic = self.record_serializer.topic
        return f"KafkaSink({self.bootstrap_servers}, {'topic ' + repr(topic) if topic else 'a topic selector'})"

    def __repr__(self) -> str:
        shown = f", properties {masked(self.properties)}" if self.properties else ""
        return f"{self.what()[:-1]}, {self.delivery_guarantee.name}{shown})"


class KafkaSinkWriter(SinkWriter):
    """The producer of one parallel instance of a :class:`KafkaSink` (see the module docstring)."""

    def __init__(self, sink: KafkaSink, subtask: int) -> None:
        require_client()
        from confluent_kafka import KafkaException, Producer

        self._sink = sink
        self._timeout = timeout_seconds(sink.properties)
        self._exactly_once = sink.delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE
        fixed: dict[str, Any] = {"bootstrap.servers": sink.bootstrap_servers}
        defaults: dict[str, Any] = {
            "client.id": f"{sink.transactional_id_prefix or 'KafkaSink'}-{subtask}",
            "delivery.timeout.ms": DEFAULT_DELIVERY_TIMEOUT_MS,
            # Kafka's Java producer's partitioner, which Flink's sink uses: a keyed record goes to the partition
            # of its key's murmur2 hash (as a Java producer of the same key would send it), an unkeyed one to any
            # (librdkafka's own default hashes keys with CRC32, to other partitions)
            "partitioner": "murmur2_random",
        }
        if self._exactly_once:
            fixed["transactional.id"] = f"{sink.transactional_id_prefix}-{subtask}"
            defaults["transaction.timeout.ms"] = DEFAULT_TRANSACTION_TIMEOUT_MS
        elif sink.delivery_guarantee is DeliveryGuarantee.AT_LEAST_ONCE:
            defaults["acks"] = "all"
        config = client_config(sink.properties, **fixed)
        for name, value in defaults.items():
            config.setdefault(name, value)
        try:
            self._producer = Producer(config)
        except (KafkaException, ValueError, TypeError) as error:
            raise self._failure(
                "librdkafka (the Kafka client panes uses) refused the sink's properties; fix or drop the property it "
                "names",
                error,
            ) from None
        self._failed: str | None = None
        self._in_transaction = False
        self._check_topic()
        if self._exactly_once:
            try:
                self._producer.init_transactions(self._timeout)
            except KafkaException as error:
                raise self._failure("could not start its transactions", error) from None

    def _failure(self, message: str, error: BaseException | None = None) -> Exception:
        return failure(self._sink.what(), message, self._sink.properties, error)

    def _check_topic(self) -> None:
        """A fixed topic must exist (the cluster must answer within the timeout)."""
        from confluent_kafka import KafkaException

        topic = self._sink.record_serializer.topic
        try:
            metadata = self._producer.list_topics(topic, timeout=self._timeout)
        except KafkaException as error:
            raise self._failure(
                f"cannot reach the Kafka cluster at {self._sink.bootstrap_servers} within {self._timeout:g} s; check "
                "set_bootstrap_servers and that the brokers run and listen there",
                error,
            ) from None
        if topic is not None:
            found = metadata.topics.get(topic)
            if found is None or found.error is not None:
                raise self._failure(
                    f"topic {topic!r} does not exist on the Kafka cluster at {self._sink.bootstrap_servers}; create it "
                    "first"
                )

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None and self._failed is None:
            self._failed = f"could not deliver a record to topic {message.topic()!r} ({error.name()}: {error.str()})"

    def _raise_failed(self) -> None:
        if self._failed is not None:
            failed, self._failed = self._failed, None
            raise self._failure(failed)

    def write(self, record: StreamRecord[Any]) -> None:
        try:
            produced = self._sink.record_serializer.serialize(record.value, record.timestamp)
        except Exception as error:
            raise BadRecordError(
                f"{self._sink.what()} cannot write {record.value!r}: {type(error).__name__}: {error}"
            ) from error
        self.produce(produced)

    def produce(self, produced: ProducerRecord) -> None:
        """Hand one serialized record to the producer (in the open transaction, begun here when needed)."""
        self._raise_failed()
        if self._exactly_once and not self._in_transaction:
            self._transaction("begin_transaction")
            self._in_transaction = True
        options: dict[str, Any] = {"key": produced.key, "on_delivery": self._delivered}
        if produced.timestamp is not None:
            options["timestamp"] = produced.timestamp
        while True:
            try:
                self._producer.produce(produced.topic, produced.value, **options)
                break
            except BufferError:
                self._producer.poll(0.1)  # the producer's queue is full: let it deliver
        self._producer.poll(0)

    def _transaction(self, step: str, *args: Any) -> None:
        from confluent_kafka import KafkaException

        try:
            getattr(self._producer, step)(*args)
        except KafkaException as error:
            raise self._failure(f"the transaction failed ({step})", error) from None

    def flush(self, end_of_input: bool) -> None:
        if self._sink.delivery_guarantee is DeliveryGuarantee.NONE and not end_of_input:
            return
        left = self._producer.flush(self._timeout)
        self._raise_failed()
        if left:
            raise self._failure(f"{left} records were not delivered within {self._timeout:g} s")
        if self._in_transaction:
            self._transaction("commit_transaction", self._timeout)
            self._in_transaction = False

    def send_offsets(self, offsets: list[Any], group_metadata: Any) -> None:
        """Commit ``offsets`` (confluent-kafka ``TopicPartition``s) to the group of ``group_metadata`` with the open
        transaction (``EXACTLY_ONCE``; begun here when needed)."""
        if not self._in_transaction:
            self._transaction("begin_transaction")
            self._in_transaction = True
        self._transaction("send_offsets_to_transaction", offsets, group_metadata, self._timeout)

    def abort(self) -> None:
        """Abort the open transaction (``EXACTLY_ONCE``), or drop the records not yet sent."""
        if self._in_transaction:
            self._in_transaction = False
            self._transaction("abort_transaction", self._timeout)
        else:
            self._producer.purge()
            self._producer.poll(0)

    def close(self) -> None:
        """Close the producer (what :meth:`flush` or :meth:`abort` left is already settled; an older client without
        ``close`` is released with the writer)."""
        close = getattr(self._producer, "close", None)
        if close is not None:
            close()


class KafkaSinkBuilder:
    """Builds a :class:`KafkaSink` (see the module docstring)."""

    def __init__(self) -> None:
        self._bootstrap_servers: str | None = None
        self._record_serializer: KafkaRecordSerializationSchema | None = None
        self._delivery_guarantee = DeliveryGuarantee.NONE
        self._transactional_id_prefix: str | None = None
        self._properties: dict[str, str] = {}

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSinkBuilder:
        """The cluster: ``host:port[,host:port...]``."""
        self._bootstrap_servers = bootstrap_servers
        return self

    def set_delivery_guarantee(self, delivery_guarantee: DeliveryGuarantee) -> KafkaSinkBuilder:
        """``DeliveryGuarantee.NONE`` (the default), ``AT_LEAST_ONCE`` or ``EXACTLY_ONCE``."""
        if not isinstance(delivery_guarantee, DeliveryGuarantee):
            raise ValueError(
                "a delivery guarantee is DeliveryGuarantee.NONE, AT_LEAST_ONCE or EXACTLY_ONCE, not "
                f"{delivery_guarantee!r}"
            )
        self._delivery_guarantee = delivery_guarantee
        return self

    def set_transactional_id_prefix(self, transactional_id_prefix: str) -> KafkaSinkBuilder:
        """The prefix of the transactional ids (``EXACTLY_ONCE``): unique per sink writing to the cluster (two sinks
        with one prefix fence each other's transactions), and kept across restarts of the job."""
        if not isinstance(transactional_id_prefix, str) or not transactional_id_prefix:
            raise ValueError(f"the transactional id prefix is a non-empty string, not {transactional_id_prefix!r}")
        if len(transactional_id_prefix.encode()) > MAXIMUM_PREFIX_BYTES:
            raise ValueError(f"the transactional id prefix must not be longer than {MAXIMUM_PREFIX_BYTES} bytes")
        self._transactional_id_prefix = transactional_id_prefix
        return self

    def set_record_serializer(self, record_serializer: KafkaRecordSerializationSchema) -> KafkaSinkBuilder:
        """How elements become records (``KafkaRecordSerializationSchema.builder()...build()``)."""
        if not isinstance(record_serializer, KafkaRecordSerializationSchema):
            raise TypeError(
                "the record serializer is a KafkaRecordSerializationSchema (KafkaRecordSerializationSchema.builder()"
                f".set_topic(...).set_value_serialization_schema(...).build()), not {record_serializer!r}"
            )
        self._record_serializer = record_serializer
        return self

    def set_property(self, key: str, value: str) -> KafkaSinkBuilder:
        """A Kafka producer property (``bootstrap.servers`` sets the servers)."""
        name, text = check_property(key, value)
        if name == "bootstrap.servers":
            self._bootstrap_servers = text
        elif name == "transactional.id":
            raise ValueError("the sink makes its transactional ids: give set_transactional_id_prefix(...) instead")
        else:
            self._properties[name] = text
        return self

    def build(self) -> KafkaSink:
        """The sink; ``ValueError`` (see the module docstring) when it cannot write."""
        if not self._bootstrap_servers or not isinstance(self._bootstrap_servers, str):
            raise ValueError("the bootstrap servers are required: give set_bootstrap_servers('host:port')")
        if self._record_serializer is None:
            raise ValueError(
                "a record serializer is required: give set_record_serializer(KafkaRecordSerializationSchema.builder()"
                ".set_topic(...).set_value_serialization_schema(...).build())"
            )
        if self._delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE and self._transactional_id_prefix is None:
            raise ValueError(
                "EXACTLY_ONCE delivery guarantee requires a transactional id prefix to be set to provide unique "
                "transaction names across multiple KafkaSinks writing to the same Kafka cluster: give "
                "set_transactional_id_prefix(...)"
            )
        return KafkaSink(
            self._bootstrap_servers,
            self._record_serializer,
            self._delivery_guarantee,
            self._transactional_id_prefix,
            self._properties,
        )
