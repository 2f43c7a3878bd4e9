"""One watermark out of several: a watermark and an idle flag per *split*, combined into their minimum (Flink's
``WatermarkOutputMultiplexer`` with its ``CombinedWatermarkStatus``).

Each registered split starts at ``LONG_MIN`` and active, so a split that has not emitted yet holds the combined
watermark at ``LONG_MIN``. A split's watermark only grows (a smaller one is ignored) and setting one makes the split
active again. The combined watermark is the minimum over the splits that are not idle; it is emitted to the
underlying output only when it grows; when every split is idle the output is marked idle instead (and nothing is
emitted). With no split registered nothing is emitted at all.

A split is written through one of two outputs (:meth:`WatermarkMultiplexer.immediate`,
:meth:`WatermarkMultiplexer.deferred`): the immediate one combines at once (a watermark only when it is above the
combined one; idleness changes always), the deferred one only records, and :meth:`WatermarkMultiplexer.on_periodic_emit`
combines what the deferred outputs recorded. Flink's source writes a split's on-event watermarks immediately and its
periodic ones deferred, combining once all splits had their periodic emit. A released split
(:meth:`WatermarkMultiplexer.unregister`) no longer holds the watermark back, from the next combination on.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from panes.elements import Watermark
from panes.time import LONG_MIN
from panes.watermarks.output import WatermarkOutput


class PartialWatermark:
    """One split's watermark (``LONG_MIN`` until it emits) and whether it is idle (not at first)."""

    __slots__ = ("idle", "watermark")

    def __init__(self, watermark: int = LONG_MIN, idle: bool = False) -> None:
        self.watermark = watermark
        self.idle = idle

    def set_watermark(self, watermark: int) -> bool:
        """Make the split active and raise its watermark to ``watermark``; whether it grew."""
        self.idle = False
        if watermark > self.watermark:
            self.watermark = watermark
            return True
        return False

    def __repr__(self) -> str:
        return f"PartialWatermark({self.watermark}{', idle' if self.idle else ''})"


def combined_watermark(partials: list[PartialWatermark]) -> int | None:
    """The minimum watermark over the active ``partials``; ``None`` when there are none or all are idle."""
    active = [p.watermark for p in partials if not p.idle]
    return min(active) if active else None


class WatermarkMultiplexer:
    """Combines the watermarks of registered splits into ``output`` (see the module docstring)."""

    __slots__ = ("_output", "_partials", "combined", "idle")

    def __init__(self, output: WatermarkOutput) -> None:
        self._output = output
        self._partials: dict[Hashable, PartialWatermark] = {}
        self.combined = LONG_MIN
        """The last combined watermark (``LONG_MIN`` before any)."""
        self.idle = False
        """Whether every split was idle at the last combination."""

    def register(self, split: Hashable) -> None:
        """A new split, at ``LONG_MIN`` and active; ``ValueError`` if ``split`` is registered already."""
        if split in self._partials:
            raise ValueError(f"split {split!r} is registered already")
        self._partials[split] = PartialWatermark()

    def unregister(self, split: Hashable) -> bool:
        """Release ``split`` (it no longer counts); whether it was registered."""
        return self._partials.pop(split, None) is not None

    def __contains__(self, split: Hashable) -> bool:
        return split in self._partials

    def splits(self) -> list[Hashable]:
        """The registered splits, in the order they were registered."""
        return list(self._partials)

    def partial(self, split: Hashable) -> PartialWatermark:
        """The state of ``split`` (``KeyError`` when it is not registered)."""
        return self._partials[split]

    def immediate(self, split: Hashable) -> WatermarkOutput:
        """The output of ``split`` that combines at once."""
        return _Immediate(self, self._partials[split])

    def deferred(self, split: Hashable) -> WatermarkOutput:
        """The output of ``split`` that only records, for :meth:`on_periodic_emit` to combine."""
        return _Deferred(self._partials[split])

    def on_periodic_emit(self) -> None:
        """Combine what the deferred outputs recorded."""
        self.update()

    def update(self) -> None:
        """Emit the combined watermark when it grew, or mark the output idle when every split is idle."""
        if not self._partials:
            return
        lowest = combined_watermark(list(self._partials.values()))
        self.idle = lowest is None
        if lowest is not None and lowest > self.combined:
            self.combined = lowest
            self._output.emit_watermark(Watermark(lowest))
        elif self.idle:
            self._output.mark_idle()

    # -- snapshots ------------------------------------------

    def snapshot_state(self) -> dict[str, Any]:
        """The splits' watermarks and idleness and the combined watermark (picklable)."""
        return {
            "partials": {split: (p.watermark, p.idle) for split, p in self._partials.items()},
            "combined": self.combined,
            "idle": self.idle,
        }

    def restore_state(self, state: dict[str, Any]) -> None:
        """Take back :meth:`snapshot_state` for the splits registered now (others in ``state`` are left out)."""
        for split, (watermark, idle) in state["partials"].items():
            if split in self._partials:
                self._partials[split] = PartialWatermark(watermark, idle)
        self.combined = state["combined"]
        self.idle = state["idle"]


class _Immediate(WatermarkOutput):
    __slots__ = ("_multiplexer", "_partial")

    def __init__(self, multiplexer: WatermarkMultiplexer, partial: PartialWatermark) -> None:
        self._multiplexer = multiplexer
        self._partial = partial

    def emit_watermark(self, watermark: Watermark) -> None:
        grew = self._partial.set_watermark(watermark.timestamp)
        if grew and watermark.timestamp > self._multiplexer.combined:
            self._multiplexer.update()

    def mark_idle(self) -> None:
        self._partial.idle = True
        self._multiplexer.update()

    def mark_active(self) -> None:
        self._partial.idle = False
        self._multiplexer.update()


class _Deferred(WatermarkOutput):
    __slots__ = ("_partial",)

    def __init__(self, partial: PartialWatermark) -> None:
        self._partial = partial

    def emit_watermark(self, watermark: Watermark) -> None:
        self._partial.set_watermark(watermark.timestamp)

    def mark_idle(self) -> None:
        self._partial.idle = True

    def mark_active(self) -> None:
        self._partial.idle = False
