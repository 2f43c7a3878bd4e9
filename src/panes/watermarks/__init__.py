"""Time and watermarks: Flink's watermark strategies, generators, idleness, alignment and the valve.

Every public name of the package is importable from here. Times are ``int`` epoch milliseconds; durations
accept ``timedelta`` or ``int`` ms.
"""

from panes.watermarks.alignment import (
    DEFAULT_UPDATE_INTERVAL,
    WATERMARK_ALIGNMENT_DISABLED,
    SourceWatermarkAlignment,
    WatermarkAggregator,
    WatermarkAlignmentCoordinator,
    WatermarkAlignmentParams,
    max_allowed_watermark,
)
from panes.watermarks.assigners import (
    NO_TIMESTAMP,
    ColumnTimestampAssigner,
    FunctionTimestampAssigner,
    RecordTimestampAssigner,
    TimestampAssigner,
    TimestampAssignerLike,
    as_timestamp_assigner,
    checked_timestamp,
)
from panes.watermarks.clock import PausableClock
from panes.watermarks.generators import (
    AscendingTimestampsWatermarks,
    BoundedOutOfOrdernessWatermarks,
    NoWatermarksGenerator,
    WatermarkGenerator,
    WatermarkGeneratorContext,
    WatermarkGeneratorSupplier,
)
from panes.watermarks.idleness import IdlenessTimer, WatermarksWithIdleness, validate_idle_timeout
from panes.watermarks.multiplexer import PartialWatermark, WatermarkMultiplexer, combined_watermark
from panes.watermarks.operator import (
    DEFAULT_AUTO_WATERMARK_INTERVAL,
    TimestampsAndWatermarksOperator,
    WatermarkEmitter,
    validate_auto_watermark_interval,
)
from panes.watermarks.output import WatermarkOutput
from panes.watermarks.per_key import PerKeyWatermarks, check_per_key_watermarks
from panes.watermarks.splits import SplitWatermarks
from panes.watermarks.strategy import WatermarkStrategy, WatermarkStrategyKind
from panes.watermarks.time_range import EventTimeRange
from panes.watermarks.valve import InputChannelStatus, StatusWatermarkValve, ValveOutput

__all__ = [
    "DEFAULT_AUTO_WATERMARK_INTERVAL",
    "DEFAULT_UPDATE_INTERVAL",
    "NO_TIMESTAMP",
    "WATERMARK_ALIGNMENT_DISABLED",
    "AscendingTimestampsWatermarks",
    "BoundedOutOfOrdernessWatermarks",
    "ColumnTimestampAssigner",
    "EventTimeRange",
    "FunctionTimestampAssigner",
    "IdlenessTimer",
    "InputChannelStatus",
    "NoWatermarksGenerator",
    "PartialWatermark",
    "PausableClock",
    "RecordTimestampAssigner",
    "SourceWatermarkAlignment",
    "SplitWatermarks",
    "StatusWatermarkValve",
    "TimestampAssigner",
    "TimestampAssignerLike",
    "TimestampsAndWatermarksOperator",
    "ValveOutput",
    "WatermarkAggregator",
    "WatermarkAlignmentCoordinator",
    "WatermarkAlignmentParams",
    "WatermarkEmitter",
    "WatermarkGenerator",
    "WatermarkGeneratorContext",
    "WatermarkGeneratorSupplier",
    "WatermarkMultiplexer",
    "WatermarkOutput",
    "PerKeyWatermarks",
    "WatermarkStrategy",
    "WatermarkStrategyKind",
    "WatermarksWithIdleness",
    "as_timestamp_assigner",
    "checked_timestamp",
    "check_per_key_watermarks",
    "combined_watermark",
    "max_allowed_watermark",
    "validate_auto_watermark_interval",
    "validate_idle_timeout",
]
