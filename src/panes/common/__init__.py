"""What a PyFlink job imports from ``pyflink.common``, under one roof: the names panes keeps elsewhere, re-exported
(``Types``, ``TypeInformation`` and ``Row`` from ``panes.types``; ``Time``, ``Duration`` and ``Instant`` from
``panes.time``; ``WatermarkStrategy`` and ``TimestampAssigner`` from ``panes.watermarks``; ``Encoder`` from
``panes.connectors.file_system``; ``JobExecutionResult`` from ``panes.datastream``), and the serialization
schemas of ``panes.common.serialization``. ``from pyflink.common import Types, WatermarkStrategy`` becomes
``from panes.common import Types, WatermarkStrategy``.

Nothing here imports pyspark.
"""

from panes.common.serialization import (
    ByteArraySchema,
    DeserializationSchema,
    Encoder,
    RowFieldExtractorSchema,
    SerializationSchema,
    SimpleStringSchema,
)
from panes.datastream.execution import JobExecutionResult
from panes.time import Duration, Instant, Time
from panes.types import Row, TypeInformation, Types
from panes.watermarks import TimestampAssigner, WatermarkStrategy

__all__ = [
    "ByteArraySchema",
    "DeserializationSchema",
    "Duration",
    "Encoder",
    "Instant",
    "JobExecutionResult",
    "Row",
    "RowFieldExtractorSchema",
    "SerializationSchema",
    "SimpleStringSchema",
    "Time",
    "TimestampAssigner",
    "TypeInformation",
    "Types",
    "WatermarkStrategy",
]
