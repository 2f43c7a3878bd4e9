"""Labels for time axes: ISO 8601 UTC when the times look like epoch milliseconds, plain milliseconds otherwise.

Times "look like epoch milliseconds" when every finite one lies in ``[2000-01-01, 2100-01-01)`` UTC. Tick
steps are then round durations (1 ms ... 1 day and whole days beyond), and a label shows milliseconds only
when a step needs them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone

EPOCH_FROM = 946_684_800_000  # 2000-01-01T00:00:00Z
EPOCH_UNTIL = 4_102_444_800_000  # 2100-01-01T00:00:00Z

_SECOND = 1_000
_MINUTE = 60 * _SECOND
_HOUR = 60 * _MINUTE
_DAY = 24 * _HOUR
ROUND_STEPS: list[int] = [
    *(m for e in range(3) for m in (10**e, 2 * 10**e, 5 * 10**e)),  # 1 ms .. 500 ms
    _SECOND, 2 * _SECOND, 5 * _SECOND, 10 * _SECOND, 15 * _SECOND, 30 * _SECOND,
    _MINUTE, 2 * _MINUTE, 5 * _MINUTE, 10 * _MINUTE, 15 * _MINUTE, 30 * _MINUTE,
    _HOUR, 2 * _HOUR, 3 * _HOUR, 6 * _HOUR, 12 * _HOUR, _DAY,
]  # fmt: skip


def looks_like_epoch_ms(times: Iterable[int]) -> bool:
    """Whether every time in ``times`` is in ``[2000-01-01, 2100-01-01)`` as epoch ms (``False`` when empty)."""
    seen = False
    for time in times:
        if not EPOCH_FROM <= time < EPOCH_UNTIL:
            return False
        seen = True
    return seen


def iso_utc(time: int, with_ms: bool = True) -> str:
    """``time`` (epoch ms) as ``YYYY-MM-DDTHH:MM:SS[.mmm]Z``."""
    moment = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=time)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if with_ms:
        text += f".{time % 1000:03d}"
    return text + "Z"


def tick_step(low: float, high: float, max_ticks: int = 7) -> int:
    """The smallest round step (ms) that puts at most ``max_ticks`` ticks on ``[low, high]``."""
    span = max(high - low, 1.0)
    for step in ROUND_STEPS:
        if span / step <= max_ticks:
            return step
    days = math.ceil(span / max_ticks / _DAY)
    return days * _DAY


def ticks(low: float, high: float, max_ticks: int = 7) -> list[int]:
    """Round tick positions (epoch ms) on ``[low, high]``."""
    step = tick_step(low, high, max_ticks)
    first = math.ceil(low / step) * step
    return list(range(int(first), int(high) + 1, step))


class TimeFormat:
    """How one axis labels its times: ``epoch`` (ISO UTC) or plain ms; :meth:`label` and :meth:`axis_title`."""

    def __init__(self, epoch: bool, step: int = 1_000) -> None:
        self.epoch = epoch
        self.step = step

    def label(self, time: float) -> str:
        value = round(time)
        if self.epoch:
            return iso_utc(value, with_ms=self.step % 1000 != 0 or value % 1000 != 0)
        return f"{value:,}"

    def describe(self, time: int) -> str:
        """``time`` for a reader: ISO UTC with milliseconds, or ms."""
        return iso_utc(time) if self.epoch else f"{time} ms"

    def axis_title(self, what: str) -> str:
        return f"{what} (UTC)" if self.epoch else f"{what} (ms)"
