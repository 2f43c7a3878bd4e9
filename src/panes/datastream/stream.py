"""``DataStream`` and ``KeyedStream``: the fluent API that builds the plan (PyFlink's method names).

Every call returns a new stream over a new transformation; nothing runs until ``env.execute()`` (or
``execute_and_collect()``). User functions are copied for each parallel instance, so they must be
deep-copyable (Flink requires them to be serializable).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, overload

from panes.datastream.aggregations import FieldAggregations
from panes.datastream.partitioning import (
    BroadcastPartitioner,
    CustomPartitionerWrapper,
    ForwardPartitioner,
    GlobalPartitioner,
    KeyGroupStreamPartitioner,
    RebalancePartitioner,
    RescalePartitioner,
    ShufflePartitioner,
    StreamPartitioner,
)
from panes.datastream.plan import (
    INHERIT,
    OneInputTransformation,
    PartitionTransformation,
    SideOutputTransformation,
    SinkTransformation,
    Transformation,
    UnionTransformation,
)
from panes.datastream.sinks import FunctionSink, ListSink, PrintSink, Sink
from panes.errors import UnsupportedOperationError
from panes.functions.base import ReduceFunction, as_reduce_function
from panes.functions.stream import (
    KeyedProcessFunction,
    ProcessFunction,
    as_filter_function,
    as_flat_map_function,
    as_key_selector,
    as_map_function,
)
from panes.operators.keyed import BatchGroupedReduceOperator, KeyedProcessOperator, StreamGroupedReduceOperator
from panes.operators.stateless import ProcessOperator, StreamFilter, StreamFlatMap, StreamMap
from panes.tags import OutputTag
from panes.types import RecordType, Types
from panes.types.typeinfo import TypeInformation
from panes.watermarks.per_key import PerKeyWatermarks, check_per_key_watermarks

if TYPE_CHECKING:
    from panes.datastream.broadcast import BroadcastConnectedStream, BroadcastStream
    from panes.datastream.collect import CloseableIterator
    from panes.datastream.connected import ConnectedStreams
    from panes.datastream.environment import StreamEnvironment
    from panes.datastream.interval_join import IntervalJoin
    from panes.datastream.joins import CoGroupedStreams, JoinedStreams
    from panes.datastream.windowed import AllWindowedStream, WindowedStream
    from panes.windowing.assigners.base import WindowAssigner


def declared_type(output_type: Any) -> RecordType | None:
    """The record type of an ``output_type`` argument (``None`` when not given); a list of ``Types`` is PyFlink's
    shorthand for ``Types.ROW(list)``. Raises ``TypeError`` for something that is not a type declaration."""
    if output_type is None:
        return None
    if isinstance(output_type, list) and output_type and all(isinstance(t, TypeInformation) for t in output_type):
        output_type = Types.ROW(output_type)
    return RecordType.of(output_type)


def instance_copy(function: Any) -> Any:
    """A private copy of a user function for one parallel instance; raises ``TypeError`` when impossible."""
    try:
        return copy.deepcopy(function)
    except Exception as error:
        raise TypeError(
            f"{type(function).__name__} cannot be copied for each parallel instance ({error}); keep resources "
            "such as connections out of function fields and create them in open()"
        ) from error


class DataStream:
    """A stream of elements produced by one transformation."""

    def __init__(self, env: StreamEnvironment, transformation: Transformation) -> None:
        self.env = env
        self.transformation = transformation

    # -- naming and parallelism ------------------------------------------

    def _with(self, **changes: Any) -> DataStream:
        changed = self.transformation.with_settings(**changes)
        self.env.settle(changed)
        return type(self)._rebuild(self, changed)

    def _rebuild(self, transformation: Transformation) -> DataStream:
        return DataStream(self.env, transformation)

    def name(self, name: str) -> DataStream:
        return self._with(name=name)

    def get_name(self) -> str:
        return self.transformation.name

    def uid(self, uid: str) -> DataStream:
        return self._with(uid=uid)

    def set_parallelism(self, parallelism: int) -> DataStream:
        """How many parallel instances this step has (``> 0``), each with its own copy of the user function;
        on Spark a keyed step gets that many shards, one per Flink subtask (``docs/runtime-modes.md``)."""
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism <= 0:
            raise ValueError(f"parallelism must be an int > 0 (got {parallelism!r})")
        return self._with(parallelism=parallelism)

    def get_parallelism(self) -> int:
        return self.transformation.parallelism or self.env.get_parallelism()

    # -- one-input transformations ------------------------------------------

    def _one_input(
        self,
        name: str,
        op_kind: str,
        spec: Any,
        factory: Callable[[], Any],
        key_selector: Callable[[Any], Any] | None = None,
        parallelism: int | None = None,
        output_type: Any = None,
    ) -> DataStream:
        transformation = OneInputTransformation(
            name=name,
            inputs=(self.transformation,),
            parallelism=parallelism,
            op_kind=op_kind,
            spec=spec,
            operator_factory=factory,
            key_selector=key_selector,
            output_type=output_type,
        )
        return DataStream(self.env, transformation)

    def _key_selector(self) -> Callable[[Any], Any] | None:
        return None

    def map(self, func: Any, output_type: Any = None) -> DataStream:
        """One result per element: ``func(value)`` (a ``MapFunction`` or a callable). ``output_type`` (a
        ``Types`` type, a Spark DDL string or a pyarrow schema) declares the results' type: results must fit it
        (or are bad records), and runners move them as typed columns."""
        function = as_map_function(func)
        key = self._key_selector()
        return self._one_input(
            "Map",
            "map",
            function,
            lambda: StreamMap(instance_copy(function), key),
            key,
            output_type=declared_type(output_type),
        )

    def flat_map(self, func: Any, output_type: Any = None) -> DataStream:
        """Zero or more results per element: ``func(value)`` returns an iterable (``output_type`` as for ``map``)."""
        function = as_flat_map_function(func)
        key = self._key_selector()
        return self._one_input(
            "FlatMap",
            "flat_map",
            function,
            lambda: StreamFlatMap(instance_copy(function), key),
            key,
            output_type=declared_type(output_type),
        )

    def filter(self, func: Any) -> DataStream:
        """Keep the elements for which ``func(value)`` is true."""
        function = as_filter_function(func)
        key = self._key_selector()
        return self._one_input(
            "Filter", "filter", function, lambda: StreamFilter(instance_copy(function), key), key, output_type=INHERIT
        )

    def process(self, func: ProcessFunction[Any, Any], output_type: Any = None) -> DataStream:
        """Low-level processing with a ``ProcessFunction`` (no timers on a non-keyed stream; ``output_type`` as
        for ``map``)."""
        if not isinstance(func, ProcessFunction):
            raise TypeError(f"DataStream.process needs a ProcessFunction, got {type(func).__name__}")
        return self._one_input(
            "Process",
            "process",
            func,
            lambda: ProcessOperator(instance_copy(func)),
            output_type=declared_type(output_type),
        )

    def assign_timestamps_and_watermarks(self, watermark_strategy: Any) -> DataStream:
        """Assign timestamps and generate watermarks with ``watermark_strategy`` (a ``WatermarkStrategy``): one
        generator per parallel instance of the step."""
        return self._watermarks(watermark_strategy, per_split=False)

    def _watermarks(self, watermark_strategy: Any, per_split: bool) -> DataStream:
        """The timestamps step; ``per_split``: a source's own strategy (``env.from_source``), whose instances run
        a generator per split of a source that says which split each element comes from
        (``panes.watermarks.splits``)."""
        from panes.watermarks import TimestampsAndWatermarksOperator, WatermarkStrategy

        if not isinstance(watermark_strategy, WatermarkStrategy):
            raise TypeError(f"expected a WatermarkStrategy, got {type(watermark_strategy).__name__}")
        interval = self.env.auto_watermark_interval
        return self._one_input(
            "Timestamps/Watermarks",
            "timestamps_watermarks",
            watermark_strategy,
            lambda: TimestampsAndWatermarksOperator(
                watermark_strategy, auto_watermark_interval=interval, per_split=per_split
            ),
            parallelism=self.transformation.parallelism,
            output_type=INHERIT,
        )

    # -- keys, windows, connections --------------------------------------------------------------------------------

    def key_by(self, key_selector: Any, key_type: Any = None) -> KeyedStream:
        """Partition by key: ``key_selector(value)`` (a ``KeySelector``, a callable, or a field name/position).
        ``key_type`` (a ``Types`` value) declares the keys' type; keys stay Python values, and the type is
        compared with the other input's when two keyed streams meet (``panes.datastream.key_types``)."""
        from panes.datastream.key_types import key_type_of

        selector = _field_or_function_key(key_selector)
        known_type = key_type_of(self.transformation, selector, key_type)
        partition = PartitionTransformation(
            name="key_by",
            inputs=(self.transformation,),
            partitioner=KeyGroupStreamPartitioner(selector, self.env.max_parallelism),
        )
        return KeyedStream(self.env, partition, selector, known_type)

    def union(self, *streams: DataStream) -> DataStream:
        """The elements of this stream and of ``streams``, interleaved."""
        if not streams:
            return self
        inputs = (self.transformation, *(s.transformation for s in streams))
        return DataStream(self.env, UnionTransformation(name="Union", inputs=inputs))

    @overload
    def connect(self, other: BroadcastStream) -> BroadcastConnectedStream: ...

    @overload
    def connect(self, other: DataStream) -> ConnectedStreams: ...

    def connect(self, other: Any) -> Any:
        """Two streams processed together by a co-function (``map``, ``flat_map``, ``process``): a
        ``ConnectedStreams``, or a ``BroadcastConnectedStream`` when ``other`` is a ``BroadcastStream``."""
        from panes.datastream.broadcast import BroadcastConnectedStream, BroadcastStream
        from panes.datastream.connected import ConnectedStreams

        if isinstance(other, BroadcastStream):
            return BroadcastConnectedStream(self, other)
        return ConnectedStreams(self, other)

    def join(self, other_stream: DataStream) -> JoinedStreams:
        """A window join with ``other_stream``: ``.where(key).equal_to(key).window(assigner).apply(function)``
        (see ``panes.datastream.joins``)."""
        from panes.datastream.joins import JoinedStreams

        return JoinedStreams(self, other_stream)

    def co_group(self, other_stream: DataStream) -> CoGroupedStreams:
        """A window co-group with ``other_stream``: ``.where(key).equal_to(key).window(assigner).apply(function)``
        (see ``panes.datastream.joins``)."""
        from panes.datastream.joins import CoGroupedStreams

        return CoGroupedStreams(self, other_stream)

    def window_all(self, window_assigner: WindowAssigner[Any, Any]) -> AllWindowedStream:
        """Windows over the whole (non-keyed) stream, evaluated with parallelism 1."""
        from panes.datastream.windowed import AllWindowedStream

        return AllWindowedStream(self, window_assigner)

    def count_window_all(self, size: int, slide: int | None = None) -> AllWindowedStream:
        """Count windows over the whole stream (see ``KeyedStream.count_window``)."""
        from panes.windowing.count_windows import count_window_assigner

        return self.window_all(count_window_assigner(size, slide))

    def side_output_errors(self, output_tag: OutputTag[Any]) -> DataStream:
        """Send this operator's bad records (see ``panes.errors``) to ``output_tag`` as ``ErrorRecord`` values
        instead of failing the job; read them with ``get_side_output(output_tag)``. On a source, the records
        are the lines of JSON or CSV files that do not fit the schema (``FileSource``), or the Kafka records its
        deserializer refuses (``KafkaSource``)."""
        if not isinstance(output_tag, OutputTag):
            raise TypeError(f"expected an OutputTag, got {type(output_tag).__name__}")
        if self.transformation.kind not in ("one_input", "two_input", "source"):
            raise TypeError(
                f"side_output_errors applies to an operator or a source, not to a {self.transformation.kind}"
            )
        return self._with(error_tag=output_tag)

    def get_side_output(self, output_tag: OutputTag[Any]) -> DataStream:
        """The records this stream's operator emitted to ``output_tag`` (typed by the tag's ``type_info``)."""
        if not isinstance(output_tag, OutputTag):
            raise TypeError(f"expected an OutputTag, got {type(output_tag).__name__}")
        declared_type(output_tag.type_info)
        side = SideOutputTransformation(
            name=f"side output {output_tag.tag_id}", inputs=(self.transformation,), tag=output_tag
        )
        return DataStream(self.env, side)

    # -- partitioning ------------------------------------------

    def _partition(self, partitioner: StreamPartitioner) -> DataStream:
        transformation = PartitionTransformation(
            name=partitioner.name, inputs=(self.transformation,), partitioner=partitioner
        )
        return DataStream(self.env, transformation)

    def shuffle(self) -> DataStream:
        return self._partition(ShufflePartitioner())

    def rebalance(self) -> DataStream:
        return self._partition(RebalancePartitioner())

    def rescale(self) -> DataStream:
        return self._partition(RescalePartitioner())

    def broadcast(self, *broadcast_state_descriptors: Any) -> Any:
        """Every element to every downstream instance. With ``MapStateDescriptor``s, a ``BroadcastStream`` with
        that broadcast state, to ``connect`` a stream with (see ``panes.datastream.broadcast``)."""
        if broadcast_state_descriptors:
            from panes.datastream.broadcast import BroadcastStream

            return BroadcastStream(self, broadcast_state_descriptors)
        return self._partition(BroadcastPartitioner())

    def forward(self) -> DataStream:
        return self._partition(ForwardPartitioner())

    def global_(self) -> DataStream:
        return self._partition(GlobalPartitioner())

    def partition_custom(self, partitioner: Any, key_selector: Any) -> DataStream:
        """``partitioner(key, num_partitions)`` (or ``.partition(key, n)``) picks each element's instance."""
        return self._partition(CustomPartitionerWrapper(partitioner, _field_or_function_key(key_selector)))

    # -- sinks ------------------------------------------

    def sink_to(self, sink: Sink, errors: OutputTag[Any] | None = None) -> DataStreamSink:
        """Write the stream to ``sink``; the job runs on ``env.execute()``. For sinks with a schema (files),
        ``errors`` names the error output of values that do not fit it (read with
        ``get_side_output(errors)`` on the returned sink); without it such a value fails the job."""
        if not isinstance(sink, Sink):
            raise TypeError(f"expected a Sink, got {type(sink).__name__}; wrap functions with add_sink()")
        if errors is not None and not isinstance(errors, OutputTag):
            raise TypeError(f"errors must be an OutputTag, got {type(errors).__name__}")
        sink = _typed_sink(sink, self.transformation)
        transformation = SinkTransformation(
            name=f"Sink: {type(sink).__name__}", inputs=(self.transformation,), sink=sink, error_tag=errors
        )
        self.env.add_sink_transformation(transformation)
        return DataStreamSink(self.env, transformation)

    def add_sink(self, sink_func: Any) -> DataStreamSink:
        """Write the stream through a ``SinkFunction`` or a callable ``value -> None``, or to a ``Sink`` (PyFlink's
        ``add_sink(JdbcSink.sink(...))``: the same as ``sink_to(sink)``)."""
        if isinstance(sink_func, Sink):
            return self.sink_to(sink_func)
        return self.sink_to(FunctionSink(sink_func))

    def sink_to_files(
        self, path: str, format: str = "parquet", schema: Any = None, errors: OutputTag[Any] | None = None
    ) -> DataStreamSink:
        """Write the values as rows of files under ``path`` (see ``FileSink`` for the schema and layout); values
        that do not fit the schema go to ``errors`` when given, else fail the job."""
        from panes.datastream.sinks import FileSink

        return self.sink_to(FileSink(path, format, schema), errors)

    def print(self, sink_identifier: str | None = None) -> DataStreamSink:
        """Print each value on standard output (``sink_identifier> value``), as PyFlink prints it: a value of a
        declared type as its Java form (``(hi,1)``, ``+I[hi,1]``, ``null``), others as Python's ``str``."""
        return self.sink_to(PrintSink(sink_identifier, stream=self.transformation))

    def execute_and_collect(self, job_execution_name: str = "collect", limit: int | None = None) -> CloseableIterator:
        """Run the environment's pipelines plus this stream to their end and return this stream's values (the
        first ``limit`` of them when given, ``limit > 0``) as a ``CloseableIterator``: a list that is also an
        iterator and a context manager, so PyFlink's ``with ds.execute_and_collect() as results:`` works. The job
        runs to its end before anything is returned, so over an unbounded source it does not return."""
        from panes.datastream.collect import CloseableIterator
        from panes.datastream.plan import Plan

        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0):
            raise ValueError(f"limit must be an int > 0 or None (got {limit!r})")
        collected = ListSink()
        sink = SinkTransformation(name="Sink: collect", inputs=(self.transformation,), sink=collected)
        plan = Plan((*self.env.plan().sinks, sink))
        self.env.execute_plan(plan, job_execution_name)
        values = collected.values
        return CloseableIterator(values if limit is None else values[:limit])

    def to_dataframe(self, schema: Any = None) -> Any:
        """This stream as a Spark DataFrame, streaming when the sources are (needs the Spark runner).

        Write it with any Spark sink (``writeStream.format(...)``, ``foreachBatch``, ``toTable``) and your own
        trigger and checkpoint. Its columns are ``schema`` (a Spark DDL string, a pyarrow schema or a
        ``Types`` type) or, by default, the stream's type (declare ``output_type`` upstream); values that do
        not fit fail the query. A Spark query has one sink: sinks added to the environment are not part of
        this DataFrame (write several outputs of one query with ``env.execute()``, see ``docs``), so this
        raises ``ValueError`` while the environment holds sinks.
        """
        make = getattr(self.env.runner, "to_dataframe", None)
        if make is None:
            runner = type(self.env.runner).__name__
            raise TypeError(
                f"to_dataframe needs the Spark runner (StreamEnvironment('spark')), not {runner}; collect with "
                "execute_and_collect() or write with a sink instead"
            )
        pending = self.env.plan().sinks
        if pending:
            names = ", ".join(t.name for t in pending)
            raise ValueError(
                f"the environment also holds sinks ({names}) that a DataFrame query would not write: Spark runs one "
                "sink per query. Write every output of the job with env.execute() (its sinks, such as "
                "sink_to_files and ForeachBatchSink, are written on the executors through foreachBatch), or "
                "build this DataFrame in an environment without other sinks."
            )
        return make(self.transformation, self.env.config(), declared_type(schema))


class DataStreamSink:
    """The end of a pipeline (Flink's ``DataStreamSink``)."""

    def __init__(self, env: StreamEnvironment, transformation: SinkTransformation) -> None:
        self.env = env
        self.transformation = transformation

    def _with(self, **changes: Any) -> DataStreamSink:
        changed = self.transformation.with_settings(**changes)
        assert isinstance(changed, SinkTransformation)
        self.env.settle(changed)
        self.transformation = changed
        return self

    def name(self, name: str) -> DataStreamSink:
        """Name the sink (shown in plans and errors)."""
        return self._with(name=name)

    def uid(self, uid: str) -> DataStreamSink:
        return self._with(uid=uid)

    def set_parallelism(self, parallelism: int) -> DataStreamSink:
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism <= 0:
            raise ValueError(f"parallelism must be an int > 0 (got {parallelism!r})")
        return self._with(parallelism=parallelism)

    def get_side_output(self, output_tag: OutputTag[Any]) -> DataStream:
        """The values the sink refused (``ErrorRecord``s), when it was given ``errors=output_tag``."""
        if self.transformation.error_tag != output_tag:
            raise ValueError(f"this sink has no error output {output_tag!r}: pass errors={output_tag!r} to the sink")
        side = SideOutputTransformation(
            name=f"side output {output_tag.tag_id}", inputs=(self.transformation,), tag=output_tag
        )
        return DataStream(self.env, side)


def _field_or_function_key(key_selector: Any) -> Callable[[Any], Any]:
    if isinstance(key_selector, (int, str)) and not isinstance(key_selector, bool):
        from panes.functions.aggregators import FieldKey

        return FieldKey(key_selector)
    selector = as_key_selector(key_selector)
    return selector.get_key


class KeyedStream(FieldAggregations, DataStream):
    """A stream partitioned by key: keyed state, timers and windows per key."""

    def __init__(
        self,
        env: StreamEnvironment,
        transformation: Transformation,
        key_selector: Callable[[Any], Any],
        key_type: str | None = None,
    ) -> None:
        super().__init__(env, transformation)
        self.key_selector = key_selector
        self.key_type = key_type
        """The keys' Arrow type as text when known before running (``panes.datastream.key_types``), else None."""
        self.key_time: PerKeyWatermarks | None = None
        """Event time per key for the keyed steps built on this stream (:meth:`watermark_per_key`), or None."""

    def _rebuild(self, transformation: Transformation) -> DataStream:
        rebuilt = KeyedStream(self.env, transformation, self.key_selector, self.key_type)
        rebuilt.key_time = self.key_time
        return rebuilt

    def watermark_per_key(self, watermarks: PerKeyWatermarks) -> KeyedStream:
        """This keyed stream with event time per key (beyond Flink; ``docs/event-time-per-key.md``) for the steps
        built on it: a ``KeyedProcessFunction``'s event-time timers fire, and ``ctx.timer_service()
        .current_watermark()`` reads, the key's own time; windows (``window(...)``) keep it as
        ``WindowedStream.watermark_per_key`` does. Raises as ``WindowedStream.watermark_per_key`` does for a
        missing ``max_lag`` or another type."""
        check_per_key_watermarks(watermarks)
        keyed = KeyedStream(self.env, self.transformation, self.key_selector, self.key_type)
        keyed.key_time = watermarks
        return keyed

    def _key_selector(self) -> Callable[[Any], Any] | None:
        return self.key_selector

    def get_key_selector(self) -> Callable[[Any], Any]:
        return self.key_selector

    # -- what Flink refuses on a KeyedStream ------------------------------------------
    # Java's KeyedStream refuses a new partitioning (UnsupportedOperationException) and has no operator to name,
    # give a uid or a parallelism; PyFlink's KeyedStream raises for the same calls. So does panes.

    def _refuse_partitioning(self) -> DataStream:
        raise UnsupportedOperationError("Cannot override partitioning for KeyedStream.")

    def shuffle(self) -> DataStream:
        return self._refuse_partitioning()

    def rebalance(self) -> DataStream:
        return self._refuse_partitioning()

    def rescale(self) -> DataStream:
        return self._refuse_partitioning()

    def forward(self) -> DataStream:
        return self._refuse_partitioning()

    def broadcast(self, *args: Any) -> DataStream:
        return self._refuse_partitioning()

    def global_(self) -> DataStream:
        return self._refuse_partitioning()

    def partition_custom(self, partitioner: Any, key_selector: Any) -> DataStream:
        return self._refuse_partitioning()

    def _refuse_setting(self, what: str) -> Any:
        raise UnsupportedOperationError(
            f"{what} for KeyedStream is not supported: a KeyedStream is not an operator; set it on the operator "
            "that reads the stream (e.g. key_by(...).process(...).name(...))"
        )

    def name(self, name: str) -> DataStream:
        return self._refuse_setting("Set name")  # type: ignore[no-any-return]

    def get_name(self) -> str:
        return self._refuse_setting("Get name")  # type: ignore[no-any-return]

    def uid(self, uid: str) -> DataStream:
        return self._refuse_setting("Set uid")  # type: ignore[no-any-return]

    def set_parallelism(self, parallelism: int) -> DataStream:
        return self._refuse_setting("Set parallelism")  # type: ignore[no-any-return]

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        """Keyed processing with a ``KeyedProcessFunction``: keyed state and timers."""
        if not isinstance(func, KeyedProcessFunction):
            raise TypeError(f"KeyedStream.process needs a KeyedProcessFunction, got {type(func).__name__}")
        key = self.key_selector
        key_time = self.key_time
        stream = self._one_input(
            "KeyedProcess",
            "keyed_process",
            func,
            lambda: KeyedProcessOperator(instance_copy(func), key, key_time),
            key,
            output_type=declared_type(output_type),
        )
        if key_time is None:
            return stream
        # BATCH execution has no per-key time: every timer fires at the end of its key
        return stream._with(
            key_time=key_time, batch_operator_factory=lambda: KeyedProcessOperator(instance_copy(func), key)
        )

    def interval_join(self, other_stream: KeyedStream) -> IntervalJoin:
        """Join with the keyed ``other_stream`` over a time interval: ``.between(lower, upper).process(function)``
        (see ``panes.datastream.interval_join``)."""
        from panes.datastream.interval_join import IntervalJoin

        return IntervalJoin(self, other_stream)

    def reduce(self, func: ReduceFunction[Any] | Callable[[Any, Any], Any]) -> DataStream:
        """A rolling reduce per key, emitting every intermediate result (in BATCH execution only each key's final
        result, with timestamp ``LONG_MAX``, as Flink does)."""
        function = as_reduce_function(func)
        key = self.key_selector
        stream = self._one_input(
            "Keyed Reduce",
            "reduce",
            function,
            lambda: StreamGroupedReduceOperator(instance_copy(function), key),
            key,
            output_type=INHERIT,
        )
        # BATCH execution emits only each key's final result (Flink's BatchGroupedReduceOperator)
        return stream._with(batch_operator_factory=lambda: BatchGroupedReduceOperator(instance_copy(function), key))

    def window(self, window_assigner: WindowAssigner[Any, Any]) -> WindowedStream:
        """Windows per key, assigned by ``window_assigner``."""
        from panes.datastream.windowed import WindowedStream

        return WindowedStream(self, window_assigner)

    def count_window(self, size: int, slide: int | None = None) -> WindowedStream:
        """Count windows per key, as Java's ``countWindow``: ``count_window(size)`` fires and purges every
        ``size`` elements; ``count_window(size, slide)`` fires every ``slide`` elements over the last (up to)
        ``size``, so the first firings may hold fewer elements (PyFlink fires only full sliding windows).
        ``ValueError`` unless ``size > 0`` and ``slide > 0``."""
        from panes.windowing.count_windows import count_window_assigner

        return self.window(count_window_assigner(size, slide))


def _typed_sink(sink: Sink, transformation: Transformation) -> Sink:
    """A text file sink whose encoder shows values as ``print()`` does learns the type of the stream it writes
    (a copy: the same sink may write several streams)."""
    import copy

    from panes.datastream.printing import SimpleStringEncoder
    from panes.datastream.sinks import FileSink, stream_type

    if isinstance(sink, FileSink) and isinstance(sink.encoder, SimpleStringEncoder):
        typed = copy.copy(sink)
        typed.encoder = sink.encoder.typed(stream_type(transformation))
        return typed
    return sink
