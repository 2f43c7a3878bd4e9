"""What a keyed step's shards are made of, in one value: :class:`ShardDefinition`.

The driver builds one per keyed step (``translate``); the streaming processor, the bounded keyed function, the shard
keepers, rescaling and the hosts all take it whole. It imports nothing of Spark; whoever sends it to the executors
pickles it (``processor``, with Spark's cloudpickle), and :func:`load_definition` reads it back.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass

from panes.spark.layout import ChannelCodes, Layout
from panes.spark.linear import Step
from panes.spark.split_watermarks import SplitPlan

__all__ = ["ShardDefinition", "load_definition"]


@dataclass(frozen=True)
class ShardDefinition:
    """A keyed step's shards:

    - ``uid``: the step in this query run (a fresh one per start of the query: live operators are kept under it);
    - ``step``, ``codes``, ``layout``: the step, the plan's channels, and the layout of the rows the step returns;
    - ``num_shards``, ``max_parallelism``: its shards (parallel instances) and key groups;
    - ``splits``: the splits whose watermarks it tracks (a Kafka source's own strategy upstream,
      ``split_watermarks``; ``None``: it follows Spark's watermark);
    - ``watermark_lag``: how far the steps with event time per key before it hold its watermark back (ms, the sum of
      their ``max_lag``; ``translate.watermark_lag_before``).
    """

    uid: str
    step: Step
    codes: ChannelCodes
    layout: Layout
    num_shards: int
    max_parallelism: int
    splits: SplitPlan | None = None
    watermark_lag: int = 0


def load_definition(blob: bytes) -> ShardDefinition:
    """A pickled :class:`ShardDefinition` read back (``TypeError`` for anything else)."""
    definition = pickle.loads(blob)
    if not isinstance(definition, ShardDefinition):
        raise TypeError(f"not a pickled ShardDefinition: {type(definition).__name__}")
    return definition
