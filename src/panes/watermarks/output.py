"""``WatermarkOutput``: where a watermark generator sends its watermarks and its idle / active status."""

from __future__ import annotations

from abc import ABC, abstractmethod

from panes.elements import Watermark


class WatermarkOutput(ABC):
    """The output a :class:`~panes.watermarks.generators.WatermarkGenerator` writes to (Flink's ``WatermarkOutput``).

    Implementations decide what reaches the stream; the operator's output (:class:`WatermarkEmitter`) only
    forwards a watermark that is strictly greater than the last one it forwarded, and emitting a watermark
    marks the output active again.
    """

    @abstractmethod
    def emit_watermark(self, watermark: Watermark) -> None:
        """Emit ``watermark``; an idle output becomes active."""

    @abstractmethod
    def mark_idle(self) -> None:
        """Mark this output idle: downstream operators stop waiting for its watermarks."""

    @abstractmethod
    def mark_active(self) -> None:
        """Mark this output active again (also implied by the next emitted watermark)."""
