"""One parallel instance of a local job's step (:class:`Instance`: an operator, a sink writer or a source reader),
its output (:class:`Router`: records routed by edge and partitioner, watermarks broadcast) and where its input
valves' combined watermarks go (:class:`ValveOutput`). The job (``panes.local.job``) delivers between them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from panes.datastream.partitioning import ForwardPartitioner, StreamPartitioner
from panes.datastream.plan import OneInputTransformation, SinkTransformation, SourceTransformation
from panes.datastream.sinks import FileSink, SinkWriter, WriterSink, deliver
from panes.elements import MAX_WATERMARK, StreamRecord, Watermark, WatermarkStatus
from panes.errors import located
from panes.local.files import LocalFileSink
from panes.local.graph import Edge, Node
from panes.local.source_reader import SourceReader
from panes.operators.base import AbstractStreamOperator, OneInputStreamOperator
from panes.operators.sorted_input import BroadcastFirstInput, SortedKeyedInput, sorted_input_for
from panes.operators.two_input import TwoInputStreamOperator
from panes.tags import OutputTag
from panes.types import SchemaMismatchError
from panes.watermarks.operator import TimestampsAndWatermarksOperator
from panes.watermarks.valve import StatusWatermarkValve

if TYPE_CHECKING:
    from panes.local.job import LocalJob


class Router:
    """The output of one instance: routes records by edge and partitioner, broadcasts watermarks."""

    def __init__(self, job: LocalJob, node: Node, index: int) -> None:
        self._job = job
        self.routes: list[tuple[Edge, StreamPartitioner]] = []
        for edge in node.outputs:
            partitioner = edge.resolved_partitioner().copy()
            partitioner.setup(index, node.parallelism)
            self.routes.append((edge, partitioner))
        self._index = index
        # outputs whose values the operator makes and whose type is declared: each value is checked
        self.checked = job.checked_outputs(node)
        self.operator: AbstractStreamOperator | None = None

    def _send(self, tag: OutputTag[Any] | None, record: StreamRecord[Any]) -> None:
        if self.checked:
            record_type = self.checked.get(None if tag is None else tag.tag_id)
            if record_type is not None:
                if self.operator is None:
                    record = StreamRecord(record_type.conform(record.value), record.timestamp)
                else:
                    conformed = self.operator.conform_result(record, record_type, tag)
                    if conformed is None:
                        return
                    record = conformed
        for edge, partitioner in self.routes:
            if edge.tag == tag:
                try:
                    targets = partitioner.select(record.value, edge.downstream.parallelism)
                except Exception as error:
                    # a record the downstream key selector refuses (or fails on) is that operator's failure
                    self._job.report_unroutable(edge, record, error)
                    continue
                for target in targets:
                    self._job.deliver_record(edge, self._index, target, record)

    def collect(self, record: StreamRecord[Any]) -> None:
        self._send(None, record)

    def main_sender(self) -> Callable[[Any, int | None], None]:
        """What sends a value of the operator's main output at a timestamp as ``operator.output.collect(
        StreamRecord(value, timestamp))`` does, in fewer calls: counted as ``records_out``, conformed to the
        output's declared type (a value that does not fit takes that whole way, which reports it), routed along
        each main edge by its partitioner. To one instance by a forward edge the target is fixed, and a file sink
        that keeps its rows as they come (``LocalFileSink.canonical``) takes the value itself."""
        operator = self.operator
        assert operator is not None
        counters = operator.counters
        collect = operator.output.collect
        record_type = self.checked.get(None) if self.checked else None
        conform = None if record_type is None else record_type.conformer()
        routes = [(edge, partitioner) for edge, partitioner in self.routes if edge.tag is None]
        deliver = self._deliverer(routes)

        def send(value: Any, timestamp: int | None) -> None:
            counters.records_out += 1
            if conform is not None:
                try:
                    value = conform(value)
                except SchemaMismatchError:
                    counters.records_out -= 1
                    collect(StreamRecord(value, timestamp))
                    return
            deliver(value, timestamp)

        return send

    def _deliverer(self, routes: list[tuple[Edge, StreamPartitioner]]) -> Callable[[Any, int | None], None]:
        """What :meth:`_send` does with a conformed value of the main output along ``routes``."""
        job = self._job
        if len(routes) == 1 and type(routes[0][1]) is ForwardPartitioner and routes[0][0].downstream.parallelism == 1:
            edge = routes[0][0]
            target = job.instances[id(edge.downstream)][0]
            if target.operator is None and target.sorted is None and target.file is not None and target.file.canonical:
                append = target.file.rows.append  # what the target's on_record does with such a value
                return lambda value, timestamp: append(value)
            on_record, input_index = target.on_record, edge.input_index
            return lambda value, timestamp: on_record(input_index, StreamRecord(value, timestamp))
        index = self._index

        def deliver(value: Any, timestamp: int | None) -> None:
            record = StreamRecord(value, timestamp)
            for edge, partitioner in routes:
                try:
                    targets = partitioner.select(value, edge.downstream.parallelism)
                except Exception as error:
                    job.report_unroutable(edge, record, error)
                    continue
                for target in targets:
                    job.deliver_record(edge, index, target, record)

        return deliver

    def collect_side(self, tag: OutputTag[Any], record: StreamRecord[Any]) -> None:
        self._send(tag, record)

    def emit_watermark(self, watermark: Watermark) -> None:
        for edge, _ in self.routes:
            for target in range(edge.downstream.parallelism):
                self._job.deliver_watermark(edge, self._index, target, watermark)

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        for edge, _ in self.routes:
            for target in range(edge.downstream.parallelism):
                self._job.deliver_status(edge, self._index, target, status)


class ValveOutput:
    """Where a valve's combined watermark goes: input ``input_index`` of an operator (or nowhere: sinks)."""

    def __init__(self, instance: Instance, input_index: int) -> None:
        self._instance = instance
        self._input = input_index

    def emit_watermark(self, watermark: Watermark) -> None:
        self._instance.on_watermark(self._input, watermark)

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        self._instance.on_status(self._input, status)


class Instance:
    """One parallel instance of a node: an operator, a sink writer or a source reader."""

    def __init__(self, job: LocalJob, node: Node, index: int) -> None:
        self.node = node
        self.index = index
        self.output = Router(job, node, index)
        # channels: one per (edge, upstream instance) of each input
        self.channels: list[dict[tuple[int, int], int]] = []
        for edges in node.inputs:
            mapping: dict[tuple[int, int], int] = {}
            for edge in edges:
                for upstream_index in range(edge.upstream.parallelism):
                    mapping[(id(edge), upstream_index)] = len(mapping)
            self.channels.append(mapping)
        self.valves = [StatusWatermarkValve(max(1, len(mapping))) for mapping in self.channels]
        self.valve_outputs = [ValveOutput(self, i) for i in range(len(self.channels))]
        self.ended = [set[int]() for _ in self.channels]
        self.finished = False
        self.operator: AbstractStreamOperator | None = None
        transformation = node.transformation
        self.name = f"{transformation.name} ({index + 1}/{node.parallelism})"
        self.sorted: SortedKeyedInput | BroadcastFirstInput | None = None
        if isinstance(transformation, (OneInputTransformation,)) or transformation.kind == "two_input":
            if isinstance(transformation, OneInputTransformation):
                factory = transformation.factory_for(job.batch)
            else:
                factory = transformation.operator_factory  # type: ignore[attr-defined]
            self.operator = factory()
            if job.batch and isinstance(self.operator, TimestampsAndWatermarksOperator):
                self.operator.emit_progressive_watermarks = False
            self.operator.error_tag = transformation.error_tag
            self.operator.setup(
                self.output,
                job.clock,
                task_name=self.name,
                subtask_index=index,
                parallelism=node.parallelism,
                max_parallelism=job.max_parallelism,
            )
            self.output.operator = self.operator
            if job.batch:
                self.sorted = sorted_input_for(self.operator)
            if job.operator_hook is not None:
                job.operator_hook(transformation, index, self.operator)
        self.sink = transformation.sink if isinstance(transformation, SinkTransformation) else None
        self.file: LocalFileSink | None = None
        if isinstance(self.sink, FileSink):
            self.file = job.file_sink(node, self.output)
        self.writer: SinkWriter | None = None
        if isinstance(self.sink, WriterSink):
            self.writer = self.sink.create_writer(index, node.parallelism)
            self.writer.open(job.writer_context(node, self.name, self.output))
        self.reader: SourceReader | None = None
        if isinstance(transformation, SourceTransformation):
            self.reader = SourceReader(transformation.source, index, node.parallelism)
        self.on_record = self._record_delivery()

    # -- inputs ------------------------------------------

    def _record_delivery(self) -> Callable[[int, StreamRecord[Any]], None]:
        """What takes a record of input ``input_index`` (``on_record``), chosen once per instance: BATCH's sorted
        input, the operator's input method, the rows of a file sink whose values come canonical (nothing to
        check, nothing that can fail), the sink, or nothing (a source)."""
        if self.sorted is not None:
            add = self.sorted.add
            return lambda input_index, record: add(record, input_index)
        operator = self.operator
        if isinstance(operator, OneInputStreamOperator):
            process = operator.process_record
            return lambda input_index, record: process(record)
        if isinstance(operator, TwoInputStreamOperator):
            first, second = operator.process_record1, operator.process_record2
            return lambda input_index, record: (first if input_index == 0 else second)(record)
        if self.file is not None and self.file.canonical:  # rows kept as they come (LocalFileSink.canonical)
            append = self.file.rows.append
            return lambda input_index, record: append(record.value)
        if self.sink is not None:
            write = self._write
            return lambda input_index, record: write(record)
        return lambda input_index, record: None

    def _write(self, record: StreamRecord[Any]) -> None:
        """Write ``record`` to the sink; a sink that raises fails the job naming the sink (the error is located,
        so the steps upstream let it through: see ``panes.errors``)."""
        assert self.sink is not None
        try:
            if self.file is not None:
                self.file.add(record)
                return
            if self.writer is not None:
                self.writer.write(record)
                return
            written = deliver(self.sink, record, self.index, self.node.parallelism)
        except Exception as error:
            failure = located(error, self.name)
            raise failure from failure.__cause__
        if not written:
            raise TypeError(f"the local runner cannot write to {self.sink!r}")

    def on_watermark(self, input_index: int, watermark: Watermark) -> None:
        if self.sorted is not None:
            return  # BATCH: the final watermark follows the sorted input (see end_of_input)
        operator = self.operator
        if isinstance(operator, TwoInputStreamOperator):
            (operator.process_watermark1 if input_index == 0 else operator.process_watermark2)(watermark)
        elif operator is not None:
            operator.process_watermark(watermark)

    def end_of_input(self) -> None:
        """All inputs ended: process a sorted input key by key and forward ``LONG_MAX``; then ``finish``."""
        if self.operator is None:
            return
        if self.sorted is not None:
            self.sorted.drain()
            self.operator.process_watermark(MAX_WATERMARK)
        self.operator.finish()

    def on_status(self, input_index: int, status: WatermarkStatus) -> None:
        if self.sorted is not None:
            return
        operator = self.operator
        if isinstance(operator, TwoInputStreamOperator):
            (operator.process_watermark_status1 if input_index == 0 else operator.process_watermark_status2)(status)
        elif operator is not None:
            operator.process_watermark_status(status)
