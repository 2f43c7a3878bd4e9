"""Where a Kafka source starts and stops reading each partition (PyFlink's ``KafkaOffsetsInitializer``,
``KafkaOffsetResetStrategy`` and ``KafkaTopicPartition``).

An initializer is resolved to one offset per partition when the job starts (:meth:`KafkaOffsetsInitializer.resolve`),
so a job reads what the cluster held then, and a snapshot records plain offsets:

- ``earliest()``: the first offset the partition still holds (the default start).
- ``latest()``: the end of the partition at the start of the job (a bounded source stops there).
- ``timestamp(ms)``: the first record whose timestamp is at least ``ms`` (the end of the partition when there is
  none); ``ms`` must be ``>= 0`` (``ValueError``; Kafka reads negative times as special offsets).
- ``offsets({KafkaTopicPartition: offset}, reset)``: the given offset; a partition not given, or an offset outside
  what the partition holds, takes ``reset`` (default ``EARLIEST``; ``NONE`` fails the job naming the partition).
- ``committed_offsets(reset)``: the consumer group's committed offset (needs ``set_group_id``: ``ValueError`` at
  ``build()``); a partition without one takes ``reset`` (default ``NONE``: the job fails naming it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

__all__ = ["KafkaOffsetResetStrategy", "KafkaOffsetsInitializer", "KafkaTopicPartition"]


@dataclass(frozen=True, order=True)
class KafkaTopicPartition:
    """One partition of one topic (Kafka's ``TopicPartition``)."""

    topic: str
    partition: int

    def __post_init__(self) -> None:
        if not isinstance(self.topic, str) or not self.topic:
            raise ValueError(f"a topic is a non-empty string, not {self.topic!r}")
        if isinstance(self.partition, bool) or not isinstance(self.partition, int) or self.partition < 0:
            raise ValueError(f"a partition is an int >= 0, not {self.partition!r}")

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class KafkaOffsetResetStrategy(Enum):
    """Where to start when an offset is missing or out of range (Kafka's ``auto.offset.reset``)."""

    LATEST = 0
    EARLIEST = 1
    NONE = 2


Bounds = Callable[[KafkaTopicPartition], tuple[int, int]]
"""The first offset a partition holds and its end (the offset the next record will get)."""
Lookup = Callable[[list[KafkaTopicPartition]], dict[KafkaTopicPartition, int | None]]
"""The committed offsets of partitions, ``None`` where there is none."""
ByTime = Callable[[list[KafkaTopicPartition], int], dict[KafkaTopicPartition, int | None]]
"""The first offset of each partition at or after a timestamp, ``None`` where there is none."""


class MissingOffsetError(LookupError):
    """A partition has no offset and the reset strategy is ``NONE``; the message names it."""


class KafkaOffsetsInitializer:
    """Where to start (or stop) reading each partition (see the module docstring). Build one with the static
    methods."""

    def __init__(self, kind: str, argument: Any = None, reset: KafkaOffsetResetStrategy | None = None) -> None:
        self.kind = kind
        self.argument = argument
        self.reset = reset

    @staticmethod
    def earliest() -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer("earliest")

    @staticmethod
    def latest() -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer("latest")

    @staticmethod
    def timestamp(timestamp: int) -> KafkaOffsetsInitializer:
        """The first record at or after ``timestamp`` (epoch ms, ``>= 0``, else ``ValueError``)."""
        if isinstance(timestamp, bool) or not isinstance(timestamp, int) or timestamp < 0:
            raise ValueError(f"the timestamp to start from is epoch milliseconds >= 0, not {timestamp!r}")
        return KafkaOffsetsInitializer("timestamp", timestamp)

    @staticmethod
    def offsets(
        offsets: dict[KafkaTopicPartition, int],
        offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.EARLIEST,
    ) -> KafkaOffsetsInitializer:
        """The given offset per partition (``ValueError`` for a key that is not a ``KafkaTopicPartition`` or an
        offset that is not an int ``>= 0``)."""
        checked: dict[KafkaTopicPartition, int] = {}
        for partition, offset in dict(offsets).items():
            if not isinstance(partition, KafkaTopicPartition):
                raise ValueError(f"offsets are given per KafkaTopicPartition(topic, partition), not {partition!r}")
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
                raise ValueError(f"the offset of {partition} must be an int >= 0, not {offset!r}")
            checked[partition] = offset
        return KafkaOffsetsInitializer("offsets", checked, _strategy(offset_reset_strategy))

    @staticmethod
    def committed_offsets(
        offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.NONE,
    ) -> KafkaOffsetsInitializer:
        """The consumer group's committed offsets; ``offset_reset_strategy`` where there is none."""
        return KafkaOffsetsInitializer("committed", None, _strategy(offset_reset_strategy))

    def auto_offset_reset(self) -> str:
        """Kafka's ``auto.offset.reset`` for a consumer starting here (where an offset falls out of range)."""
        if self.kind == "latest" or self.reset is KafkaOffsetResetStrategy.LATEST:
            return "latest"
        if self.reset is KafkaOffsetResetStrategy.NONE:
            return "error"
        return "earliest"

    def resolve(
        self, partitions: list[KafkaTopicPartition], bounds: Bounds, by_time: ByTime, committed: Lookup
    ) -> dict[KafkaTopicPartition, int]:
        """One offset per partition, within what each holds; ``MissingOffsetError`` where the reset strategy is
        ``NONE`` and there is no (valid) offset."""
        found: dict[KafkaTopicPartition, int | None]
        if self.kind in ("earliest", "latest"):
            found = dict.fromkeys(partitions)
        elif self.kind == "timestamp":
            found = by_time(partitions, self.argument)
        elif self.kind == "committed":
            found = committed(partitions)
        else:
            found = {partition: self.argument.get(partition) for partition in partitions}
        resolved: dict[KafkaTopicPartition, int] = {}
        for partition in partitions:
            low, high = bounds(partition)
            offset = found.get(partition)
            if self.kind == "earliest":
                resolved[partition] = low
            elif self.kind == "latest":
                resolved[partition] = high
            elif self.kind == "timestamp":
                resolved[partition] = high if offset is None or offset < 0 else offset
            elif offset is not None and low <= offset <= high:
                resolved[partition] = offset
            else:
                resolved[partition] = self._reset(partition, offset, low, high)
        return resolved

    def _reset(self, partition: KafkaTopicPartition, offset: int | None, low: int, high: int) -> int:
        if self.reset is KafkaOffsetResetStrategy.LATEST:
            return high
        if self.reset is KafkaOffsetResetStrategy.EARLIEST:
            return low
        what = "no committed offset" if offset is None else f"offset {offset} outside [{low}, {high}]"
        raise MissingOffsetError(
            f"partition {partition} has {what} and the offset reset strategy is NONE; give "
            "KafkaOffsetResetStrategy.EARLIEST or LATEST to start there instead"
        )

    def __repr__(self) -> str:
        if self.kind == "timestamp":
            return f"timestamp({self.argument})"
        if self.kind == "offsets":
            given = ", ".join(f"{p}: {o}" for p, o in sorted(self.argument.items()))
            return f"offsets({{{given}}}, {self.reset.name if self.reset else ''})"
        if self.kind == "committed":
            return f"committed_offsets({self.reset.name if self.reset else ''})"
        return f"{self.kind}()"


def _strategy(strategy: Any) -> KafkaOffsetResetStrategy:
    if not isinstance(strategy, KafkaOffsetResetStrategy):
        raise ValueError(
            f"an offset reset strategy is KafkaOffsetResetStrategy.EARLIEST, LATEST or NONE, not {strategy!r}"
        )
    return strategy
