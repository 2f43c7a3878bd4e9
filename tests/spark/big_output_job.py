"""A job whose sink output is far larger than the driver may receive (``spark.driver.maxResultSize=1m``):
run in its own process by ``test_data_stays_on_the_executors``.

``python -m tests.spark.big_output_job <input folder> <output folder> <rows>``
"""

from __future__ import annotations

import hashlib
import os
import sys
from typing import Any

from panes.datastream import KeyedProcessFunction, StreamEnvironment
from panes.watermarks import WatermarkStrategy

WIDE = "id BIGINT, ts BIGINT, blob STRING"


class Widen(KeyedProcessFunction[Any, Any, Any]):
    """Each event as a wide row (a 256-character digest chain), through keyed state."""

    def process_element(self, value: Any, ctx: Any) -> Any:
        digest = hashlib.sha256(str(value["id"]).encode()).hexdigest()
        yield {"id": value["id"], "ts": value["ts"], "blob": digest * 4}


def run(spark: Any, source: str, output: str) -> None:
    from panes.spark import SparkRunner

    # the files are read as a stream, which does not end: the query stops when they are read, its state kept in
    # a checkpoint beside the output
    checkpoint = os.path.join(os.path.dirname(os.path.abspath(output)), "checkpoint")
    env = StreamEnvironment(SparkRunner(spark, num_shards=4, trigger="available_now", checkpoint_location=checkpoint))
    events = env.from_files(source, schema="id BIGINT, ts BIGINT", streaming=True, max_files_per_trigger=1)
    (
        events.assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
        )
        .key_by(lambda e: e["id"] % 1000)
        .process(Widen(), output_type=WIDE)
        .sink_to_files(output, "json")
    )
    env.execute("big output")


if __name__ == "__main__":
    from panes.spark import create_session

    session = create_session(app_name="panes-big-output", config={"spark.driver.maxResultSize": "1m"})
    assert session.conf.get("spark.driver.maxResultSize") == "1m"
    run(session, sys.argv[1], sys.argv[2])
