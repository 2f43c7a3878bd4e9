"""The DataStream API: environment, streams, windows, sources, sinks and the plan they build."""

from panes.datastream.broadcast import BroadcastConnectedStream, BroadcastStream
from panes.datastream.collect import CloseableIterator
from panes.datastream.connected import ConnectedStreams
from panes.datastream.environment import EnvironmentConfig, StreamEnvironment, StreamExecutionEnvironment
from panes.datastream.execution import ExecutionConfig, JobExecutionResult
from panes.datastream.interval_join import IntervalJoin, IntervalJoined
from panes.datastream.joins import CoGroupedStreams, CoGroupWithWindow, JoinedStreams, JoinWithWindow
from panes.datastream.plan import Plan
from panes.datastream.runtime_mode import RuntimeExecutionMode
from panes.datastream.sinks import FunctionSink, ListSink, PrintSink, Sink
from panes.datastream.sources import CollectionSource, GeneratorSource, IterableSource, Source, SplitsSource
from panes.datastream.stream import DataStream, DataStreamSink, KeyedStream
from panes.datastream.windowed import AllWindowedStream, WindowedStream, WindowSpec
from panes.functions.base import AggregateFunction, ReduceFunction, RuntimeContext
from panes.functions.broadcast import BroadcastProcessFunction, KeyedBroadcastProcessFunction
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
    "BroadcastConnectedStream",
    "BroadcastProcessFunction",
    "BroadcastStream",
    "CloseableIterator",
    "CoFlatMapFunction",
    "CoGroupFunction",
    "CoGroupWithWindow",
    "CoGroupedStreams",
    "CoMapFunction",
    "CoProcessFunction",
    "CollectionSource",
    "ConnectedStreams",
    "DataStream",
    "DataStreamSink",
    "EnvironmentConfig",
    "ExecutionConfig",
    "FilterFunction",
    "FlatJoinFunction",
    "FlatMapFunction",
    "FunctionSink",
    "GeneratorSource",
    "IntervalJoin",
    "IntervalJoined",
    "IterableSource",
    "JobExecutionResult",
    "KeyedBroadcastProcessFunction",
    "JoinFunction",
    "JoinWithWindow",
    "JoinedStreams",
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
    "ProcessJoinFunction",
    "ReduceFunction",
    "RuntimeExecutionMode",
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
