"""``StatusWatermarkValve``: how the watermarks and statuses of several inputs combine (Flink's valve).

Each input channel has a watermark (initially ``LONG_MIN``), a status (initially ACTIVE) and an *aligned*
flag (initially set). The rules:

- A watermark from an ACTIVE channel that is larger than the channel's previous one is recorded; smaller
  or equal ones, and any from an IDLE channel, are ignored.
- The output watermark is the minimum over the *aligned* channels. It is emitted only when it is larger than
  the last output watermark: the output never goes backwards.
- A channel that goes IDLE leaves the aligned set. If it held the minimum, a new minimum over the others may
  be emitted. If it was the last ACTIVE channel and its watermark equals the last output, the maximum
  watermark over *all* channels is emitted (everything is flushed); then the valve emits IDLE.
- A channel that becomes ACTIVE again rejoins the aligned set at once if its watermark is at least the last
  output watermark; otherwise it rejoins once a watermark brings it there (it "catches up"). The valve
  emits ACTIVE if it was IDLE.
- A status that does not change the channel's status emits nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from panes.elements import Watermark, WatermarkStatus
from panes.time import LONG_MIN


class ValveOutput(Protocol):
    """Where the valve emits (an operator's ``Output`` fits)."""

    def emit_watermark(self, watermark: Watermark) -> None: ...

    def emit_watermark_status(self, status: WatermarkStatus) -> None: ...


@dataclass(frozen=True)
class InputChannelStatus:
    """A snapshot of one input channel: its last watermark, its status and whether it is aligned."""

    watermark: int
    status: WatermarkStatus
    is_watermark_aligned: bool


class _Channel:
    __slots__ = ("aligned", "status", "watermark")

    def __init__(self) -> None:
        self.watermark = LONG_MIN
        self.status = WatermarkStatus.ACTIVE
        self.aligned = True


class StatusWatermarkValve:
    """Combines ``num_inputs`` channels' watermarks and statuses into one output (Flink's ``StatusWatermarkValve``).

    Call :meth:`input_watermark` and :meth:`input_watermark_status` with the channel index (0-based); the
    valve calls ``output`` only when a new watermark or status must go downstream (see the module docstring).
    ``num_inputs`` must be at least 1 (``ValueError``); a channel index out of range raises ``IndexError``.
    """

    __slots__ = ("_channels", "last_output_status", "last_output_watermark")

    def __init__(self, num_inputs: int) -> None:
        if isinstance(num_inputs, bool) or not isinstance(num_inputs, int):
            raise TypeError(f"num_inputs must be an int, got {type(num_inputs).__name__}")
        if num_inputs < 1:
            raise ValueError(f"a valve needs at least one input (got num_inputs={num_inputs})")
        self._channels = [_Channel() for _ in range(num_inputs)]
        self.last_output_watermark = LONG_MIN
        self.last_output_status = WatermarkStatus.ACTIVE

    @property
    def num_inputs(self) -> int:
        return len(self._channels)

    def _channel(self, index: int) -> _Channel:
        if not 0 <= index < len(self._channels):
            raise IndexError(f"input channel {index} out of range [0, {len(self._channels)})")
        return self._channels[index]

    def get_input_channel_status(self, index: int) -> InputChannelStatus:
        channel = self._channel(index)
        return InputChannelStatus(channel.watermark, channel.status, channel.aligned)

    def input_watermark(self, watermark: Watermark | int, index: int, output: ValveOutput) -> None:
        """Feed a watermark of channel ``index``; may emit a new output watermark."""
        channel = self._channel(index)
        timestamp = watermark.timestamp if isinstance(watermark, Watermark) else watermark
        if not (self.last_output_status.is_active() and channel.status.is_active()):
            return
        if timestamp <= channel.watermark:
            return
        channel.watermark = timestamp
        if not channel.aligned and timestamp >= self.last_output_watermark:
            channel.aligned = True
        self._emit_new_min_over_aligned(output)

    def input_watermark_status(self, status: WatermarkStatus, index: int, output: ValveOutput) -> None:
        """Feed a status of channel ``index``; may emit a watermark and/or a status."""
        channel = self._channel(index)
        if status.is_idle() and channel.status.is_active():
            channel.status = WatermarkStatus.IDLE
            channel.aligned = False
            if not any(c.status.is_active() for c in self._channels):
                if channel.watermark == self.last_output_watermark:
                    self._emit_max_over_all(output)
                self.last_output_status = WatermarkStatus.IDLE
                output.emit_watermark_status(WatermarkStatus.IDLE)
            elif channel.watermark == self.last_output_watermark:
                self._emit_new_min_over_aligned(output)
        elif status.is_active() and channel.status.is_idle():
            channel.status = WatermarkStatus.ACTIVE
            if channel.watermark >= self.last_output_watermark:
                channel.aligned = True
            if self.last_output_status.is_idle():
                self.last_output_status = WatermarkStatus.ACTIVE
                output.emit_watermark_status(WatermarkStatus.ACTIVE)

    def _emit_new_min_over_aligned(self, output: ValveOutput) -> None:
        aligned = [c.watermark for c in self._channels if c.aligned]
        if aligned:
            new_min = min(aligned)
            if new_min > self.last_output_watermark:
                self.last_output_watermark = new_min
                output.emit_watermark(Watermark(new_min))

    def _emit_max_over_all(self, output: ValveOutput) -> None:
        new_max = max(c.watermark for c in self._channels)
        if new_max > self.last_output_watermark:
            self.last_output_watermark = new_max
            output.emit_watermark(Watermark(new_max))
