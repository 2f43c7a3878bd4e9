"""A shard's state as the state store keeps it: a log of one snapshot followed by the changes of each later call,
and the one rule that compacts it.

Each call of a shard appends what it changed (``ShardHost.changes``), so a micro-batch writes what it changed,
not what the shard holds. The log is replaced by a new snapshot (``ShardHost.snapshot``):

- at a shard's first call of a generation (nothing of its own stored yet; ``runtime``);
- when the changes logged since the snapshot outgrow twice the snapshot plus :data:`COMPACT_SLACK`, so the stored
  bytes stay within about three times the state and the write cost per call follows its work (amortised);
- when the shard holds nothing any more (no state entry, no timer): its tiny snapshot replaces the log at once, so
  the stored bytes return to almost nothing when the final watermark has fired everything.

A restore reads the log back in order: :func:`restore` (the snapshot, then each change).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from panes.spark.shard.hosts import ShardHost

COMPACT_SLACK = 64 * 1024
"""Bytes of changes a shard may log beyond twice its last snapshot before it writes a new snapshot."""


@dataclass(frozen=True)
class LogEntry:
    """What one call writes: ``data``, a snapshot replacing the log (``snapshot``) or changes appended to it, and
    the log's size after it is written (``stored`` bytes, ``snapshot_bytes`` of them its snapshot)."""

    data: bytes
    snapshot: bool
    stored: int
    snapshot_bytes: int


def next_entry(host: ShardHost, first: bool, stored: int, snapshot_bytes: int) -> LogEntry:
    """The entry a call of ``host`` writes (module docstring) to a log of ``stored`` bytes, ``snapshot_bytes`` of them
    its snapshot; ``first``: nothing of this generation is stored yet."""
    if (
        first
        or stored - snapshot_bytes > 2 * snapshot_bytes + COMPACT_SLACK
        or (stored > snapshot_bytes and host.open_panes() == 0 and host.timer_count() == 0)
    ):
        data = host.snapshot()
        return LogEntry(data, True, len(data), len(data))
    data = host.changes()
    return LogEntry(data, False, stored + len(data), snapshot_bytes)


def restore(host: ShardHost, entries: Sequence[bytes]) -> None:
    """``host`` restored from a log's ``entries`` (its snapshot first, then the changes in the order written)."""
    host.restore(entries[0], entries[1:])
