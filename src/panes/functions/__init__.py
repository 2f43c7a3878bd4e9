"""User-function interfaces shared by the API and the operators (Flink's ``org.apache.flink.api.common.functions``),
and every function interface PyFlink's ``pyflink.datastream.functions`` exports (defined beside the operators that
call them: ``panes.functions.stream``, ``panes.functions.broadcast``, ``panes.windowing.functions``)."""

from typing import TYPE_CHECKING, Any

from panes.functions.aggregates import Aggregates, Avg, Count, Max, Min, Sum
from panes.functions.base import (
    AggregateFunction,
    Function,
    ReduceFunction,
    RuntimeContext,
    as_aggregate_function,
    as_reduce_function,
)

if TYPE_CHECKING:
    from panes.functions.broadcast import (
        BaseBroadcastProcessFunction,
        BroadcastProcessFunction,
        KeyedBroadcastProcessFunction,
    )
    from panes.functions.join import CoGroupFunction, FlatJoinFunction, JoinFunction, ProcessJoinFunction
    from panes.functions.stream import (
        CoFlatMapFunction,
        CoMapFunction,
        CoProcessFunction,
        FilterFunction,
        FlatMapFunction,
        KeyedCoProcessFunction,
        KeyedProcessFunction,
        KeySelector,
        MapFunction,
        Partitioner,
        ProcessFunction,
        SinkFunction,
        TimerService,
    )
    from panes.windowing.functions import (
        AllWindowFunction,
        ProcessAllWindowFunction,
        ProcessWindowFunction,
        WindowFunction,
    )

_ELSEWHERE = {
    "AllWindowFunction": "panes.windowing.functions",
    "BaseBroadcastProcessFunction": "panes.functions.broadcast",
    "BroadcastProcessFunction": "panes.functions.broadcast",
    "CoFlatMapFunction": "panes.functions.stream",
    "CoGroupFunction": "panes.functions.join",
    "CoMapFunction": "panes.functions.stream",
    "CoProcessFunction": "panes.functions.stream",
    "FilterFunction": "panes.functions.stream",
    "FlatJoinFunction": "panes.functions.join",
    "FlatMapFunction": "panes.functions.stream",
    "JoinFunction": "panes.functions.join",
    "KeySelector": "panes.functions.stream",
    "KeyedBroadcastProcessFunction": "panes.functions.broadcast",
    "KeyedCoProcessFunction": "panes.functions.stream",
    "KeyedProcessFunction": "panes.functions.stream",
    "MapFunction": "panes.functions.stream",
    "Partitioner": "panes.functions.stream",
    "ProcessAllWindowFunction": "panes.windowing.functions",
    "ProcessFunction": "panes.functions.stream",
    "ProcessJoinFunction": "panes.functions.join",
    "ProcessWindowFunction": "panes.windowing.functions",
    "SinkFunction": "panes.functions.stream",
    "TimerService": "panes.functions.stream",
    "WindowFunction": "panes.windowing.functions",
}
"""The function interfaces defined beside the operators that call them, imported on first use (importing them
here eagerly would make ``panes.state`` and ``panes.operators`` import each other through this package)."""


def __getattr__(name: str) -> Any:
    module = _ELSEWHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "AggregateFunction",
    "Aggregates",
    "AllWindowFunction",
    "Avg",
    "BaseBroadcastProcessFunction",
    "BroadcastProcessFunction",
    "CoFlatMapFunction",
    "CoGroupFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "Count",
    "FilterFunction",
    "FlatJoinFunction",
    "FlatMapFunction",
    "Function",
    "JoinFunction",
    "KeySelector",
    "KeyedBroadcastProcessFunction",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "MapFunction",
    "Max",
    "Min",
    "Partitioner",
    "ProcessAllWindowFunction",
    "ProcessFunction",
    "ProcessJoinFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "SinkFunction",
    "Sum",
    "TimerService",
    "WindowFunction",
    "as_aggregate_function",
    "as_reduce_function",
]
