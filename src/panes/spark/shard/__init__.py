"""The shard runtime: what one shard of a keyed step is across micro-batches, written once and free of Spark.

A keyed step runs as shards (its parallel instances, each owning the keys of some key groups). Whatever carries a
shard's rows and state — Spark's ``transformWithStateInPandas`` processor (``panes.spark.processor``), the bounded
keyed function (``panes.spark.fused.keyed_shard_function``) or a shard keeper (``panes.spark.keeper``) — hands this
package the same things and gets the same things back. Which module to open for what:

- ``definition``: :class:`ShardDefinition`, what a keyed step's shards are made of (the one argument everywhere);
- ``runtime``: :class:`LiveShards` and :class:`ShardCall` / :class:`ShardOutcome`, one call of a shard: the live
  operator or one restored from the log, split watermarks, clock rows, rescaled pieces, the entry to store;
- ``hosts``: :func:`shard_host`, which host runs a step (the window chooser's verdict), and the host interface;
  ``record_host`` and ``element_host`` (elements one by one), ``columnar_host`` (a window on columns);
- ``phases``: the order of a micro-batch (rows before the watermark, the watermark, rows after it), for both hosts;
- ``log``: the snapshot-plus-changes log a shard's state is stored as, and when it is compacted;
- ``routing``: which rows a shard reads and which pass it by.

Nothing here imports pyspark (``tests/test_layering.py`` checks it, imports of imports included).
"""

from __future__ import annotations

from panes.spark.shard.definition import ShardDefinition, load_definition
from panes.spark.shard.hosts import ShardHost, shard_host
from panes.spark.shard.runtime import PIECE, LiveShards, ShardCall, ShardOutcome

__all__ = [
    "PIECE",
    "LiveShards",
    "ShardCall",
    "ShardDefinition",
    "ShardHost",
    "ShardOutcome",
    "load_definition",
    "shard_host",
]
