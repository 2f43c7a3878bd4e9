"""The DataStream API: environment, streams, windows, sources, sinks and the plan they build."""

from panes.datastream.connected import ConnectedStreams
from panes.datastream.environment import StreamEnvironment, StreamExecutionEnvironment
from panes.datastream.execution import ExecutionConfig, JobExecutionResult
from panes.datastream.plan import Plan
from panes.datastream.sinks import FunctionSink, ListSink, PrintSink, Sink
from panes.datastream.sources import CollectionSource, GeneratorSource, IterableSource, Source, SplitsSource
from panes.datastream.stream import DataStream, DataStreamSink, KeyedStream
from panes.datastream.windowed import AllWindowedStream, WindowedStream, WindowSpec
from panes.functions.base import AggregateFunction, ReduceFunction, RuntimeContext
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
    ProcessFunction,
    SinkFunction,
    TimeDomain,
    TimerService,
)
from panes.operators.metrics import OperatorMetrics
from panes.tags import OutputTag

__all__ = [
    "AggregateFunction",
    "AllWindowedStream",
    "CoFlatMapFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "CollectionSource",
    "ConnectedStreams",
    "DataStream",
    "DataStreamSink",
    "ExecutionConfig",
    "FilterFunction",
    "FlatMapFunction",
    "FunctionSink",
    "GeneratorSource",
    "IterableSource",
    "JobExecutionResult",
    "KeySelector",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStream",
    "ListSink",
    "MapFunction",
    "OperatorMetrics",
    "OutputTag",
    "Plan",
    "PrintSink",
    "ProcessFunction",
    "ReduceFunction",
    "RuntimeContext",
    "Sink",
    "SinkFunction",
    "Source",
    "SplitsSource",
    "StreamEnvironment",
    "StreamExecutionEnvironment",
    "TimeDomain",
    "TimerService",
    "WindowSpec",
    "WindowedStream",
]
