"""A streaming job the Kafka kill test runs in a process of its own: ``python -m tests.kafka.kafka_fault_job
<bootstrap> <topic> <prefix> <checkpoint>`` writes :data:`BATCHES` (explicit micro-batches) to ``topic`` through an
``EXACTLY_ONCE`` ``KafkaSink`` with two writers (transactional id prefix ``prefix``) on ``local[2]`` Spark, from the
checkpoint ``checkpoint`` (``trigger available_now``). With ``PANES_CRASH_HOOK=kafka:<batch>:<marker>`` it holds at
the ``kafka`` crash point of that micro-batch (records and marker produced, transaction open) for the test to kill."""

from __future__ import annotations

import sys
from typing import Any

from panes.common import SimpleStringSchema
from panes.connectors.kafka import DeliveryGuarantee, KafkaRecordSerializationSchema, KafkaSink
from panes.datastream import StreamExecutionEnvironment
from panes.spark import SparkRunner

BATCHES = [[f"b{b}-{i}" for i in range(8)] for b in range(4)]


def main(bootstrap: str, topic: str, prefix: str, checkpoint: str, spark: Any = None) -> None:
    """Run the job from ``checkpoint`` to its end, on ``spark`` (a session of its own on ``local[2]`` when
    ``None``; the test's restart runs it in the test's own session)."""
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic(topic)
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(bootstrap)
        .set_record_serializer(serializer)
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix(prefix)
        .build()
    )
    where: dict[str, Any] = {"master": "local[2]"} if spark is None else {"spark": spark}
    runner = SparkRunner(**where, checkpoint_location=checkpoint, trigger="available_now", quiet=True)
    env = StreamExecutionEnvironment.get_execution_environment(runner)
    env.from_micro_batches(BATCHES, end_of_input=False).sink_to(sink).set_parallelism(2)
    env.execute()


if __name__ == "__main__":
    main(*sys.argv[1:5])
