"""How fast the Spark runner reads Kafka each way (Spark's own connector, panes' Python data source): a trivial panes
job (deserialize each record as a string, drop it in a filter) over ``N`` records of a fresh two-partition topic, on
a ``local[2]`` session panes creates, bounded (one batch read) and streaming (``trigger available_now`` over a new
checkpoint). Each figure is the best of ``--repeat`` runs after a warm-up run, wall time of ``env.execute()``.

    python bench/kafka_readers.py --bootstrap 127.0.0.1:PORT [--records 200000] [--repeat 2]

Start a broker with ``bash scripts/kafka.sh start`` and fetch Spark's connector with ``bash
scripts/spark-kafka.sh`` first (wrap the run in ``flock /tmp/panes-spark.lock`` on a shared machine).
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid

from panes.common import SimpleStringSchema
from panes.connectors.kafka import KafkaOffsetsInitializer, KafkaSource
from panes.datastream import StreamExecutionEnvironment
from panes.datastream.sinks import ListSink
from panes.spark import SparkRunner, create_session
from panes.spark.kafka import READER_SETTING


def fill(bootstrap: str, records: int) -> str:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    topic = f"bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    time.sleep(1)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(records):
        while True:
            try:
                producer.produce(topic, f"record-{i:09d}".encode(), partition=i % 2)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    return topic


def run_once(spark: object, bootstrap: str, topic: str, streaming: bool) -> float:
    builder = KafkaSource.builder().set_bootstrap_servers(bootstrap).set_topics(topic)
    builder.set_value_only_deserializer(SimpleStringSchema())
    if not streaming:
        builder.set_bounded(KafkaOffsetsInitializer.latest())
    runner = (
        SparkRunner(spark, checkpoint_location=tempfile.mkdtemp(prefix="bench-cp-"), trigger="available_now")
        if streaming
        else SparkRunner(spark)
    )
    env = StreamExecutionEnvironment.get_execution_environment(runner)
    out = ListSink()
    env.from_source(builder.build(), None, "kafka").filter(lambda line: line == "").sink_to(out)
    started = time.perf_counter()
    env.execute()
    elapsed = time.perf_counter() - started
    assert not out.records
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    spark = create_session("local[2]", app_name="kafka-throughput")
    warm = fill(args.bootstrap, 1000)
    topic = fill(args.bootstrap, args.records)
    for reader in ("spark", "python"):
        spark.conf.set(READER_SETTING, reader)
        for streaming in (False, True):
            run_once(spark, args.bootstrap, warm, streaming)
            best = min(run_once(spark, args.bootstrap, topic, streaming) for _ in range(args.repeat))
            mode = "streaming" if streaming else "bounded"
            print(
                f"{reader:7} {mode:10} {args.records} records in {best:6.2f} s: {args.records / best:10,.0f} records/s"
            )


if __name__ == "__main__":
    main()
