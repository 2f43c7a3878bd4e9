"""Every connected-stream operation on keyed inputs in one Spark job (keyed state shared by both inputs)."""

from __future__ import annotations

from typing import Any

import pytest

from panes.datastream import StreamEnvironment
from panes.spark import SparkRunner
from tests.connected_jobs import ORDERS, PAYMENTS, run

pytestmark = pytest.mark.spark


def test_map_flat_map_process_and_key_by_on_keyed_connected_streams(spark: Any) -> None:
    env = StreamEnvironment(SparkRunner(spark, num_shards=2))
    # two micro-batches per input: state must carry across batches
    first = env.from_micro_batches([ORDERS[:2], ORDERS[2:]])
    second = env.from_micro_batches([PAYMENTS[:1], PAYMENTS[1:]])
    run(env, first, second)
