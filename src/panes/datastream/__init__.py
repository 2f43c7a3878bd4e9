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
    TimeDomain,
    TimerService,
)
from panes.operators.metrics import OperatorMetrics
from panes.tags import OutputTag
from panes.windowing.assigners.base import MergingWindowAssigner, WindowAssigner
from panes.windowing.count_windows import CountWindow
from panes.windowing.functions import (
    AllWindowFunction,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    WindowFunction,
)
from panes.windowing.triggers.base import Trigger, TriggerResult
from panes.windowing.windows import GlobalWindow, TimeWindow, Window

__all__ = [
    "AggregateFunction",
    "AllWindowFunction",
    "AllWindowedStream",
    "BaseBroadcastProcessFunction",
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
    "CountWindow",
    "DataStream",
    "DataStreamSink",
    "EnvironmentConfig",
    "ExecutionConfig",
    "FilterFunction",
    "FlatJoinFunction",
    "FlatMapFunction",
    "FunctionSink",
    "GeneratorSource",
    "GlobalWindow",
    "IntervalJoin",
    "IntervalJoined",
    "IterableSource",
    "JobExecutionResult",
    "JoinFunction",
    "JoinWithWindow",
    "JoinedStreams",
    "KeySelector",
    "KeyedBroadcastProcessFunction",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStream",
    "ListSink",
    "MapFunction",
    "MergingWindowAssigner",
    "OperatorMetrics",
    "OutputTag",
    "Partitioner",
    "Plan",
    "PrintSink",
    "ProcessAllWindowFunction",
    "ProcessFunction",
    "ProcessJoinFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "RuntimeExecutionMode",
    "Sink",
    "SinkFunction",
    "Source",
    "SplitsSource",
    "StreamEnvironment",
    "StreamExecutionEnvironment",
    "TimeDomain",
    "TimeWindow",
    "TimerService",
    "Trigger",
    "TriggerResult",
    "Window",
    "WindowAssigner",
    "WindowFunction",
    "WindowSpec",
    "WindowedStream",
]
