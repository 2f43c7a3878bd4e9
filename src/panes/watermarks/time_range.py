"""The event times a runner can represent, and the refusal of the others as bad records.

Flink's event time is any Java ``long``. A runner whose own time type is narrower (the Spark runner: Spark's
timestamps are microseconds in a ``long``, and panes shifts them so that times before 1970 stay exact) cannot
fire windows or timers exactly outside its range; rather than reinterpret such times (a watermark beyond the
range would read as the end of input), the timestamps step refuses the records that carry them: each is a
:class:`~panes.errors.BadRecordError` saying the range, which goes to the step's error output or fails the job.
"""

from __future__ import annotations

from dataclasses import dataclass

from panes.errors import BadRecordError
from panes.time import LONG_MAX, LONG_MIN


@dataclass(frozen=True)
class EventTimeRange:
    """The event times ``[lowest, highest]`` (epoch ms, both inclusive) that ``host`` represents exactly.

    The default is Flink's whole ``long`` range (nothing refused). Raises ``ValueError`` when
    ``lowest > highest``.
    """

    lowest: int = LONG_MIN
    highest: int = LONG_MAX
    host: str = "this runner"

    def __post_init__(self) -> None:
        if self.lowest > self.highest:
            raise ValueError(f"an event time range needs lowest <= highest, got [{self.lowest}, {self.highest}]")

    @property
    def is_whole(self) -> bool:
        """Whether this is Java's whole ``long`` range."""
        return self.lowest == LONG_MIN and self.highest == LONG_MAX

    def __contains__(self, timestamp: int) -> bool:
        return self.lowest <= timestamp <= self.highest

    def check(self, timestamp: int, value: object) -> int:
        """``timestamp`` when it is in the range; raises ``BadRecordError`` naming the range otherwise."""
        if self.lowest <= timestamp <= self.highest:
            return timestamp
        raise BadRecordError(
            f"the timestamp {timestamp} of {value!r} is outside [{self.lowest}, {self.highest}], the event times "
            f"{self.host} represents; its windows and timers could not fire as Flink's do, so the record is "
            "refused (map its time into the range, or run the job on the local runner, which takes any long)"
        )
