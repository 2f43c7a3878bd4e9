"""The timestamps-and-watermarks operator (Flink's ``TimestampsAndWatermarksOperator``).

For each record it assigns the timestamp (``assigner.extract_timestamp(value, record_timestamp)``, with
``LONG_MIN`` as the record timestamp when the record has none), forwards the record with that timestamp,
then calls ``generator.on_event``. The extracted timestamp must be an ``int`` in Java's long range or an
aware ``datetime`` (converted to epoch ms); anything else raises ``TypeError`` / ``ValueError``. Every
``auto_watermark_interval`` of processing time it calls ``generator.on_periodic_emit``. Watermarks leave
through a :class:`WatermarkEmitter`, which forwards only strictly increasing ones.

Upstream watermarks are ignored, except the final ``LONG_MAX`` one (end of input), which is forwarded;
upstream watermark statuses are ignored (this operator's own generator decides idleness). ``finish()``
asks the generator for a last periodic watermark. Flink keeps none of this in checkpoints; panes snapshots the
generator's progress (:meth:`TimestampsAndWatermarksOperator.snapshot_extra`) so a restored job goes on as an
uninterrupted one.

Per split: the operator a source's watermark strategy makes (``env.from_source(source, strategy, name)``) is
``per_split``. When the runner tells it the splits its source instance reads (:meth:`assign_splits`, before
``open``) and the split of each record (:meth:`set_current_split`), it runs a generator per split and emits their
minimum, as Flink's ``SourceOperator`` does (``panes.watermarks.splits``); otherwise, and always for
``assign_timestamps_and_watermarks``, it runs one generator.
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
from panes.watermarks.splits import SplitWatermarks
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
      default 200 ms, ``0`` disables them, negative raises ``ValueError``);
    - ``per_split`` (default ``False``): a source's own strategy, which runs a generator per split once the
      runner assigns splits (:meth:`assign_splits`).

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
        per_split: bool = False,
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
        self.per_split = bool(per_split)
        self._assigned_splits: list[Any] | None = None
        self._splits: SplitWatermarks | None = None
        self._current_split: Any = None
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
        if self._assigned_splits is not None and self.emit_progressive_watermarks:
            self._splits = SplitWatermarks(self.strategy, context, self._emitter)
            self._splits.add_all(self._assigned_splits)
        if self.auto_watermark_interval > 0 and self.emit_progressive_watermarks:
            now = self.processing_time_service.get_current_processing_time()
            self._next_periodic_emit = now + self.auto_watermark_interval
        self._apply_restored()

    # -- splits -----------------------------------------------------------------------------------------------

    def assign_splits(self, splits: list[Any]) -> None:
        """The splits (hashable, picklable ids) the source instance before this operator reads, told by the runner
        before ``open``: each gets its own generator. ``ValueError`` unless the operator is ``per_split``."""
        if not self.per_split:
            raise ValueError("only a source's own watermark strategy (env.from_source) runs a generator per split")
        self._assigned_splits = list(splits)

    def set_current_split(self, split: Any) -> None:
        """The split of the records that follow (a split not assigned yet is added, at ``LONG_MIN``)."""
        self._current_split = split

    def release_split(self, split: Any) -> None:
        """``split`` ended: it no longer holds the watermark back."""
        if self._splits is not None:
            self._splits.release(split)

    @property
    def split_watermarks(self) -> SplitWatermarks | None:
        """The per-split generators, when the operator runs them (after :meth:`assign_splits` and ``open``)."""
        return self._splits

    def _require_open(self) -> tuple[TimestampAssigner, WatermarkGenerator, WatermarkEmitter]:
        if self._assigner is None or self._generator is None or self._emitter is None:
            raise RuntimeError("TimestampsAndWatermarksOperator used before open()")
        return self._assigner, self._generator, self._emitter

    def finish(self) -> None:
        """End of input: one last periodic emit (Flink's ``finish``)."""
        super().finish()
        _, generator, emitter = self._require_open()
        self._periodic_emit(generator, emitter)

    def _periodic_emit(self, generator: WatermarkGenerator, emitter: WatermarkEmitter) -> None:
        if self._splits is not None:
            self._splits.on_periodic_emit()
        else:
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
        if self._splits is not None:
            self._splits.on_event(self._current_split, value, timestamp)
        else:
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
            self._periodic_emit(generator, emitter)
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
            "splits": None if self._splits is None else self._splits.snapshot_state(),
            "current_split": self._current_split,
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
        if self._splits is not None and data.get("splits") is not None:
            self._splits.restore_state(data["splits"])
            self._current_split = data.get("current_split")

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
        """The strategy's generator (``None`` before :meth:`open`)."""
        return self._generator

    @property
    def timestamp_assigner(self) -> TimestampAssigner | None:
        """The strategy's timestamp assigner (``None`` before :meth:`open`)."""
        return self._assigner

    @property
    def watermark_output(self) -> WatermarkOutput | None:
        """Where the generator emits its watermarks (``None`` before :meth:`open`)."""
        return self._emitter


def _reason(error: Exception) -> str:
    """The message of ``error`` as a sentence (a ``KeyError`` keeps its text without the quotes it adds)."""
    if isinstance(error, KeyError) and len(error.args) == 1 and isinstance(error.args[0], str):
        return error.args[0]
    return str(error)
