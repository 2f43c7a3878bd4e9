"""The Kafka clients' properties: which a user's property list hands to librdkafka (the client panes uses), how
long panes waits for the cluster, and how secrets are kept out of what panes prints.

Properties are Kafka's (Java client) names; librdkafka takes most of them as they are. Those only Flink's
connector or the Java client know (:data:`NOT_FOR_LIBRDKAFKA`) are read by panes or dropped, never passed on.
A property librdkafka does not know fails the job when it starts, naming it.

Secrets: the value of a property whose name holds ``password``, ``secret``, ``jaas``, ``token``, ``credential``
or ``key.pem`` (``sasl.password``, ``ssl.key.password``, ``sasl.jaas.config``, ``sasl.oauthbearer.client.secret``,
...) is shown as ``******`` in every ``repr``, plan and error message panes writes (:func:`masked`,
:func:`scrubbed`).
"""

from __future__ import annotations

import logging
from typing import Any

TIMEOUT_PROPERTY = "default.api.timeout.ms"
"""The Java client's bound on blocking calls, which panes applies to every call to the cluster it waits for
(metadata, offsets, transactions); default :data:`DEFAULT_TIMEOUT_MS`."""

DEFAULT_TIMEOUT_MS = 30_000

NOT_FOR_LIBRDKAFKA = frozenset(
    {
        TIMEOUT_PROPERTY,
        "key.deserializer",
        "value.deserializer",
        "key.serializer",
        "value.serializer",
        "partition.discovery.interval.ms",
        "client.id.prefix",
        "register.consumer.metrics",
        "commit.offsets.on.checkpoint",
        "max.poll.records",
        "max.block.ms",
    }
)
"""Properties of Flink's Kafka connector or only of the Java client: never handed to librdkafka."""

_SECRET_MARKERS = ("password", "secret", "jaas", "token", "credential", "key.pem")
MASK = "******"

LOGGER = logging.getLogger("panes.kafka")
"""Where librdkafka's log lines go (silent unless the application configures logging for it)."""
LOGGER.addHandler(logging.NullHandler())
LOGGER.propagate = False


def is_secret(name: str) -> bool:
    """Whether property ``name`` holds a secret (see the module docstring)."""
    lowered = name.lower()
    return any(marker in lowered for marker in _SECRET_MARKERS)


def masked(properties: dict[str, str]) -> dict[str, str]:
    """``properties`` with every secret's value replaced by ``******``."""
    return {name: MASK if is_secret(name) else value for name, value in properties.items()}


def scrubbed(text: str, properties: dict[str, str]) -> str:
    """``text`` (a client's error message) with the value of every secret of ``properties`` replaced by
    ``******``."""
    for name, value in properties.items():
        if is_secret(name) and value:
            text = text.replace(str(value), MASK)
    return text


def timeout_seconds(properties: dict[str, str]) -> float:
    """How long panes waits for the cluster (``default.api.timeout.ms``, default 30 s); ``ValueError`` for a value
    that is not a positive number of milliseconds."""
    raw = properties.get(TIMEOUT_PROPERTY, str(DEFAULT_TIMEOUT_MS))
    try:
        value = int(raw)
    except (TypeError, ValueError):
        value = 0
    if value <= 0:
        raise ValueError(f"{TIMEOUT_PROPERTY} must be a positive number of milliseconds, not {raw!r}")
    return value / 1000


def client_config(properties: dict[str, str], **fixed: Any) -> dict[str, Any]:
    """The librdkafka configuration of ``properties`` (without :data:`NOT_FOR_LIBRDKAFKA`) with ``fixed`` on
    top, its log lines sent to :data:`LOGGER`."""
    config: dict[str, Any] = {name: value for name, value in properties.items() if name not in NOT_FOR_LIBRDKAFKA}
    config.update(fixed)
    config["logger"] = LOGGER
    return config


def check_property(key: Any, value: Any) -> tuple[str, str]:
    """``(key, value)`` as strings; ``TypeError`` for a key that is not a non-empty string or a value that is
    ``None``."""
    if not isinstance(key, str) or not key:
        raise TypeError(f"a Kafka property name is a non-empty string, not {key!r}")
    if value is None:
        raise TypeError(f"property {key!r} needs a value, not None")
    if isinstance(value, bool):
        return key, "true" if value else "false"
    return key, str(value)


def require_client() -> None:
    """``ImportError`` saying how to install it when confluent-kafka (librdkafka's Python client) is missing."""
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        raise ImportError(
            "panes' Kafka connector reads and writes through confluent-kafka: pip install 'panes[kafka]' "
            "(or pip install confluent-kafka)"
        ) from None
