"""What a shard call costs outside the operator: the envelopes, pickling and the keeper's socket, without Spark.

    .venv/bin/python bench/shard_call.py                          # count+sum and reduce, 20 and 2,000 rows a call
    .venv/bin/python bench/shard_call.py --functions python --rows 200 --calls 400

A streaming keyed step's shard is called once per micro-batch. Around the operator's own work, a call is
carried: the Python worker makes a ``ShardCall`` of the rows' Arrow payloads, sends it to the shard keeper of its
slot (pickled, on a Unix socket), which unpacks the payloads, runs the shard's host, packs its rows out, takes the
log entry for the state store, and answers with a ``ShardOutcome`` the same way. This script times, per call and
over the same micro-batches of ``shard_host.py``'s keyed step (tumbling 10 s windows, 10,000 keys, watermarks
following the events):

- ``host``: the shard's host alone (``ShardHost.run`` on Arrow batches, then its changes), the operator's work;
- ``runtime``: the same call through the shard runtime in this process (``LiveShards.run``: payloads unpacked,
  rows out packed, the log entry chosen), what a worker without keepers runs;
- ``keeper``: the same call through a shard keeper (``Keepers.run``: a second process, pickled calls on a socket),
  what a worker with keepers runs.

Printed: the median microseconds per call of each, and the two extras over ``host`` (what the envelopes and the
process hop cost). Each kind runs its own fresh shard over the same calls, ``--repeat`` times; the fastest run
counts. Nothing is written; ``bench/RESULTS.md`` quotes the figures ("A shard call outside the operator").
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from panes.spark.keeper_client import Keepers  # noqa: E402
from panes.spark.layout import Record, pack  # noqa: E402
from panes.spark.shard import LiveShards, ShardCall, ShardDefinition, ShardOutcome, shard_host  # noqa: E402
from panes.time import LONG_MIN  # noqa: E402
from shard_host import DISORDER, FUNCTIONS, keyed_step  # noqa: E402

KEYS = 10_000


def calls_of(function: str, rows: int, calls: int) -> tuple[ShardDefinition, list[tuple[list[bytes], int]]]:
    """The step's definition and ``calls`` micro-batches of ``rows`` events each (their payloads, and the
    watermark of the call: what the batch before reached)."""
    step, codes, layout, stream = keyed_step(function)
    channel = (stream.transformation.id, None)
    rng = np.random.default_rng(7)
    events = rows * calls
    ts = 1_700_000_000_000 + np.sort(rng.integers(0, events * 20, events)) + rng.integers(-DISORDER, 1, events)
    key = rng.integers(0, KEYS, events).tolist()
    value = rng.integers(0, 1_000, events).tolist()
    stamps = ts.tolist()
    batches: list[tuple[list[bytes], int]] = []
    watermark = LONG_MIN
    for call in range(calls):
        part = range(call * rows, (call + 1) * rows)
        records = [
            Record(channel, {"key": f"k{key[i]}", "ts": stamps[i], "value": value[i]}, stamps[i], i + 1, 1)
            for i in part
        ]
        batches.append(([pack([layout.encode(records)], layout.schema)], watermark))
        watermark = max(watermark, int(ts[part.stop - 1]) - DISORDER - 1)
    return ShardDefinition("bench-call", step, codes, layout, 1, 128), batches


def timed(
    run: Callable[[list[bytes], int, int | None], int | None], batches: list[tuple[list[bytes], int]]
) -> list[float]:
    """Microseconds of each call of ``run(payloads, watermark, version)``, which returns the version it committed."""
    version: int | None = None
    spent: list[float] = []
    for payloads, watermark in batches:
        started = time.perf_counter()
        version = run(payloads, watermark, version)
        spent.append((time.perf_counter() - started) * 1e6)
    return spent


def by_host(definition: ShardDefinition, batches: list[tuple[list[bytes], int]]) -> list[float]:
    from panes.spark.layout import unpack

    host = shard_host(definition, 0)
    unpacked = [([b for payload in payloads for b in unpack(payload)], watermark) for payloads, watermark in batches]
    spent = []
    for rows, watermark in unpacked:
        started = time.perf_counter()
        host.run(rows, watermark, 0)
        host.changes()
        spent.append((time.perf_counter() - started) * 1e6)
    return spent


def through(
    runner: Callable[[ShardCall], ShardOutcome], stored: dict[str, int]
) -> Callable[[list[bytes], int, int | None], int | None]:
    """``runner`` as ``timed`` calls it: each call on the log the one before left."""

    def run(payloads: list[bytes], watermark: int, version: int | None) -> int | None:
        call = ShardCall(0, payloads, watermark, 0, version, stored["stored"], stored["snapshot"])
        outcome = runner(call)
        stored["stored"], stored["snapshot"] = outcome.stored, outcome.snapshot_bytes
        return outcome.version

    return run


NEVER: Callable[[], list[bytes]] = list
"""The log reader of the timed calls: every call is answered by the live operator, so none reads the log."""


def in_process(shards: LiveShards, definition: ShardDefinition) -> Callable[[ShardCall], ShardOutcome]:
    return lambda call: shards.run(definition, call, NEVER)


def in_keeper(keepers: Keepers, uid: str, pickled: bytes) -> Callable[[ShardCall], ShardOutcome]:
    return lambda call: keepers.run(0, uid, pickled, call, NEVER)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--functions", nargs="+", choices=FUNCTIONS, default=["count_sum", "reduce"])
    parser.add_argument("--rows", nargs="+", type=int, default=[20, 2_000], help="events per call")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from pyspark import cloudpickle

    keepers = Keepers(parent=os.getpid())
    print(f"{'function':10s} {'rows':>6s} {'host':>9s} {'runtime':>9s} {'keeper':>9s} {'+runtime':>9s} {'+keeper':>9s}")
    for function in args.functions:
        for rows in args.rows:
            definition, batches = calls_of(function, rows, args.calls)
            pickled = cloudpickle.dumps(definition)  # type: ignore[no-untyped-call]
            medians: dict[str, float] = {}
            for kind in ("host", "runtime", "keeper"):
                runs = []
                for attempt in range(args.repeat):
                    uid = f"bench-call-{function}-{rows}-{attempt}"
                    stored = {"stored": 0, "snapshot": 0}
                    if kind == "host":
                        spent = by_host(definition, batches)
                    elif kind == "runtime":
                        spent = timed(through(in_process(LiveShards(), definition), stored), batches)
                    else:
                        spent = timed(through(in_keeper(keepers, uid, pickled), stored), batches)
                    runs.append(statistics.median(spent[1:]))
                medians[kind] = min(runs)
            host, runtime, keeper = medians["host"], medians["runtime"], medians["keeper"]
            print(
                f"{function:10s} {rows:6d} {host:8.0f}u {runtime:8.0f}u {keeper:8.0f}u "
                f"{runtime - host:8.0f}u {keeper - host:8.0f}u",
                flush=True,
            )
    keepers.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
