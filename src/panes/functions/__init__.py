"""User-function interfaces shared by the API and the operators (Flink's ``org.apache.flink.api.common.functions``)."""

from panes.functions.aggregates import Aggregates, Avg, Count, Max, Min, Sum
from panes.functions.base import (
    AggregateFunction,
    Function,
    ReduceFunction,
    RuntimeContext,
    as_aggregate_function,
    as_reduce_function,
)

__all__ = [
    "AggregateFunction",
    "Aggregates",
    "Avg",
    "Count",
    "Max",
    "Min",
    "Sum",
    "Function",
    "ReduceFunction",
    "RuntimeContext",
    "as_aggregate_function",
    "as_reduce_function",
]
