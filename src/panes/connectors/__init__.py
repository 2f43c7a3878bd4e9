"""PyFlink's connector modules, mapped onto panes' own sources and sinks: ``file_system`` (files), ``jdbc``
(PostgreSQL), ``kafka`` (Kafka topics), and ``base`` (``DeliveryGuarantee``, importable from here too, as from
``pyflink.datastream.connectors``). Each imports its client library (psycopg, confluent-kafka) only when a job
uses it."""

from panes.connectors.base import DeliveryGuarantee

__all__ = ["DeliveryGuarantee"]
