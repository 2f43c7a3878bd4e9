"""How a Kafka source turns records into elements (PyFlink's ``KafkaRecordDeserializationSchema``).

A :class:`ConsumerRecord` is one Kafka record as the cluster holds it: topic, partition, offset, timestamp, key and
value bytes, headers. A :class:`KafkaRecordDeserializationSchema` turns it into zero or more elements
(``deserialize(record, out)``, ``out.collect(element)``), as Flink's does:

- ``KafkaRecordDeserializationSchema.value_only(schema)`` (what ``set_value_only_deserializer`` sets): the value's
  bytes through a ``DeserializationSchema`` (``SimpleStringSchema``, JSON or CSV rows); a value the schema reads as
  ``None`` is skipped (Flink's collector drops ``null``).
- ``KafkaRecordDeserializationSchema.with_metadata(value_schema=None, key_schema=None)``: the whole record, a
  :class:`ConsumerRecord` whose ``key`` and ``value`` went through the schemas (raw bytes where none is given).
- a subclass: any function of the whole record.

Every element takes the record's timestamp (Kafka's ``CreateTime`` or ``LogAppendTime``), as Flink's source emits
it: a ``WatermarkStrategy`` without a timestamp assigner uses it. A record that ``deserialize`` raises on is a bad
record of the source (:class:`KafkaBadRecord`): it goes to the source's error output, or fails the job naming
its topic, partition and offset.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import Any, Protocol

from panes.common.serialization import DeserializationSchema, SimpleStringSchema
from panes.errors import BadInput, BadRecordError, ErrorRecord
from panes.types import RecordType

__all__ = [
    "Collector",
    "ConsumerRecord",
    "KafkaBadRecord",
    "KafkaRecordDeserializationSchema",
    "SimpleStringValueKafkaRecordDeserializationSchema",
]


@dataclass(frozen=True)
class ConsumerRecord:
    """One Kafka record (Kafka's ``ConsumerRecord``): ``timestamp`` in epoch ms (``None`` when the record has
    none) of ``timestamp_type`` (``"CreateTime"``, ``"LogAppendTime"`` or ``"NoTimestampType"``), ``key`` and
    ``value`` as bytes (``None`` when absent) or as a schema read them, ``headers`` as ``(name, bytes)`` pairs."""

    topic: str
    partition: int
    offset: int
    timestamp: int | None
    timestamp_type: str
    key: Any
    value: Any
    headers: tuple[tuple[str, bytes | None], ...] = ()


class Collector(Protocol):
    """Where ``deserialize`` puts the elements of a record."""

    def collect(self, element: Any) -> None: ...


class KafkaRecordDeserializationSchema(ABC):
    """Turns a Kafka record into elements (see the module docstring)."""

    @abstractmethod
    def deserialize(self, record: ConsumerRecord, out: Collector) -> None:
        """Put the elements of ``record`` into ``out``; raise (why) when the record cannot be read."""

    def get_produced_type(self) -> RecordType | None:
        """The elements' type (``None``: Python objects of no declared type)."""
        return None

    def deserialize_batch(self, records: list[ConsumerRecord]) -> list[list[Any] | Exception]:
        """For each of ``records``, in order, the elements :meth:`deserialize` puts out, or the exception it raises
        (returned, not raised). A schema that can read many records at once overrides it (JSON rows: one parse)."""
        found: list[list[Any] | Exception] = []
        for record in records:
            out = _Elements()
            try:
                self.deserialize(record, out)
            except Exception as error:
                found.append(error)
            else:
                found.append(out.items)
        return found

    @staticmethod
    def value_only(deserialization_schema: DeserializationSchema) -> KafkaRecordDeserializationSchema:
        """The value of each record through ``deserialization_schema``; ``TypeError`` for another object."""
        return _ValueOnly(deserialization_schema)

    @staticmethod
    def with_metadata(
        value_schema: DeserializationSchema | None = None, key_schema: DeserializationSchema | None = None
    ) -> KafkaRecordDeserializationSchema:
        """The whole record (a :class:`ConsumerRecord`), its value and key read by the schemas given."""
        return _WithMetadata(value_schema, key_schema)


TOMBSTONE = "the record has no value (a tombstone)"


class _Elements:
    def __init__(self) -> None:
        self.items: list[Any] = []

    def collect(self, element: Any) -> None:
        self.items.append(element)


def _schema(schema: Any, what: str) -> DeserializationSchema:
    if not isinstance(schema, DeserializationSchema):
        raise TypeError(
            f"the {what} deserializer must be a DeserializationSchema (SimpleStringSchema(), "
            f"JsonRowDeserializationSchema.builder()...build(), ...), not {schema!r}"
        )
    return schema


class _ValueOnly(KafkaRecordDeserializationSchema):
    def __init__(self, schema: DeserializationSchema) -> None:
        self.schema = _schema(schema, "value")

    def deserialize(self, record: ConsumerRecord, out: Collector) -> None:
        if record.value is None:
            raise ValueError(TOMBSTONE)
        value = self.schema.deserialize(record.value)
        if value is not None:
            out.collect(value)

    def deserialize_batch(self, records: list[ConsumerRecord]) -> list[list[Any] | Exception]:
        """The values through the value schema's ``deserialize_many`` (one parse for the batch where it can)."""
        found: list[list[Any] | Exception] = [ValueError(TOMBSTONE)] * len(records)
        present = [index for index, record in enumerate(records) if record.value is not None]
        values = self.schema.deserialize_many([records[index].value for index in present])
        for index, value in zip(present, values, strict=True):
            found[index] = value if isinstance(value, Exception) else ([] if value is None else [value])
        return found

    def get_produced_type(self) -> RecordType | None:
        return self.schema.get_produced_type()

    def __repr__(self) -> str:
        return f"value_only({self.schema!r})"


class _WithMetadata(KafkaRecordDeserializationSchema):
    def __init__(self, value_schema: DeserializationSchema | None, key_schema: DeserializationSchema | None) -> None:
        self.value_schema = None if value_schema is None else _schema(value_schema, "value")
        self.key_schema = None if key_schema is None else _schema(key_schema, "key")

    def deserialize(self, record: ConsumerRecord, out: Collector) -> None:
        key = record.key
        if self.key_schema is not None and key is not None:
            key = self.key_schema.deserialize(key)
        value = record.value
        if self.value_schema is not None and value is not None:
            value = self.value_schema.deserialize(value)
        out.collect(replace(record, key=key, value=value))

    def __repr__(self) -> str:
        return f"with_metadata(value={self.value_schema!r}, key={self.key_schema!r})"


class SimpleStringValueKafkaRecordDeserializationSchema(_ValueOnly):
    """Each record's value as a string in ``charset`` (PyFlink's; ``value_only(SimpleStringSchema(charset))``)."""

    def __init__(self, charset: str = "UTF-8") -> None:
        super().__init__(SimpleStringSchema(charset))


def record_deserializer(schema: Any) -> KafkaRecordDeserializationSchema:
    """``schema`` as a record deserializer: a ``DeserializationSchema`` reads values only; ``TypeError`` for
    anything else."""
    if isinstance(schema, KafkaRecordDeserializationSchema):
        return schema
    if isinstance(schema, DeserializationSchema):
        return _ValueOnly(schema)
    raise TypeError(
        "a Kafka source's deserializer is a KafkaRecordDeserializationSchema (KafkaRecordDeserializationSchema"
        f".value_only(SimpleStringSchema()), ...) or, with set_value_only_deserializer, a DeserializationSchema; "
        f"not {schema!r}"
    )


@dataclass(frozen=True)
class KafkaBadRecord(BadInput):
    """A record the source's deserializer raised on (``kafka``): where it is, its bytes, and why."""

    kafka: ConsumerRecord
    reason: str
    error_type: str

    @property
    def value(self) -> dict[str, Any]:
        """What an error output carries as the element: topic, partition, offset, timestamp, key and value bytes."""
        r = self.kafka
        return {
            "topic": r.topic,
            "partition": r.partition,
            "offset": r.offset,
            "timestamp": r.timestamp,
            "key": r.key,
            "value": r.value,
        }

    def where(self) -> str:
        """``the record at offset O of partition P of topic 'T'``."""
        r = self.kafka
        return f"the record at offset {r.offset} of partition {r.partition} of topic {r.topic!r}"

    def error(self, operator: str) -> BadRecordError:
        error = BadRecordError(
            f"{self.where()} could not be deserialized: {self.reason}; its value: {self.kafka.value!r}. Fix what "
            "writes the topic or the deserializer, or set side_output_errors(tag) on the source to send such records "
            "to an error output and go on."
        )
        error.operator = operator
        return error

    def record(self, operator: str) -> ErrorRecord:
        return ErrorRecord(
            self.value, self.kafka.timestamp, f"{self.where()}: {self.reason}", self.error_type, operator
        )
