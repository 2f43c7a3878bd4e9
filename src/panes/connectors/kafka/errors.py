"""Why a Kafka source or sink cannot go on: the cluster cannot be reached, a topic does not exist, a record could
not be delivered, a transaction failed. A :class:`KafkaConnectorError` fails the job as it is (it names the source or
sink it comes from, so no step wraps it), its message saying what to check; none holds a secret
(``properties.scrubbed``)."""

from __future__ import annotations

from typing import Any

from panes.connectors.kafka.properties import scrubbed


class KafkaConnectorError(RuntimeError):
    """A Kafka source or sink cannot go on (see the module docstring). ``operator`` names it."""

    def __init__(self, message: str, operator: str) -> None:
        super().__init__(message)
        self.operator = operator


def failure(
    what: str, message: str, properties: dict[str, str], error: BaseException | None = None
) -> KafkaConnectorError:
    """The :class:`KafkaConnectorError` of ``what`` (``"KafkaSource 'x'"``): ``message``, then the client's
    ``error`` when given, with every secret of ``properties`` masked."""
    text = message if error is None else f"{message} ({_client_error(error)})"
    return KafkaConnectorError(scrubbed(f"{what}: {text}", properties), what)


def _client_error(error: BaseException) -> str:
    """A client exception as one short phrase (librdkafka's own text for a ``KafkaException``)."""
    inner: Any = error.args[0] if error.args else None
    text = getattr(inner, "str", None)
    name = getattr(inner, "name", None)
    if callable(text) and callable(name):
        return f"{name()}: {text()}"
    return f"{type(error).__name__}: {error}"
