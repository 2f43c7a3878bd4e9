"""How a Kafka sink turns elements into records (PyFlink's ``KafkaRecordSerializationSchema`` and its builder).

``KafkaRecordSerializationSchema.builder()``, then ``set_topic(topic)`` or ``set_topic_selector(fn)`` (exactly one:
a function of the element, or a :class:`KafkaTopicSelector`, giving its topic), ``set_value_serialization_schema``
(required) and ``set_key_serialization_schema`` (optional: without it records have no key), ``build()``. Building
without a topic or a value schema, or setting one twice, raises ``ValueError`` (Flink's conditions). Each record
takes the element's timestamp (when it has one, ``>= 0``) as its Kafka timestamp, as Flink's sink writes it;
otherwise the producer's time.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from panes.common.serialization import SerializationSchema

__all__ = ["KafkaRecordSerializationSchema", "KafkaRecordSerializationSchemaBuilder", "KafkaTopicSelector"]


class KafkaTopicSelector(ABC):
    """Chooses the topic of each element (PyFlink's)."""

    @abstractmethod
    def apply(self, data: Any) -> str:
        """The topic ``data`` goes to."""


class _FunctionTopicSelector(KafkaTopicSelector):
    def __init__(self, function: Callable[[Any], str]) -> None:
        self.function = function

    def apply(self, data: Any) -> str:
        return self.function(data)


@dataclass(frozen=True)
class ProducerRecord:
    """What the sink produces for one element: its topic, key and value bytes, timestamp (``None``: the
    producer's time)."""

    topic: str
    key: bytes | None
    value: bytes
    timestamp: int | None


class KafkaRecordSerializationSchema:
    """Turns an element into a :class:`ProducerRecord` (see the module docstring; build it with
    :meth:`builder`)."""

    def __init__(
        self,
        topic: str | None,
        topic_selector: KafkaTopicSelector | None,
        value_schema: SerializationSchema,
        key_schema: SerializationSchema | None,
    ) -> None:
        self.topic = topic
        self.topic_selector = topic_selector
        self.value_schema = value_schema
        self.key_schema = key_schema

    @staticmethod
    def builder() -> KafkaRecordSerializationSchemaBuilder:
        return KafkaRecordSerializationSchemaBuilder()

    def serialize(self, element: Any, timestamp: int | None) -> ProducerRecord:
        """The record of ``element`` (with event timestamp ``timestamp``); raises what the schemas or the topic
        selector raise, ``TypeError`` for a topic that is not a non-empty string."""
        topic = self.topic if self.topic_selector is None else self.topic_selector.apply(element)
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"the topic selector gave {topic!r} for {element!r}; it must give a topic name")
        key = None if self.key_schema is None else self.key_schema.serialize(element)
        value = self.value_schema.serialize(element)
        return ProducerRecord(topic, key, value, timestamp if timestamp is not None and timestamp >= 0 else None)

    def __repr__(self) -> str:
        where = repr(self.topic) if self.topic_selector is None else "a topic selector"
        return f"KafkaRecordSerializationSchema(topic {where}, value {self.value_schema!r}, key {self.key_schema!r})"


class KafkaRecordSerializationSchemaBuilder:
    """Builds a :class:`KafkaRecordSerializationSchema` (see the module docstring)."""

    def __init__(self) -> None:
        self._topic: str | None = None
        self._topic_selector: KafkaTopicSelector | None = None
        self._value_schema: SerializationSchema | None = None
        self._key_schema: SerializationSchema | None = None

    def set_topic(self, topic: str) -> KafkaRecordSerializationSchemaBuilder:
        """Every record to ``topic``."""
        if not isinstance(topic, str) or not topic:
            raise ValueError(f"a topic is a non-empty string, not {topic!r}")
        self._check_no_topic()
        self._topic = topic
        return self

    def set_topic_selector(
        self, topic_selector: Callable[[Any], str] | KafkaTopicSelector
    ) -> KafkaRecordSerializationSchemaBuilder:
        """Each record to the topic ``topic_selector`` gives for its element."""
        if not isinstance(topic_selector, KafkaTopicSelector):
            if not callable(topic_selector):
                raise TypeError("topic_selector must be a KafkaTopicSelector or a callable")
            topic_selector = _FunctionTopicSelector(topic_selector)
        self._check_no_topic()
        self._topic_selector = topic_selector
        return self

    def _check_no_topic(self) -> None:
        if self._topic is not None or self._topic_selector is not None:
            raise ValueError("the topic is set already: give either set_topic or set_topic_selector, once")

    def set_key_serialization_schema(
        self, key_serialization_schema: SerializationSchema
    ) -> KafkaRecordSerializationSchemaBuilder:
        """Each record's key: ``key_serialization_schema`` of its element."""
        if self._key_schema is not None:
            raise ValueError("the key serialization schema is set already")
        self._key_schema = _schema(key_serialization_schema, "key")
        return self

    def set_value_serialization_schema(
        self, value_serialization_schema: SerializationSchema
    ) -> KafkaRecordSerializationSchemaBuilder:
        """Each record's value: ``value_serialization_schema`` of its element (required)."""
        if self._value_schema is not None:
            raise ValueError("the value serialization schema is set already")
        self._value_schema = _schema(value_serialization_schema, "value")
        return self

    def build(self) -> KafkaRecordSerializationSchema:
        """The schema; ``ValueError`` without a topic (or selector) or a value serialization schema."""
        if self._topic is None and self._topic_selector is None:
            raise ValueError("no topic is set: give set_topic(topic) or set_topic_selector(function)")
        if self._value_schema is None:
            raise ValueError(
                "no value serialization schema is set: give set_value_serialization_schema(SimpleStringSchema()) or "
                "another SerializationSchema"
            )
        return KafkaRecordSerializationSchema(self._topic, self._topic_selector, self._value_schema, self._key_schema)


def _schema(schema: Any, what: str) -> SerializationSchema:
    if not isinstance(schema, SerializationSchema):
        raise TypeError(
            f"the {what} serialization schema must be a SerializationSchema (SimpleStringSchema(), "
            f"JsonRowSerializationSchema.builder()...build(), ...), not {schema!r}"
        )
    return schema
