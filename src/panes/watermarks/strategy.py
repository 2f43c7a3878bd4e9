"""``WatermarkStrategy``: how a stream gets its event timestamps and its watermarks (Flink's ``WatermarkStrategy``).

A strategy is an immutable, validated description: a watermark generator supplier, an optional timestamp
assigner, idleness timeouts and watermark-alignment parameters. Every ``with_*`` method returns a new
strategy. Operators call :meth:`WatermarkStrategy.create_timestamp_assigner` and
:meth:`WatermarkStrategy.create_watermark_generator` once per operator instance.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from panes.time import DurationLike, duration_ms
from panes.watermarks.alignment import (
    DEFAULT_UPDATE_INTERVAL,
    WATERMARK_ALIGNMENT_DISABLED,
    WatermarkAlignmentParams,
)
from panes.watermarks.assigners import (
    ColumnTimestampAssigner,
    FunctionTimestampAssigner,
    RecordTimestampAssigner,
    TimestampAssigner,
    TimestampAssignerLike,
    as_timestamp_assigner,
)
from panes.watermarks.generators import (
    AscendingTimestampsWatermarks,
    BoundedOutOfOrdernessWatermarks,
    NoWatermarksGenerator,
    WatermarkGenerator,
    WatermarkGeneratorContext,
    WatermarkGeneratorSupplier,
)
from panes.watermarks.idleness import WatermarksWithIdleness, validate_idle_timeout


class WatermarkStrategyKind(Enum):
    """Which factory built the strategy; runners use it to vectorise the built-in generators."""

    BOUNDED_OUT_OF_ORDERNESS = "bounded_out_of_orderness"
    MONOTONOUS = "monotonous"
    NO_WATERMARKS = "no_watermarks"
    GENERATOR = "generator"


@dataclass(frozen=True)
class _BoundedSupplier:
    max_out_of_orderness: int

    def __call__(self, context: WatermarkGeneratorContext) -> WatermarkGenerator:
        return BoundedOutOfOrdernessWatermarks(self.max_out_of_orderness)


@dataclass(frozen=True)
class _AscendingSupplier:
    def __call__(self, context: WatermarkGeneratorContext) -> WatermarkGenerator:
        return AscendingTimestampsWatermarks()


@dataclass(frozen=True)
class _NoWatermarksSupplier:
    def __call__(self, context: WatermarkGeneratorContext) -> WatermarkGenerator:
        return NoWatermarksGenerator()


@dataclass(frozen=True)
class _ClassSupplier:
    generator_class: type[WatermarkGenerator]

    def __call__(self, context: WatermarkGeneratorContext) -> WatermarkGenerator:
        return self.generator_class()


@dataclass(frozen=True, eq=False)
class _CopySupplier:
    prototype: WatermarkGenerator

    def __call__(self, context: WatermarkGeneratorContext) -> WatermarkGenerator:
        return copy.deepcopy(self.prototype)


def _instantiate_assigner(assigner: TimestampAssigner) -> TimestampAssigner:
    """A private copy of ``assigner`` for one operator instance, as Flink's serialisation gives each task.

    The stateless built-ins are shared; a user's :class:`TimestampAssigner` object is deep-copied.
    """
    if isinstance(assigner, RecordTimestampAssigner | FunctionTimestampAssigner | ColumnTimestampAssigner):
        return assigner
    return copy.deepcopy(assigner)


def _as_supplier(generator: Any) -> WatermarkGeneratorSupplier:
    if isinstance(generator, type):
        if issubclass(generator, WatermarkGenerator):
            return _ClassSupplier(generator)
        raise TypeError(f"{generator.__name__} is not a WatermarkGenerator subclass")
    if isinstance(generator, WatermarkGenerator):
        return _CopySupplier(generator)
    if callable(generator):
        supplier: WatermarkGeneratorSupplier = generator
        return supplier
    raise TypeError(
        "for_generator expects a WatermarkGenerator subclass, a WatermarkGenerator instance (copied for each "
        f"operator) or a callable (context) -> WatermarkGenerator, not {type(generator).__name__}"
    )


@dataclass(frozen=True)
class WatermarkStrategy:
    """An immutable watermark strategy; build it with the ``for_*`` / ``no_watermarks`` factories.

    Fields (all validated at construction):

    - ``generator_supplier``: ``(WatermarkGeneratorContext) -> WatermarkGenerator``, called per operator;
    - ``kind`` and ``max_out_of_orderness`` (ms, for the bounded and monotonous kinds, else ``None``);
    - ``timestamp_assigner``: ``None`` keeps each record's own timestamp (Flink's default);
    - ``idle_timeouts``: each wraps the generator in :class:`WatermarksWithIdleness`, innermost first
      (one per ``with_idleness`` call, as Flink nests its wrappers); each must be > 0 ms;
    - ``alignment``: the watermark-alignment parameters (disabled by default).
    """

    generator_supplier: WatermarkGeneratorSupplier
    kind: WatermarkStrategyKind = WatermarkStrategyKind.GENERATOR
    max_out_of_orderness: int | None = None
    timestamp_assigner: TimestampAssigner | None = None
    idle_timeouts: tuple[int, ...] = ()
    alignment: WatermarkAlignmentParams = WATERMARK_ALIGNMENT_DISABLED

    def __post_init__(self) -> None:
        if not callable(self.generator_supplier):
            raise TypeError("generator_supplier must be callable (context) -> WatermarkGenerator")
        if not isinstance(self.kind, WatermarkStrategyKind):
            raise TypeError(f"kind must be a WatermarkStrategyKind, got {type(self.kind).__name__}")
        bound = self.max_out_of_orderness
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int) or bound < 0):
            raise ValueError(f"max_out_of_orderness must be None or an int >= 0, got {bound!r}")
        if self.timestamp_assigner is not None and not isinstance(self.timestamp_assigner, TimestampAssigner):
            raise TypeError(
                f"timestamp_assigner must be a TimestampAssigner or None, got {type(self.timestamp_assigner).__name__}"
            )
        if not isinstance(self.idle_timeouts, tuple):
            raise TypeError("idle_timeouts must be a tuple of int milliseconds")
        for timeout in self.idle_timeouts:
            validate_idle_timeout(timeout)
        if not isinstance(self.alignment, WatermarkAlignmentParams):
            raise TypeError(f"alignment must be WatermarkAlignmentParams, got {type(self.alignment).__name__}")

    # -- factories -----------------------------------------------------------------------------------------

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: DurationLike) -> WatermarkStrategy:
        """Periodic watermarks ``max_timestamp - max_out_of_orderness - 1`` (see
        :class:`BoundedOutOfOrdernessWatermarks`). ``timedelta`` or ``int`` ms; negative raises ``ValueError``.
        """
        millis = duration_ms(max_out_of_orderness, name="max_out_of_orderness")
        if millis < 0:
            raise ValueError(f"max_out_of_orderness cannot be negative (got {millis} ms)")
        return WatermarkStrategy(_BoundedSupplier(millis), WatermarkStrategyKind.BOUNDED_OUT_OF_ORDERNESS, millis)

    @staticmethod
    def for_monotonous_timestamps() -> WatermarkStrategy:
        """Periodic watermarks ``max_timestamp - 1`` for ascending timestamps (``AscendingTimestampsWatermarks``)."""
        return WatermarkStrategy(_AscendingSupplier(), WatermarkStrategyKind.MONOTONOUS, 0)

    @staticmethod
    def no_watermarks() -> WatermarkStrategy:
        """No watermarks at all (:class:`NoWatermarksGenerator`), for processing-time pipelines."""
        return WatermarkStrategy(_NoWatermarksSupplier(), WatermarkStrategyKind.NO_WATERMARKS)

    @staticmethod
    def for_generator(generator: Any) -> WatermarkStrategy:
        """A strategy around a user generator, periodic (emits in ``on_periodic_emit``) or punctuated (in
        ``on_event``).

        ``generator`` is a callable ``(WatermarkGeneratorContext) -> WatermarkGenerator`` (Flink's supplier),
        a :class:`WatermarkGenerator` subclass (instantiated without arguments) or an instance (deep-copied
        for each operator, so instances never share state). Anything else raises ``TypeError``.
        """
        return WatermarkStrategy(_as_supplier(generator), WatermarkStrategyKind.GENERATOR)

    # -- builders ------------------------------------------------------------------------------------------

    def with_timestamp_assigner(self, timestamp_assigner: TimestampAssignerLike) -> WatermarkStrategy:
        """This strategy with another assigner: a :class:`TimestampAssigner`, a callable
        ``(element, record_timestamp) -> timestamp`` or a column name (the element is a row: a mapping or an
        object with that attribute). ``None`` raises ``TypeError``, an empty name ``ValueError``.
        """
        return replace(self, timestamp_assigner=as_timestamp_assigner(timestamp_assigner))

    def with_idleness(self, idle_timeout: DurationLike) -> WatermarkStrategy:
        """This strategy with idleness detection (see :mod:`panes.watermarks.idleness`): an input without
        events for ``idle_timeout`` is marked idle and stops holding back downstream watermarks.
        ``timedelta`` or ``int`` ms; it must be greater than zero (``ValueError``).
        """
        return replace(self, idle_timeouts=(*self.idle_timeouts, validate_idle_timeout(idle_timeout)))

    def with_watermark_alignment(
        self,
        watermark_group: str,
        max_allowed_watermark_drift: DurationLike,
        update_interval: DurationLike = DEFAULT_UPDATE_INTERVAL,
    ) -> WatermarkStrategy:
        """This strategy with watermark alignment (see :mod:`panes.watermarks.alignment`): a source whose
        watermark runs more than ``max_allowed_watermark_drift`` ahead of its group's is paused.

        ``watermark_group`` must be a ``str`` (``TypeError``), the drift ``>= 0`` and ``update_interval``
        (how often sources report and coordinators announce; default 1000 ms) ``> 0`` (``ValueError``).
        It only takes effect at sources; other strategy settings are kept.
        """
        params = WatermarkAlignmentParams.of(watermark_group, max_allowed_watermark_drift, update_interval)
        return replace(self, alignment=params)

    # -- what operators and runners use -------------------------------------------------------------------

    def create_timestamp_assigner(self) -> TimestampAssigner:
        """The assigner for one operator instance (:class:`RecordTimestampAssigner` when none was set)."""
        if self.timestamp_assigner is None:
            return RecordTimestampAssigner()
        return _instantiate_assigner(self.timestamp_assigner)

    def create_watermark_generator(self, context: WatermarkGeneratorContext | None = None) -> WatermarkGenerator:
        """A fresh generator for one operator instance, wrapped for idleness as configured.

        ``context`` supplies the clock idleness is measured on (default: the wall clock). Raises
        ``TypeError`` if the supplier returns something that is not a :class:`WatermarkGenerator`.
        """
        ctx = WatermarkGeneratorContext() if context is None else context
        generator = self.generator_supplier(ctx)
        if not isinstance(generator, WatermarkGenerator):
            raise TypeError(f"the generator supplier returned {type(generator).__name__}, not a WatermarkGenerator")
        for timeout in self.idle_timeouts:
            generator = WatermarksWithIdleness(generator, timeout, ctx.input_activity_clock)
        return generator

    def get_alignment_parameters(self) -> WatermarkAlignmentParams:
        return self.alignment

    @property
    def idle_timeout(self) -> int | None:
        """The outermost idleness timeout in ms (the last ``with_idleness``), or ``None``."""
        return self.idle_timeouts[-1] if self.idle_timeouts else None

    @property
    def timestamp_column(self) -> str | None:
        """The column name when the timestamp is a field of the element, else ``None``."""
        assigner = self.timestamp_assigner
        return assigner.column if isinstance(assigner, ColumnTimestampAssigner) else None
