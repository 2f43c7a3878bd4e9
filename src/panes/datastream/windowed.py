"""``WindowedStream`` (keyed) and ``AllWindowedStream`` (non-keyed): configure a window, then evaluate it.

Configuration is checked as Flink checks it: a merging assigner (sessions) refuses a trigger that cannot
merge (``UnsupportedOperationError``), the allowed lateness must be ``>= 0`` (``ValueError``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from panes.datastream.aggregations import FieldAggregations
from panes.datastream.plan import INHERIT, Derived, Inherit, OneInputTransformation
from panes.operators.base import OneInputStreamOperator
from panes.tags import OutputTag
from panes.time import DurationLike
from panes.types import RecordType
from panes.watermarks.per_key import PerKeyWatermarks, check_per_key_watermarks
from panes.windowing.assigners.base import WindowAssigner
from panes.windowing.assigners.global_windows import GlobalWindows
from panes.windowing.columnar.plan import columnar_output_type
from panes.windowing.evictors import Evictor
from panes.windowing.implementation import ALIGNED, EVICTING, GENERAL, Implementation, choose
from panes.windowing.internal_functions import (
    WindowFunctionSpec,
    aggregate_spec,
    as_all_window_function,
    as_process_all_window_function,
    as_window_function,
    process_spec,
    reduce_spec,
)
from panes.windowing.operator import EvictingWindowOperator, WindowOperator
from panes.windowing.triggers.base import Trigger
from panes.windowing.triggers.never import EndOfStreamTrigger
from panes.windowing.window_step import WindowStep, validate_window_configuration

if TYPE_CHECKING:
    from panes.datastream.stream import DataStream, KeyedStream


@dataclass(frozen=True)
class WindowSpec:
    """Everything a window transformation computes; runners read it (``OneInputTransformation.spec``)."""

    assigner: WindowAssigner[Any, Any]
    trigger: Trigger[Any, Any]
    evictor: Evictor[Any, Any] | None
    allowed_lateness: int
    late_data_tag: OutputTag[Any] | None
    function: WindowFunctionSpec
    key_selector: Any
    keyed: bool
    accumulation: str = "accumulating"
    """What later firings emit: ``accumulating``, ``discarding`` or ``retracting`` (``windowing.accumulation``)."""
    errors_to_output: bool = False
    """Whether what fails goes to an error side output (``side_output_errors``) rather than failing the job."""
    key_time: PerKeyWatermarks | None = None
    """Event time per key (``watermark_per_key``; ``panes.watermarks.per_key``), or ``None``: the stream's."""

    @property
    def output_only_after_end_of_input(self) -> bool:
        """Whether the window emits only at the end of its input: a keyed global window with the end-of-stream
        trigger (Flink's ``isOutputOnlyAfterEndOfStream``); in STREAMING execution it then runs on sorted input
        (``panes.operators.sorted_input.SortedUntilEndOfInput``), as Flink 2 runs it."""
        return self.keyed and isinstance(self.assigner, GlobalWindows) and type(self.trigger) is EndOfStreamTrigger

    def implementation(
        self, exact_order: bool = True, columns: bool = False, input_type: RecordType | None = None
    ) -> Implementation:
        """Which implementation runs this window on a host (``panes.windowing.implementation.choose``)."""
        return choose(self, exact_order=exact_order, columns=columns, input_type=input_type)

    def create_operator(self) -> OneInputStreamOperator:
        """The operator computing this window in STREAMING execution with Flink's emission order (the window
        operator, element by element; on sorted input when :attr:`output_only_after_end_of_input`)."""
        return self._sorted_until_end(self._create(self.implementation()))

    def create_batch_operator(self) -> WindowStep:
        """The window operator of BATCH execution (its input is sorted already; time per key has no meaning
        there, every window fires at the end of its key)."""
        return self._create(self.implementation(), streaming=False)

    def create_aligned_operator(self, batch: bool = False) -> OneInputStreamOperator:
        """The operator for a host that need not keep Flink's emission order across keys: the lean aligned
        operator where it applies (same results; panes of different keys firing together may leave in another
        order), the general one otherwise (``batch``: of BATCH execution)."""
        operator = self._create(self.implementation(exact_order=False))
        return operator if batch else self._sorted_until_end(operator)

    def _sorted_until_end(self, operator: WindowStep) -> OneInputStreamOperator:
        if not self.output_only_after_end_of_input:
            return operator
        from panes.operators.sorted_input import SortedUntilEndOfInput

        return SortedUntilEndOfInput(operator)

    def _create(self, implementation: Implementation, streaming: bool = True) -> WindowStep:
        """The element-by-element operator of ``implementation`` (the columnar ones are hosted by the Spark
        runner's ``ColumnarHost``), of STREAMING execution or not (``streaming``)."""
        from panes.datastream.stream import instance_copy
        from panes.windowing.aligned import AlignedWindowOperator

        spec = instance_copy(self.function)
        trigger = instance_copy(self.trigger)
        key_time = self.key_time if streaming else None
        if implementation.kind == ALIGNED:
            return AlignedWindowOperator(
                self.assigner, spec, self.key_selector, trigger, self.allowed_lateness, self.late_data_tag
            )
        if implementation.kind == EVICTING:
            return EvictingWindowOperator(
                self.assigner,
                spec,
                self.key_selector,
                instance_copy(self.evictor),
                trigger,
                self.allowed_lateness,
                self.late_data_tag,
                self.accumulation,
                key_time,
            )
        if implementation.kind != GENERAL:
            raise ValueError(f"the {implementation.kind} implementation has no element-by-element operator")
        return WindowOperator(
            self.assigner,
            spec,
            self.key_selector,
            trigger,
            self.allowed_lateness,
            self.late_data_tag,
            self.accumulation,
            key_time,
        )


def _constant_key(value: Any) -> int:
    """The key of every element of a non-keyed window (Flink's ``NullByteKeySelector``)."""
    return 0


class _Windowed(FieldAggregations):
    def __init__(self, input_stream: DataStream, assigner: WindowAssigner[Any, Any]) -> None:
        if not isinstance(assigner, WindowAssigner):
            raise TypeError(f"expected a WindowAssigner, got {type(assigner).__name__}")
        self._input = input_stream
        self._assigner = assigner
        self._trigger: Trigger[Any, Any] = assigner.get_default_trigger()
        self._evictor: Evictor[Any, Any] | None = assigner.get_default_evictor()
        self._lateness = 0
        self._late_tag: OutputTag[Any] | None = None
        self._error_tag: OutputTag[Any] | None = None
        self._accumulation = "accumulating"
        self._late_table: str | None = None
        self._key_time: PerKeyWatermarks | None = None

    def trigger(self, trigger: Trigger[Any, Any]) -> Any:
        """Replace the assigner's default trigger."""
        validate_window_configuration(self._assigner, trigger, self._lateness)
        self._trigger = trigger
        return self

    def evictor(self, evictor: Evictor[Any, Any]) -> Any:
        """Evict elements before and/or after the window function (keeps every element in state)."""
        if not isinstance(evictor, Evictor):
            raise TypeError(f"expected an Evictor, got {type(evictor).__name__}")
        self._evictor = evictor
        return self

    def allowed_lateness(self, time: DurationLike) -> Any:
        """How long after the watermark passed a window's end it still accepts (and re-fires on) elements."""
        self._lateness = validate_window_configuration(self._assigner, self._trigger, time)
        return self

    def side_output_late_data(self, output_tag: OutputTag[Any]) -> Any:
        """Send elements that arrive after their windows' cleanup to ``output_tag`` instead of dropping them."""
        if not isinstance(output_tag, OutputTag):
            raise TypeError(f"expected an OutputTag, got {type(output_tag).__name__}")
        self._late_tag = output_tag
        return self

    def late_data_table(self, path: str) -> Any:
        """Keep the elements that arrive after their windows' cleanup in a Parquet table under ``path``, with the
        step's uid, their timestamps and their windows (``panes.datastream.late_table``), for
        ``panes reconcile`` to correct the results with; also when ``side_output_late_data`` sends them on."""
        if not isinstance(path, str) or not path:
            raise TypeError(f"late_data_table takes the table's folder as a str, got {path!r}")
        self._late_table = path
        return self

    def accumulating_fired_panes(self) -> Any:
        """Each firing's results cover every element of the pane so far (the default; Flink's ``FIRE``)."""
        self._accumulation = "accumulating"
        return self

    def discarding_fired_panes(self) -> Any:
        """Each firing's results cover the elements since the window's previous firing: the pane is emptied
        whenever it fires (every ``FIRE`` becomes ``FIRE_AND_PURGE``)."""
        self._accumulation = "discarding"
        return self

    def retracting_fired_panes(self) -> Any:
        """Accumulating, and a window's later firing first retracts what its previous firing emitted: results
        become rows with a ``retract`` column (``panes.windowing.accumulation``)."""
        self._accumulation = "retracting"
        return self

    def side_output_errors(self, output_tag: OutputTag[Any]) -> Any:
        """Send bad records (e.g. elements without a timestamp for event-time windows) to ``output_tag``."""
        if not isinstance(output_tag, OutputTag):
            raise TypeError(f"expected an OutputTag, got {type(output_tag).__name__}")
        self._error_tag = output_tag
        return self

    def _key(self) -> Any:
        raise NotImplementedError

    def _build(self, name: str, function: WindowFunctionSpec, output_type: Any = INHERIT) -> DataStream:
        """The window transformation; ``output_type`` is its results' type (``INHERIT``: the input's, for a
        reduce without window function), a declaration, or ``None`` (no schema)."""
        from panes.datastream.stream import DataStream, declared_type

        keyed = self._key() is not _constant_key
        late_tag = self._late_tag
        if self._late_table is not None and late_tag is None:
            late_tag = OutputTag("late-data-table")
        spec = WindowSpec(
            self._assigner,
            self._trigger,
            self._evictor,
            self._lateness,
            late_tag,
            function,
            self._key(),
            keyed,
            self._accumulation,
            self._error_tag is not None,
            self._key_time,
        )
        if output_type is None:
            # built-in aggregations over typed records give typed results (see panes.windowing.columnar)
            output_type = Derived(functools.partial(columnar_output_type, spec))
        if self._accumulation == "retracting":
            from panes.datastream.stream import declared_type

            inner = output_type if isinstance(output_type, (Derived, Inherit)) else declared_type(output_type)
            output_type = Derived(functools.partial(retracting_output, inner))
        input_transformation = self._input.transformation
        if not keyed:
            from panes.datastream.partitioning import GlobalPartitioner
            from panes.datastream.plan import PartitionTransformation

            input_transformation = PartitionTransformation(
                name="global", inputs=(input_transformation,), partitioner=GlobalPartitioner()
            )
        transformation = OneInputTransformation(
            name=name,
            inputs=(input_transformation,),
            parallelism=None if keyed else 1,
            op_kind="window",
            spec=spec,
            operator_factory=spec.create_operator,
            batch_operator_factory=spec.create_batch_operator,
            key_selector=self._key(),
            error_tag=self._error_tag,
            output_type=output_type if isinstance(output_type, (Derived, Inherit)) else declared_type(output_type),
            side_output_types=() if late_tag is None else ((late_tag.tag_id, INHERIT),),
            key_time=self._key_time,
        )
        result = DataStream(self._input.env, transformation)
        if self._late_table is not None:
            assert late_tag is not None
            self._attach_late_table(result, late_tag, self._late_table)
        return result

    def _attach_late_table(self, result: DataStream, tag: OutputTag[Any], path: str) -> None:
        """Write what ``result``'s window sends to ``tag`` as a late table under ``path`` (``late_table``)."""
        from panes.datastream.late_table import LateRows, late_table_type

        input_type = self._input_type()
        row_type = late_table_type(input_type)
        assert input_type is not None
        rows = LateRows(self._assigner, input_type, result.transformation.id)
        result.get_side_output(tag).process(rows, output_type=row_type).name("Late data table").sink_to_files(path)

    def reduce(self, reduce_function: Any, window_function: Any = None, output_type: Any = None) -> DataStream:
        """Reduce each pane incrementally; the optional ``window_function`` gets the reduced value. Results have
        ``output_type`` when given (PyFlink's argument), else the input's type without a window function and no
        schema with one."""
        spec = reduce_spec(reduce_function, self._wrap(window_function))
        if output_type is None and window_function is None:
            output_type = INHERIT
        return self._build("Window(Reduce)", spec, output_type)

    def aggregate(
        self,
        aggregate_function: Any,
        window_function: Any = None,
        accumulator_type: Any = None,
        output_type: Any = None,
    ) -> DataStream:
        """Aggregate each pane incrementally; the optional ``window_function`` gets the result. ``output_type``
        declares the results' type. ``accumulator_type`` is PyFlink's declaration of the accumulator's type: it must
        be a type declaration (``TypeError`` otherwise), and accumulators stay Python objects in state."""
        from panes.datastream.stream import declared_type

        declared_type(accumulator_type)
        spec = aggregate_spec(aggregate_function, self._wrap(window_function))
        return self._build("Window(Aggregate)", spec, output_type)

    def process_batch(self, fn: Any, output_type: Any, batch_format: str = "pandas") -> DataStream:
        """Evaluate panes on columns: ``fn`` gets a ``pandas.DataFrame`` (or, with ``batch_format="pyarrow"``, a
        ``pyarrow.Table``) of the elements of one or more panes, with ``window_start`` and ``window_end``
        columns, and returns their results as columns of ``output_type`` (one row per pane, in order, or rows
        with a ``window_end`` column). The rules are in ``panes.windowing.batch_function``; a keyed window
        that can run on columns (``panes explain``) calls ``fn`` once for all panes a watermark fires in a
        shard. Raises ``TypeError`` when the input or ``output_type`` is not a record type with named fields."""
        from panes.windowing.batch_function import BatchWindowFunction

        function = BatchWindowFunction(fn, self._input_type(), output_type, batch_format)
        return self._build("Window(ProcessBatch)", process_spec(function), function.output_type)

    def _input_type(self) -> RecordType | None:
        """The type of the window's input when the job is built (a DataFrame source's as its runner reads it)."""
        from panes.datastream.plan import Plan, resolve_types, shared_type, stream_channels

        stream = self._input.transformation
        types = resolve_types(Plan((stream,)), self._input.env.source_type)  # type: ignore[arg-type]
        return shared_type(types.get(channel) for channel in stream_channels(stream))

    def _wrap(self, window_function: Any) -> Any:
        return window_function


class WindowedStream(_Windowed):
    """Windows of a ``KeyedStream``."""

    def __init__(self, keyed_stream: KeyedStream, assigner: WindowAssigner[Any, Any]) -> None:
        super().__init__(keyed_stream, assigner)
        self._keyed_stream = keyed_stream
        if keyed_stream.key_time is not None:  # KeyedStream.watermark_per_key
            self.watermark_per_key(keyed_stream.key_time)

    def _key(self) -> Any:
        return self._keyed_stream.key_selector

    def _wrap(self, window_function: Any) -> Any:
        return None if window_function is None else as_window_function(window_function)

    def watermark_per_key(self, watermarks: PerKeyWatermarks) -> WindowedStream:
        """Give each key an event time of its own (beyond Flink; ``docs/event-time-per-key.md``): its windows
        fire, its elements are judged late and its state is cleaned up by its own watermark, ``max(largest
        timestamp of its elements - out_of_orderness - 1, stream watermark - max_lag)``. Build ``watermarks``
        with ``PerKeyWatermarks.for_bounded_out_of_orderness(...).with_max_lag(...)``. The step forwards the
        stream's watermark minus ``max_lag`` downstream. STREAMING execution only (BATCH fires every window at
        the end of its key anyway).

        Raises ``TypeError`` for anything but ``PerKeyWatermarks``, ``ValueError`` when its ``max_lag`` is not
        set (how far a key may fall behind the stream bounds the state the step keeps) and for a processing-time
        window (per-key time is event time)."""
        check_per_key_watermarks(watermarks)
        if not self._assigner.is_event_time() and not isinstance(self._assigner, GlobalWindows):
            raise ValueError(
                f"watermark_per_key gives keys their own event time, but {self._assigner!r} makes processing-time "
                "windows; use an event-time assigner"
            )
        self._key_time = watermarks
        return self

    def process(self, process_window_function: Any, output_type: Any = None) -> DataStream:
        """Evaluate each pane whole with a ``ProcessWindowFunction`` (or callable ``(key, context, elements)``)."""
        return self._build("Window(Process)", process_spec(process_window_function), output_type)

    def apply(self, window_function: Any, output_type: Any = None) -> DataStream:
        """Evaluate each pane whole with a ``WindowFunction`` (or callable ``(key, window, inputs)``)."""
        return self._build("Window(Apply)", process_spec(as_window_function(window_function)), output_type)


class AllWindowedStream(_Windowed):
    """Windows of a non-keyed stream (one key for everything, parallelism 1)."""

    def _key(self) -> Any:
        return _constant_key

    def _wrap(self, window_function: Any) -> Any:
        return None if window_function is None else as_process_all_window_function(window_function)

    def process(self, process_all_window_function: Any, output_type: Any = None) -> DataStream:
        """Evaluate each pane with a ``ProcessAllWindowFunction`` (or callable ``(context, elements)``)."""
        return self._build(
            "AllWindow(Process)",
            process_spec(as_process_all_window_function(process_all_window_function)),
            output_type,
        )

    def apply(self, all_window_function: Any, output_type: Any = None) -> DataStream:
        """Evaluate each pane with an ``AllWindowFunction`` (or callable ``(window, inputs)``)."""
        return self._build("AllWindow(Apply)", process_spec(as_all_window_function(all_window_function)), output_type)


def retracting_output(inner: Any, input_type: RecordType | None) -> RecordType | None:
    """A retracting window step's output type (``Derived(partial(retracting_output, inner))``): the type its window
    function's results have (``inner``: a ``RecordType``, an ``Inherit`` or a ``Derived`` from the input's type, or
    ``None``) with the ``retract`` column (``panes.windowing.accumulation.retracting_type``)."""
    from panes.windowing.accumulation import retracting_type

    if isinstance(inner, Derived):
        return retracting_type(inner.derive(input_type))
    if isinstance(inner, Inherit):
        return retracting_type(input_type)
    return retracting_type(inner)
