"""The timestamps-and-watermarks operator (Flink's ``TimestampsAndWatermarksOperator``).

For each record it assigns the timestamp (``assigner.extract_timestamp(value, record_timestamp)``, with
``LONG_MIN`` as the record timestamp when the record has none), forwards the record with that timestamp,
then calls ``generator.on_event``. The extracted timestamp must be an ``int`` in Java's long range or an
aware ``datetime`` (converted to epoch ms); anything else raises ``TypeError`` / ``ValueError``. Every
``auto_watermark_interval`` of processing time it calls ``generator.on_periodic_emit``. Watermarks leave
through a :class:`WatermarkEmitter`, which forwards only strictly increasing ones.

Upstream watermarks are ignored, except the final ``LONG_MAX`` one (end of input), which is forwarded;
upstream watermark statuses are ignored (this operator's own generator decides idleness). ``finish()``
asks the generator for a last periodic watermark. The operator keeps no checkpointed state: after a restore
its generator and emitter start afresh, as in Flink.
"""

from __future__ import annotations

from typing import Any

from panes.elements import MAX_WATERMARK, StreamRecord, Watermark, WatermarkStatus
from panes.errors import BadRecordError
from panes.operators.base import OneInputStreamOperator, Output
from panes.time import LONG_MAX, LONG_MIN, DurationLike, duration_ms
from panes.watermarks.assigners import TimestampAssigner, checked_timestamp
from panes.watermarks.clock import PausableClock
from panes.watermarks.generators import NoWatermarksGenerator, WatermarkGenerator, WatermarkGeneratorContext
from panes.watermarks.output import WatermarkOutput
from panes.watermarks.strategy import WatermarkStrategy
from panes.watermarks.time_range import EventTimeRange

DEFAULT_AUTO_WATERMARK_INTERVAL: int = 200
"""Flink's ``pipeline.auto-watermark-interval`` default, in ms."""


class WatermarkEmitter(WatermarkOutput):
    """The generator's output inside the operator (Flink's ``TimestampsAndWatermarksOperator.WatermarkEmitter``).

    Forwards a watermark only when it is strictly greater than the last forwarded one (initially
    ``LONG_MIN``), marking the output ACTIVE first if it was idle. ``mark_idle`` / ``mark_active`` emit
    IDLE / ACTIVE only on a change.
    """

    __slots__ = ("_output", "current_watermark", "idle")

    def __init__(self, output: Output) -> None:
        self._output = output
        self.current_watermark = LONG_MIN
        self.idle = False

    def emit_watermark(self, watermark: Watermark) -> None:
        timestamp = watermark.timestamp
        if timestamp <= self.current_watermark:
            return
        self.current_watermark = timestamp
        self.mark_active()
        self._output.emit_watermark(watermark)

    def mark_idle(self) -> None:
        if not self.idle:
            self.idle = True
            self._output.emit_watermark_status(WatermarkStatus.IDLE)

    def mark_active(self) -> None:
        if self.idle:
            self.idle = False
            self._output.emit_watermark_status(WatermarkStatus.ACTIVE)


def validate_auto_watermark_interval(interval: DurationLike) -> int:
    """``interval`` in ms; ``0`` disables periodic emission, a negative value raises ``ValueError``."""
    millis = duration_ms(interval, name="auto_watermark_interval")
    if millis < 0:
        raise ValueError(f"auto_watermark_interval must not be negative (got {millis} ms)")
    return millis


class TimestampsAndWatermarksOperator(OneInputStreamOperator):
    """Assigns timestamps and generates watermarks from ``strategy`` (see the module docstring).

    - ``emit_progressive_watermarks``: ``False`` (Flink's batch mode) replaces the generator with
      :class:`NoWatermarksGenerator` and emits no periodic watermarks;
    - ``auto_watermark_interval``: processing time between periodic emits (``timedelta`` or ``int`` ms,
      default 200 ms, ``0`` disables them, negative raises ``ValueError``).

    Periodic emission follows Flink's timer: ``open()`` schedules the first emit at ``now + interval``;
    when processing time reaches it (:meth:`advance_processing_time`), the generator emits once and the next
    emit is scheduled at ``now + interval``, so a clock that jumps over several intervals yields one emit.
    Idleness is measured on :attr:`input_activity_clock`, a pausable view of the processing-time clock that a
    runner may pause while the input is blocked.
    """

    def __init__(
        self,
        strategy: WatermarkStrategy,
        *,
        emit_progressive_watermarks: bool = True,
        auto_watermark_interval: DurationLike = DEFAULT_AUTO_WATERMARK_INTERVAL,
    ) -> None:
        super().__init__()
        if not isinstance(strategy, WatermarkStrategy):
            raise TypeError(f"expected a WatermarkStrategy, got {type(strategy).__name__}")
        self.strategy = strategy
        self.emit_progressive_watermarks = bool(emit_progressive_watermarks)
        self.auto_watermark_interval = validate_auto_watermark_interval(auto_watermark_interval)
        self._assigner: TimestampAssigner | None = None
        self._generator: WatermarkGenerator | None = None
        self._emitter: WatermarkEmitter | None = None
        self._next_periodic_emit: int | None = None
        self.input_activity_clock: PausableClock | None = None
        self.event_time_range = EventTimeRange()
        """The event times the host represents; a record whose timestamp is outside is a bad record (the
        default, Java's whole long range, refuses none; the Spark runner sets its own)."""

    # -- lifecycle ----------------------------------------------------------------------------------------

    def open(self) -> None:
        super().open()
        self.input_activity_clock = PausableClock(self.processing_time_service)
        self._assigner = self.strategy.create_timestamp_assigner()
        if self.emit_progressive_watermarks:
            context = WatermarkGeneratorContext(self.input_activity_clock)
            self._generator = self.strategy.create_watermark_generator(context)
        else:
            self._generator = NoWatermarksGenerator()
        self._emitter = WatermarkEmitter(self.output)
        if self.auto_watermark_interval > 0 and self.emit_progressive_watermarks:
            now = self.processing_time_service.get_current_processing_time()
            self._next_periodic_emit = now + self.auto_watermark_interval
        self._apply_restored()

    def _require_open(self) -> tuple[TimestampAssigner, WatermarkGenerator, WatermarkEmitter]:
        if self._assigner is None or self._generator is None or self._emitter is None:
            raise RuntimeError("TimestampsAndWatermarksOperator used before open()")
        return self._assigner, self._generator, self._emitter

    def finish(self) -> None:
        """End of input: one last periodic emit (Flink's ``finish``)."""
        super().finish()
        _, generator, emitter = self._require_open()
        generator.on_periodic_emit(emitter)

    # -- elements -----------------------------------------------------------------------------------------

    def process_element(self, record: StreamRecord[Any]) -> None:
        assigner, generator, emitter = self._require_open()
        value = record.value
        previous = LONG_MIN if record.timestamp is None else record.timestamp
        try:
            timestamp = assigner.extract_timestamp(value, previous)
            if type(timestamp) is not int or not LONG_MIN <= timestamp <= LONG_MAX:
                timestamp = checked_timestamp(timestamp, f"the timestamp extracted by {assigner!r}")
        except (KeyError, IndexError, AttributeError, TypeError, ValueError) as error:
            if isinstance(error, BadRecordError):
                raise
            raise BadRecordError(
                f"no timestamp for {value!r}: {_reason(error)}.\nGive every element a timestamp that "
                f"{assigner!r} can read, or set side_output_errors(tag) on this step to send such elements to an "
                "error side output as ErrorRecords and go on."
            ) from error
        if timestamp not in self.event_time_range:
            self.event_time_range.check(timestamp, value)
        self.output.collect(StreamRecord(value, timestamp))
        generator.on_event(value, timestamp, emitter)

    def process_watermark(self, watermark: Watermark) -> None:
        """Upstream watermarks are ignored, except ``LONG_MAX`` (end of input), which is forwarded."""
        if watermark.timestamp == LONG_MAX:
            _, _, emitter = self._require_open()
            emitter.emit_watermark(MAX_WATERMARK)

    def process_watermark_status(self, status: WatermarkStatus) -> None:
        """Upstream statuses are ignored: this operator's generator decides idleness."""

    # -- processing time ----------------------------------------------------------------------------------

    def advance_processing_time(self, now: int) -> None:
        """Processing time moved to ``now``: emit periodically if the next emit is due."""
        super().advance_processing_time(now)
        due = self._next_periodic_emit
        if due is not None and now >= due:
            _, generator, emitter = self._require_open()
            generator.on_periodic_emit(emitter)
            self._next_periodic_emit = now + self.auto_watermark_interval

    def next_processing_time_timer(self) -> int | None:
        """When the next periodic emit is due (``None`` when periodic emission is off or before ``open``)."""
        return self._next_periodic_emit

    # -- snapshots ------------------------------------------------------------------------------------------

    def snapshot_extra(self) -> Any:
        """The generator's progress, the last emitted watermark and idleness, and the next periodic emit.

        Flink keeps none of this in checkpoints (a restored generator starts from scratch); panes keeps it so
        a restored job continues exactly as an uninterrupted one.
        """
        _, generator, emitter = self._require_open()
        return {
            "generator": generator.snapshot_state(),
            "emitted": emitter.current_watermark,
            "idle": emitter.idle,
            "next_emit": self._next_periodic_emit,
        }

    def restore_extra(self, data: Any) -> None:
        self._restored_extra = data

    def _apply_restored(self) -> None:
        data = getattr(self, "_restored_extra", None)
        if not data:
            return
        _, generator, emitter = self._require_open()
        generator.restore_state(data["generator"])
        emitter.current_watermark = data["emitted"]
        emitter.idle = data["idle"]
        if data["next_emit"] is not None and self._next_periodic_emit is not None:
            self._next_periodic_emit = data["next_emit"]

    # -- introspection --------------------------------------------------------------------------------------

    @property
    def emitted_watermark(self) -> int:
        """The last watermark this operator emitted (``LONG_MIN`` before any)."""
        return LONG_MIN if self._emitter is None else self._emitter.current_watermark

    @property
    def is_idle(self) -> bool:
        """Whether this operator's output is currently marked idle."""
        return self._emitter is not None and self._emitter.idle

    @property
    def watermark_generator(self) -> WatermarkGenerator | None:
        return self._generator


def _reason(error: Exception) -> str:
    """The message of ``error`` as a sentence (a ``KeyError`` keeps its text without the quotes it adds)."""
    if isinstance(error, KeyError) and len(error.args) == 1 and isinstance(error.args[0], str):
        return error.args[0]
    return str(error)
