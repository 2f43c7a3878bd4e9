"""Test doubles shared by the watermark tests."""

from __future__ import annotations

from panes.elements import Watermark, WatermarkStatus
from panes.watermarks import WatermarkOutput


class RecordingOutput(WatermarkOutput):
    """A generator output that records everything (like Flink's ``TestingWatermarkOutput``)."""

    def __init__(self) -> None:
        self.events: list[Watermark | WatermarkStatus] = []
        self.idle = False

    def emit_watermark(self, watermark: Watermark) -> None:
        self.events.append(watermark)
        self.idle = False

    def mark_idle(self) -> None:
        self.events.append(WatermarkStatus.IDLE)
        self.idle = True

    def mark_active(self) -> None:
        self.events.append(WatermarkStatus.ACTIVE)
        self.idle = False

    @property
    def watermarks(self) -> list[int]:
        return [e.timestamp for e in self.events if isinstance(e, Watermark)]

    @property
    def last_watermark(self) -> int | None:
        marks = self.watermarks
        return marks[-1] if marks else None


class ValveRecorder:
    """A valve output whose :meth:`pop` returns the oldest unread emission, or ``None`` (Flink's test output)."""

    def __init__(self) -> None:
        self.queue: list[Watermark | WatermarkStatus] = []

    def emit_watermark(self, watermark: Watermark) -> None:
        self.queue.append(watermark)

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        self.queue.append(status)

    def pop(self) -> Watermark | WatermarkStatus | None:
        return self.queue.pop(0) if self.queue else None
