"""Processing-time clocks for the local runner."""

from __future__ import annotations


class SteppingClock:
    """A simulated clock that advances by ``step`` ms after every source element (from ``start``).

    With ``step`` equal to the watermark interval, periodic watermark generators emit once after every
    element, which makes runs repeatable and lets per-element watermark sequences be reproduced.
    """

    def __init__(self, step: int, start: int = 0) -> None:
        if step < 0:
            raise ValueError(f"SteppingClock step must be >= 0 (got {step})")
        self.step = step
        self.now = start

    def get_current_processing_time(self) -> int:
        return self.now

    def tick(self) -> None:
        self.now += self.step

    def set_current_time(self, now: int) -> None:
        self.now = now
