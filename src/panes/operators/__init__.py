"""Stream operators: the base classes runners host, and the output they write to."""

from panes.operators.base import (
    AbstractStreamOperator,
    CollectingOutput,
    OneInputStreamOperator,
    Output,
    TimestampedCollector,
)

__all__ = [
    "AbstractStreamOperator",
    "CollectingOutput",
    "OneInputStreamOperator",
    "Output",
    "TimestampedCollector",
]
