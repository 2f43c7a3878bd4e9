"""Watermarks per split on Spark: a Kafka source's own strategy (``env.from_source(kafka, strategy, name)``) makes each
partition's watermark and their minimum, as Flink's ``KafkaSource`` does and the local runner does
(``panes.watermarks.splits``), though Spark keeps one watermark per query.

How it travels (nothing here imports pyspark):

- **Ratings.** In the source's first Python step every Spark task rates each split (Kafka topic and partition,
  numbered by :func:`split_code`) it read in the micro-batch: the watermark a fresh generator of the strategy emits
  after the split's records there (``fused``). A task passes them on as *split rows* (``layout.SPLIT``: ``seq`` the
  split's code, ``ts`` its rating); every later Python step passes them on, and the keying before a keyed step sends
  them to every shard, as it does clock rows.
- **Tracking.** Every shard of a keyed step downstream keeps a :class:`SplitTracker`: per split a generator that
  follows the split's ratings (its watermark is the largest rating so far), wrapped for idleness as the strategy
  says (``with_idleness``), combined into their minimum by the same :class:`~panes.watermarks.splits.SplitWatermarks`
  the local runner uses: a split the query was built with (:attr:`SplitPlan.splits`) that has had no record holds the
  watermark at ``LONG_MIN``, an idle split stops holding it, when all are idle the watermark stays. Each call with
  split rows feeds them, then makes one periodic emit at the micro-batch's processing time: idleness is counted in
  micro-batches, as the local runner counts it in periodic emits. Every shard receives the same split rows in the same
  micro-batches, so every shard's tracker says the same.
- **Advancing.** A shard processes the micro-batch's rows at the watermark it had before, then advances to the
  tracker's (:func:`effective_watermark`): Flink's order, elements before the watermark they move. A step whose
  inputs also have other watermarks (a join with another source) takes the minimum with Spark's watermark for them.

The tracker's state is a few dozen bytes per split, stored with the shard (``processor``) whenever a call had split
rows. Split rows cost one row per split, task and shard in each micro-batch, inside payloads a task sends to every
shard anyway once keys are many.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from panes.elements import Watermark
from panes.spark.watermarks import held_back
from panes.time import LONG_MAX, LONG_MIN
from panes.timers.clock import ManualProcessingTimeService
from panes.watermarks.generators import WatermarkGenerator, WatermarkGeneratorContext
from panes.watermarks.output import WatermarkOutput
from panes.watermarks.splits import SplitWatermarks
from panes.watermarks.strategy import WatermarkStrategy

__all__ = ["SplitPlan", "SplitTracker", "effective_watermark", "split_code"]


def split_code(source: int, topic: str, partition: int) -> int:
    """The number of Kafka partition ``partition`` of ``topic`` read by source step ``source`` (its index in the
    plan's steps): the same on the driver, in every task and in every run of the same plan (a 63-bit digest, never
    negative)."""
    digest = hashlib.blake2b(f"{source}/{topic}/{partition}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


@dataclass(frozen=True)
class SplitPlan:
    """What a keyed step's shards track: the splits upstream whose watermarks they combine.

    - ``splits``: the codes of the splits known when the query was built (each holds the watermark at ``LONG_MIN``
      until it has a record, as in Flink); a split found later joins with its first rating;
    - ``idle_timeouts``: the strategy's ``with_idleness`` timeouts in ms (innermost first; empty: none);
    - ``alone``: every watermark the step's inputs carry comes from these splits; otherwise (``False``) the step also
      follows Spark's watermark, the minimum of its other inputs'.
    """

    splits: tuple[int, ...]
    idle_timeouts: tuple[int, ...] = ()
    alone: bool = True

    def merged(self, other: SplitPlan) -> SplitPlan:
        """The plan of a step that reads the splits of both (two per-split sources upstream)."""
        return SplitPlan(
            tuple(sorted(set(self.splits) | set(other.splits))),
            self.idle_timeouts or other.idle_timeouts,
            self.alone and other.alone,
        )


class _RatingFollower(WatermarkGenerator):
    """A split's generator on the shard side: its events are the split's ratings, its watermark the largest so far
    (emitted at each periodic emit, so a split coming back from idleness shows it again)."""

    __slots__ = ("highest",)

    def __init__(self) -> None:
        self.highest = LONG_MIN

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        self.highest = max(self.highest, event_timestamp)

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        if self.highest > LONG_MIN:
            output.emit_watermark(Watermark(self.highest))

    def snapshot_state(self) -> Any:
        return self.highest

    def restore_state(self, state: Any) -> None:
        if state is not None:
            self.highest = int(state)


class _Combined(WatermarkOutput):
    """Where the splits' minimum goes: the largest combined watermark so far (``LONG_MIN`` before any)."""

    def __init__(self) -> None:
        self.watermark = LONG_MIN

    def emit_watermark(self, watermark: Watermark) -> None:
        self.watermark = max(self.watermark, watermark.timestamp)

    def mark_idle(self) -> None:
        return None

    def mark_active(self) -> None:
        return None


class SplitTracker:
    """The combined watermark of a plan's splits in one shard (see the module docstring).

    :meth:`update` takes one micro-batch's ratings, then makes the periodic emit at its processing time ``now``;
    :attr:`watermark` is the minimum over the active splits so far (``LONG_MIN`` while a split the plan names has had
    no rating). :meth:`snapshot` and :meth:`restore` carry it across calls and restarts."""

    def __init__(self, plan: SplitPlan) -> None:
        strategy = replace(WatermarkStrategy.for_generator(_RatingFollower), idle_timeouts=plan.idle_timeouts)
        self._clock = ManualProcessingTimeService()
        self._combined = _Combined()
        self._splits = SplitWatermarks(
            strategy, WatermarkGeneratorContext(input_activity_clock=self._clock), self._combined
        )
        self._splits.add_all(plan.splits)

    @property
    def watermark(self) -> int:
        return self._combined.watermark

    def update(self, ratings: Mapping[int, int], now: int) -> None:
        """Each split's rating of one micro-batch (a split not known yet joins), then the periodic emit at ``now``."""
        self._clock.set_current_time(max(now, self._clock.get_current_processing_time()))
        for split, rating in sorted(ratings.items()):
            self._splits.on_event(split, None, rating)
        self._splits.on_periodic_emit()

    def snapshot(self) -> bytes:
        state = (self._splits.snapshot_state(), self._combined.watermark, self._clock.get_current_processing_time())
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, blob: bytes) -> None:
        splits, combined, now = pickle.loads(blob)
        self._splits.add_all(splits["generators"])  # splits found after the query was built
        self._splits.restore_state(splits)
        self._combined.watermark = combined
        self._clock.set_current_time(now)

    @classmethod
    def of(cls, plan: SplitPlan, blob: bytes | None) -> SplitTracker:
        """A tracker of ``plan``, restored from ``blob`` when given (``None``: no micro-batch had split rows yet)."""
        tracker = cls(plan)
        if blob is not None:
            tracker.restore(blob)
        return tracker


def effective_watermark(plan: SplitPlan, spark_watermark: int, tracked: int, lag: int = 0) -> int:
    """The watermark a shard of a step tracking ``plan`` advances to: the splits' combined watermark ``tracked``,
    held back by ``lag`` (steps with event time per key before it, ``translate.watermark_lag_before``); for a step
    with other inputs too (``plan.alone`` false), at most ``spark_watermark`` (Spark's for those, held back already);
    the end of input (``LONG_MAX`` from Spark) ends it whatever the splits say."""
    if spark_watermark == LONG_MAX:
        return LONG_MAX
    own = held_back(tracked, lag)
    return own if plan.alone else min(own, spark_watermark)


def highest_ratings(pairs: Iterable[tuple[int, int]]) -> dict[int, int]:
    """The largest rating of each split among ``(split, rating)`` pairs."""
    found: dict[int, int] = {}
    for split, rating in pairs:
        if rating > found.get(split, LONG_MIN):
            found[split] = rating
    return found
