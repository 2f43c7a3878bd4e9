"""Memory of open state: bytes per open pane of a keyed window operator in one Python process.

    .venv/bin/python bench/state_memory.py                 # 1,000,000 keys, one open pane each
    .venv/bin/python bench/state_memory.py --keys 200000

Each operator a Spark shard can host gets the same elements (``key STRING, ts BIGINT, value BIGINT``; keys
``k0``, ``k1``, ...; one element per key, all in one one-hour window, so every pane stays open) and is measured
in a fresh process: the growth of its resident memory from before the operator was made to after the elements
were added (and the C heap's free memory given back, as a shard keeper does after each call), divided by the
open panes. Rows:

- ``columnar count+sum``: ``key_by("key")`` + ``Aggregates(n=Count(), total=Sum("value"))`` on typed records,
  the columnar operator Spark runs such windows on (``ColumnarAlignedWindows``);
- ``columnar ProcessWindowFunction``: the same operator keeping the elements of a Python ``ProcessWindowFunction``
  (one that buffers each element) as Arrow columns until its panes fire, as Spark runs it on typed records;
- ``aligned reduce`` / ``aligned ProcessWindowFunction``: the element-by-element operator of tumbling windows
  (``AlignedWindowOperator``) with a Python reduce, and with a function that buffers each element;
- ``window operator reduce``: Flink's general window operator (the local runner's).
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
from typing import Any

import numpy as np

HOUR = 3_600_000
KINDS = [
    "columnar count+sum",
    "columnar ProcessWindowFunction",
    "aligned reduce",
    "aligned ProcessWindowFunction",
    "window operator reduce",
]


def rss() -> int:
    with open(f"/proc/{os.getpid()}/status") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmRSS:"))


def measure(kind: str, keys: int, batch: int) -> tuple[int, int]:
    """Bytes the process grew by holding ``keys`` open panes of ``kind``, and the open panes (after a small
    warm-up run, so that the modules the operator imports as it works do not count)."""
    from panes.spark.keeper import release_free_memory

    fill(kind, 1_000, batch)
    gc.collect()
    release_free_memory()
    before = rss()
    operator = fill(kind, keys, batch)
    gc.collect()
    release_free_memory()  # as a shard keeper does after every call
    return rss() - before, operator.open_panes()


def fill(kind: str, keys: int, batch: int) -> Any:
    """An operator of ``kind`` holding one open pane for each of ``keys`` keys."""
    import pyarrow as pa

    from panes.datastream.windowed import WindowSpec
    from panes.elements import StreamRecord
    from panes.functions import Aggregates, Count, Sum
    from panes.functions.aggregators import FieldKey
    from panes.operators.base import CollectingOutput
    from panes.types import RecordType
    from panes.windowing import ProcessWindowFunction, TumblingEventTimeWindows
    from panes.windowing.columnar.aligned import ColumnarAlignedWindows
    from panes.windowing.columnar.plan import plan_columnar
    from panes.windowing.internal_functions import aggregate_spec, process_spec, reduce_spec
    from panes.windowing.triggers.event_time import EventTimeTrigger

    class Buffer(ProcessWindowFunction[Any, Any, Any, Any]):
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            yield len(list(elements))

    record_type = RecordType.of("key STRING, ts BIGINT, value BIGINT")
    assert record_type is not None
    if kind == "columnar count+sum":
        function = aggregate_spec(Aggregates(n=Count(), total=Sum("value")), None)
    elif kind.endswith("ProcessWindowFunction"):
        function = process_spec(Buffer())
    else:
        function = reduce_spec(lambda a, b: {**a, "value": a["value"] + b["value"]}, None)
    window = WindowSpec(
        TumblingEventTimeWindows.of(HOUR), EventTimeTrigger(), None, 0, None, function, FieldKey("key"), True
    )
    if kind.startswith("columnar"):
        plan = plan_columnar(window, record_type)
        assert plan is not None
        operator: Any = ColumnarAlignedWindows(plan)
        for first in range(0, keys, batch):
            part = np.array([f"k{i}" for i in range(first, min(keys, first + batch))], dtype=object)
            values = pa.StructArray.from_arrays(
                [pa.array(part, pa.string()), pa.array(np.arange(len(part))), pa.array(np.ones(len(part), np.int64))],
                names=["key", "ts", "value"],
            )
            operator.process(values, np.arange(len(part), dtype=np.int64), np.arange(len(part), dtype=np.int64))
    else:
        operator = window.create_aligned_operator() if kind.startswith("aligned") else window.create_operator()
        operator.setup(CollectingOutput())
        operator.open()
        for i in range(keys):
            operator.process_record(StreamRecord({"key": f"k{i}", "ts": i, "value": 1}, i))
    return operator


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=100_000, help="elements per columnar batch")
    parser.add_argument("--kind", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.kind:
        grown, panes = measure(args.kind, args.keys, args.batch)
        print(f"{grown} {panes}")
        return 0
    print("| operator | open panes | bytes per open pane |\n|---|---|---|")
    for kind in KINDS:
        done = subprocess.run(
            [sys.executable, __file__, "--kind", kind, "--keys", str(args.keys), "--batch", str(args.batch)],
            capture_output=True,
            text=True,
            check=True,
        )
        grown, panes = (int(x) for x in done.stdout.split())
        print(f"| {kind} | {panes:,} | {grown / max(1, panes):.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
