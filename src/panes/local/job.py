"""A running local job: sources are read one element at a time and every element is pushed through the
whole graph before the next is read, so the job can be stepped, snapshotted and restored between any two
elements.

Per input, each operator instance combines its input channels' watermarks and statuses with a
``StatusWatermarkValve`` (min over active channels), exactly as a Flink task does. A bounded source emits
the final ``LONG_MAX`` watermark when it ends; an operator finishes when all its input channels ended.
Every operator instance is told the processing time whenever the clock may have moved, which fires its
processing-time timers and periodic watermarks: after every source element, except that a stepping clock
with ``advance="per_step"`` (the default) moves only where a step of the input ends (a ``StepEnd``: after
each list of ``from_micro_batches``; a collection or a file source is one step, over which it does not move),
as Spark's watermark moves between micro-batches.

In BATCH execution (``batch=True``, see ``panes.datastream.runtime_mode``) every keyed operator instance takes
its input through a ``SortedKeyedInput``: it keeps the records, ignores watermarks, and when all its inputs
ended processes them one key at a time (``panes.operators.sorted_input``), then forwards ``LONG_MAX``. Timestamp
assigners emit no watermarks but that final one, keyed reduces use their batch operator, and processing
time does not move.
"""

from __future__ import annotations

import contextlib
import copy
import pickle
import time
from collections.abc import Callable, Iterator
from typing import Any

from panes.datastream.execution import metric_names
from panes.datastream.fingerprint import STATE_FORMAT, JobFingerprint, check_restart, fingerprint, is_keyed
from panes.datastream.partitioning import ForwardPartitioner
from panes.datastream.plan import (
    Plan,
    SinkTransformation,
    SourceTransformation,
    Transformation,
    checked_outputs,
    error_output_channels,
    resolve_types,
    shared_type,
    stream_channels,
)
from panes.datastream.sinks import (
    FileSink,
    WriterContext,
    sink_name,
    sink_stream_type,
)
from panes.datastream.sources import ProcessingTimeAdvance, StepEnd
from panes.elements import MAX_WATERMARK, StreamRecord, Watermark, WatermarkStatus
from panes.errors import RESTART_ADVICE, BadInput, ErrorRecord, IncompatibleCheckpointError, located
from panes.local.files import LocalFileSink, canonical_input
from panes.local.graph import Edge, Node, build_graph
from panes.local.instance import Instance, Router
from panes.local.runs import RunChain
from panes.operators.base import AbstractStreamOperator
from panes.operators.metrics import OperatorMetrics, combine
from panes.operators.rescaling import rescale
from panes.timers.clock import ProcessingTimeService
from panes.types import RecordType
from panes.watermarks.operator import TimestampsAndWatermarksOperator

OperatorHook = Callable[[Transformation, int, AbstractStreamOperator], None]
"""Called with each operator instance a job creates: ``(transformation, subtask_index, operator)``, after
``setup`` and before ``open`` (see ``LocalRunner``)."""


ADVANCES = ("per_step", "per_element")
"""When a stepping clock moves on the local runner (``LocalRunner``'s ``advance``)."""


def check_advance(advance: str) -> None:
    """Raise ``ValueError`` unless ``advance`` is one of :data:`ADVANCES`."""
    if advance not in ADVANCES:
        raise ValueError(
            f"advance must be 'per_step' (watermarks move where a step of the input ends, as on Spark) or "
            f"'per_element' (after every element), not {advance!r}"
        )


class LocalJob:
    """A plan being executed in process. ``step()`` reads and processes one source element; ``run()`` runs
    to the end (bounded sources) or for ``max_records`` elements; ``snapshot()`` between steps captures the
    whole job, which :meth:`restore` resumes with identical output. ``operator_hook`` (optional) is called
    with each operator instance before it opens (see :data:`OperatorHook`). ``run()`` takes runs of elements
    at once where the job's shape allows it with identical output (``panes.local.runs``; ``runs=False``: never)."""

    def __init__(
        self,
        plan: Plan,
        clock: ProcessingTimeService,
        *,
        parallelism: int = 1,
        max_parallelism: int = 128,
        snapshot: bytes | None = None,
        batch: bool = False,
        operator_hook: OperatorHook | None = None,
        advance: str = "per_step",
        runs: bool = True,
    ) -> None:
        check_advance(advance)
        self.plan = plan
        self.clock = clock
        self.batch = batch
        self.ticks_per_step = advance == "per_step" and hasattr(clock, "tick")
        """Whether the stepping clock moves only where a step of the input ends (``StepEnd``), not after
        every element; other clocks are read after every element either way."""
        self.operator_hook = operator_hook
        self.max_parallelism = max_parallelism
        self.types = resolve_types(plan)
        self.files: dict[int, LocalFileSink] = {}
        self.nodes = build_graph(plan, parallelism)
        self.instances: dict[int, list[Instance]] = {}
        for node in self.nodes:
            self.instances[id(node)] = [Instance(self, node, i) for i in range(node.parallelism)]
        self._sources = [inst for node in self.nodes for inst in self.instances[id(node)] if inst.reader is not None]
        self._split_sources = {id(inst) for inst in self._sources if self._link_split_watermarks(inst)}
        """The source instances whose own watermark strategy runs a generator per split."""
        self._next_source = 0
        self.records_read = 0
        self.source_errors: dict[str, int] = {}
        """By source name, the inputs each source could not read and sent to its error output (sources that sent
        any; like the steps' counters, 0 again after a restore)."""
        self._started = time.monotonic()
        if snapshot is not None:
            self._restore(snapshot)
        for instance in self._all_instances():
            if instance.operator is not None:
                instance.operator.open()
        self._runs = RunChain.find(self) if runs else None
        """Where the job's source, timestamps and window take runs of elements at once (``panes.local.runs``;
        ``runs=False``: never, every element alone, the reference the tests compare runs with)."""

    def _link_split_watermarks(self, instance: Instance) -> bool:
        """Link ``instance`` (a source's) to the source's own watermark step when it follows on a forward edge,
        instance to instance (``env.from_source(source, strategy, ...)``), so that step runs a generator per split
        (``panes.watermarks.splits``); whether it does."""
        reader = instance.reader
        assert reader is not None
        linked = False
        for edge in instance.node.outputs:
            downstream = edge.downstream
            if (
                edge.tag is not None
                or downstream.parallelism != instance.node.parallelism
                or not isinstance(edge.resolved_partitioner(), ForwardPartitioner)
            ):
                continue
            operator = self.instances[id(downstream)][instance.index].operator
            if isinstance(operator, TimestampsAndWatermarksOperator) and operator.per_split and not self.batch:
                linked = reader.link(operator) or linked
        return linked

    def checked_outputs(self, node: Node) -> dict[str | None, RecordType]:
        """By side-output tag id (``None``: main output): the declared types ``node``'s values are checked
        against (see ``panes.datastream.plan.checked_outputs``; a source's declared type is checked too)."""
        transformation = node.transformation
        own = {channel: t for channel, t in self.types.items() if channel[0] == transformation.id}
        if isinstance(transformation, SourceTransformation):
            declared = transformation.output_type
            return {} if not isinstance(declared, RecordType) else {None: declared}
        return {channel[1]: t for channel, t in checked_outputs(transformation, own).items()}

    def file_sink(self, node: Node, output: Router) -> LocalFileSink:
        """The (shared) file writer of ``node``'s ``FileSink``."""
        transformation = node.transformation
        assert isinstance(transformation, SinkTransformation)
        sink = transformation.sink
        if id(sink) not in self.files:
            tag = transformation.error_tag

            def refuse(record: StreamRecord[Any], failure: ErrorRecord) -> None:
                assert tag is not None
                output.collect_side(tag, StreamRecord(failure, record.timestamp))

            self.files[id(sink)] = self._local_file(transformation, None if tag is None else refuse)
        return self.files[id(sink)]

    def writer_context(self, node: Node, name: str, output: Router) -> WriterContext:
        """What the writer of an instance (named ``name``) of ``node``'s ``WriterSink`` is told: the sink's uid, the
        stream's type, and its error output (the sink's ``errors`` tag) when it has one."""
        transformation = node.transformation
        assert isinstance(transformation, SinkTransformation)
        tag = transformation.error_tag

        def refuse(record: StreamRecord[Any], failure: ErrorRecord) -> None:
            assert tag is not None
            output.collect_side(tag, StreamRecord(failure, record.timestamp))

        channels = stream_channels(transformation.inputs[0])
        record_type = shared_type(self.types.get(c) for c in channels)
        return WriterContext(node.key, name, record_type, None if tag is None else refuse)

    def _local_file(self, transformation: SinkTransformation, refuse: Any) -> LocalFileSink:
        channels = stream_channels(transformation.inputs[0])
        schema = sink_stream_type(
            transformation.sink,
            [self.types.get(c) for c in channels],
            bool(channels) and set(channels) <= error_output_channels(self.plan.transformations()),
        )
        inputs = [
            (
                self.checked_outputs(edge.upstream).get(None if edge.tag is None else edge.tag.tag_id),
                sum(other.tag == edge.tag for other in edge.upstream.outputs),
            )
            for node in self.nodes
            if isinstance(node.transformation, SinkTransformation) and node.transformation.sink is transformation.sink
            for edges in node.inputs
            for edge in edges
        ]
        canonical = canonical_input(transformation.sink, schema, inputs)
        return LocalFileSink(transformation.sink, sink_name(transformation), schema, refuse, canonical)

    def _all_instances(self) -> Iterator[Instance]:
        for node in self.nodes:
            yield from self.instances[id(node)]

    # -- delivery ------------------------------------------

    def _target(self, edge: Edge, target: int) -> Instance:
        return self.instances[id(edge.downstream)][target]

    def deliver_record(self, edge: Edge, sender: int, target: int, record: StreamRecord[Any]) -> None:
        self._target(edge, target).on_record(edge.input_index, record)

    def report_unroutable(self, edge: Edge, record: StreamRecord[Any], error: Exception) -> None:
        """``record`` could not be routed along ``edge`` (its key is missing or null, the key selector or a
        custom partitioner raised): a failure of the step it was going to, reported as that step reports its
        own failures."""
        target = self._target(edge, 0)
        if target.operator is None:
            failure = located(error, target.name)
            raise failure from failure.__cause__
        target.operator.counters.records_in += 1
        target.operator.report_failure(record, error)

    def deliver_watermark(self, edge: Edge, sender: int, target: int, watermark: Watermark) -> None:
        instance = self._target(edge, target)
        channel = instance.channels[edge.input_index][(id(edge), sender)]
        instance.valves[edge.input_index].input_watermark(watermark, channel, instance.valve_outputs[edge.input_index])

    def deliver_status(self, edge: Edge, sender: int, target: int, status: WatermarkStatus) -> None:
        instance = self._target(edge, target)
        channel = instance.channels[edge.input_index][(id(edge), sender)]
        instance.valves[edge.input_index].input_watermark_status(
            status, channel, instance.valve_outputs[edge.input_index]
        )

    def _end_of_input(self, instance: Instance) -> None:
        """``instance`` will send nothing more: tell every downstream instance, finishing those fully ended."""
        instance.finished = True
        for edge in instance.node.outputs:
            for downstream in self.instances[id(edge.downstream)]:
                channel = downstream.channels[edge.input_index][(id(edge), instance.index)]
                downstream.ended[edge.input_index].add(channel)
                if downstream.finished:
                    continue
                if all(
                    len(ended) == len(channels)
                    for ended, channels in zip(downstream.ended, downstream.channels, strict=True)
                ):
                    downstream.end_of_input()
                    self._end_of_input(downstream)

    # -- stepping ------------------------------------------

    def metrics(self, state_bytes: bool = True) -> dict[str, OperatorMetrics]:
        """One :class:`OperatorMetrics` per step with an operator, by step name (``metric_names``), summed over
        its parallel instances: what the job counted so far and holds now. ``state_bytes=False`` skips
        measuring the state (a snapshot of every operator): cheaper for frequent polling."""
        names = metric_names(self.plan)
        found: list[OperatorMetrics] = []
        for instance in self._all_instances():
            operator = instance.operator
            name = names.get(instance.node.transformation.id)
            if operator is not None and name is not None:
                found.append(operator.metrics(name, state_bytes))
        return combine(found)

    def is_finished(self) -> bool:
        return all(source.finished for source in self._sources)

    def step(self) -> bool:
        """Read and process one element (or finish one exhausted source); False when nothing is left."""
        active = [s for s in self._sources if not s.finished]
        if not active:
            return False
        instance = self._sources[self._next_source % len(self._sources)]
        while instance.finished:
            self._next_source += 1
            instance = self._sources[self._next_source % len(self._sources)]
        self._next_source += 1
        reader = instance.reader
        assert reader is not None
        has_element, element = reader.next()
        self.consume(instance, has_element, element)
        return True

    def consume(self, instance: Instance, has_element: bool, element: Any) -> None:
        """Process what source ``instance`` read (``has_element`` and ``element``, its reader's ``next()``): an
        element, a control element (a step's end, processing time), an input it could not read, or its end."""
        reader = instance.reader
        assert reader is not None
        if has_element and type(element) is ProcessingTimeAdvance:
            self.advance_processing_time(max(element.time, self.clock.get_current_processing_time()))
            return
        if has_element and type(element) is StepEnd:
            if not self.batch and self.ticks_per_step:
                self._tick()
            return
        if has_element and isinstance(element, BadInput):
            self._refuse_line(instance, element)
            return
        if has_element:
            record = element if isinstance(element, StreamRecord) else StreamRecord(element)
            self.records_read += 1
            if id(instance) in self._split_sources:
                reader.tell_split()
            instance.output.collect(record)
            if not self.batch and not self.ticks_per_step:
                self._tick()
        else:
            if reader.source.is_bounded():
                instance.output.emit_watermark(MAX_WATERMARK)
            self._end_of_input(instance)

    def _refuse_line(self, instance: Instance, line: BadInput) -> None:
        """An input a source could not read (a file's line, a Kafka record): to the source's error output, else
        the job fails."""
        transformation = instance.node.transformation
        tag = transformation.error_tag
        if tag is None:
            raise line.error(transformation.name)
        instance.output.collect_side(tag, StreamRecord(line.record(transformation.name)))
        self.source_errors[transformation.name] = self.source_errors.get(transformation.name, 0) + 1

    def _tick(self) -> None:
        """Move a stepping clock one step (other clocks are read as they are) and tell the operators."""
        tick = getattr(self.clock, "tick", None)
        if tick is not None:
            tick()
        self.advance_processing_time(self.clock.get_current_processing_time())

    def advance_processing_time(self, now: int) -> None:
        """Tell every operator instance that processing time is ``now`` (fires timers and periodic watermarks)."""
        setter = getattr(self.clock, "set_current_time", None)
        if setter is not None and self.clock.get_current_processing_time() != now:
            setter(now)
        for instance in self._all_instances():
            if instance.operator is not None:
                instance.operator.advance_processing_time(now)

    def run(self, max_records: int | None = None) -> int:
        """Step until the sources are done, or ``max_records`` more elements were read; returns how many."""
        start = self.records_read
        runs = self._runs
        while max_records is None or self.records_read - start < max_records:
            if runs is not None and not runs.source.finished:
                runs.advance(None if max_records is None else max_records - (self.records_read - start))
            elif not self.step():
                break
        return self.records_read - start

    def close(self) -> None:
        """Close the operators, flush and close the sink writers (``WriterSink``: a transactional one commits) and
        write what file sinks collected."""
        for instance in self._all_instances():
            if instance.operator is not None:
                instance.operator.close()
        for instance in self._all_instances():
            if instance.reader is not None:
                instance.reader.close()
            if instance.writer is not None:
                instance.writer.flush(True)
                instance.writer.close()
        # every file sink writes its dataset, also one that received nothing (empty, with its schema when known)
        for node in self.nodes:
            transformation = node.transformation
            if (
                isinstance(transformation, SinkTransformation)
                and isinstance(transformation.sink, FileSink)
                and id(transformation.sink) not in self.files
            ):
                self.files[id(transformation.sink)] = self._local_file(transformation, None)
        # in plan order: a sink writing another sink's refused values settles after it
        for file in self.files.values():
            file.finish()
        for file in self.files.values():
            file.write(int(time.time() * 1000))  # buckets name where files land: the wall clock, as on Spark
        self.files.clear()

    def abort(self) -> None:
        """The job failed: sink writers drop what they did not flush (a transactional one aborts its open
        transaction) and close, and sources close their connections; best effort: what fails here is not raised,
        so the job's own failure is the one reported. Operators and file sinks are left as they are (nothing of a
        failed job is written)."""
        for instance in self._all_instances():
            for release in (
                None if instance.reader is None else instance.reader.close,
                None if instance.writer is None else instance.writer.abort,
                None if instance.writer is None else instance.writer.close,
            ):
                if release is not None:
                    with contextlib.suppress(Exception):
                        release()

    # -- snapshots ------------------------------------------

    def fingerprint(self) -> JobFingerprint:
        """The fingerprint of this job's state (``panes.datastream.fingerprint``): the keyed operators, each with
        its parallelism (the local runner restores parallel instances one to one), and the key groups."""
        parallelism = {node.transformation.id: node.parallelism for node in self.nodes}

        def local_properties(transformation: Transformation) -> dict[str, str | None]:
            # a keyed step's state is redistributed to any parallelism (``_rescaled``): it does not shape state
            return {"parallelism": None if is_keyed(transformation) else str(parallelism[transformation.id])}

        return fingerprint(self.plan, self.types, {"max_parallelism": self.max_parallelism}, local_properties)

    def snapshot(self) -> bytes:
        """The whole job between two elements: sources' positions, operators, valves, partitioners, clock, and
        the job's fingerprint (checked by :meth:`restore`). Not in BATCH execution (as Flink, which takes no
        checkpoints there): raises ``RuntimeError``."""
        if self.batch:
            raise RuntimeError("a job in BATCH execution cannot be snapshotted (run it in STREAMING mode)")
        for instance in self._all_instances():
            if instance.writer is not None:
                # what the sinks received before the snapshot is durable (committed) with it
                instance.writer.flush(False)
        state: dict[str, Any] = {
            "state_format": STATE_FORMAT,
            "fingerprint": self.fingerprint().to_json(),
            "parallelism": {node.key: node.parallelism for node in self.nodes},
            "next_source": self._next_source,
            "records_read": self.records_read,
            "clock": self.clock.get_current_processing_time(),
            "instances": {},
        }
        for instance in self._all_instances():
            state["instances"][(instance.node.key, instance.index)] = {
                "operator": None if instance.operator is None else instance.operator.snapshot_state(),
                "reader": None if instance.reader is None else instance.reader.snapshot(),
                "writer": None if instance.writer is None else instance.writer.snapshot_state(),
                "valves": instance.valves,
                "ended": instance.ended,
                "finished": instance.finished,
                "partitioners": {_route_key(edge): p.snapshot_state() for edge, p in instance.output.routes},
            }
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def _check_restore(self, state: dict[str, Any]) -> None:
        """Refuse a snapshot of another state format, of a job whose state does not fit this one (see
        ``panes.datastream.fingerprint``), or whose steps ran with another parallelism."""
        where = "the snapshot"
        if not isinstance(state, dict) or state.get("state_format") != STATE_FORMAT:
            found = state.get("state_format", 1) if isinstance(state, dict) else "unknown"
            raise IncompatibleCheckpointError(
                f"cannot restore {where}: it is in state format {found}, and this panes reads state format "
                f"{STATE_FORMAT}.\n{RESTART_ADVICE}",
                changes=((None, "state format", str(found), str(STATE_FORMAT)),),
            )
        check_restart(JobFingerprint.from_json(state["fingerprint"]), self.fingerprint(), where)
        changed = [
            (node.key, state["parallelism"][node.key], node.parallelism)
            for node in self.nodes
            if node.key in state["parallelism"]
            and state["parallelism"][node.key] != node.parallelism
            and not is_keyed(node.transformation)
        ]
        if changed:
            lines = "\n".join(
                f"- step {uid!r}: parallelism {old} in the snapshot, {new} now" for uid, old, new in changed
            )
            raise IncompatibleCheckpointError(
                f"cannot restore {where}: the local runner restores each instance of a step that is not keyed one to "
                "one (a keyed step's state is redistributed by key to any parallelism), and the parallelism of "
                f"these steps changed (keep their former parallelism):\n{lines}\n{RESTART_ADVICE}",
                operator=changed[0][0],
                changes=tuple((uid, "parallelism", str(old), str(new)) for uid, old, new in changed),
            )

    def _rescaled(self, state: dict[str, Any]) -> dict[str, list[bytes]]:
        """The new instances' operator snapshots of each keyed step whose parallelism changed since ``state``
        (``panes.operators.rescaling``), by step uid. Instances other than the operator's state (their inputs'
        watermarks, whether their inputs ended) are alike for every instance of a keyed step: each new one
        takes the first old one's."""
        found: dict[str, list[bytes]] = {}
        for node in self.nodes:
            old = state["parallelism"].get(node.key)
            if old is None or old == node.parallelism or not is_keyed(node.transformation):
                continue
            operator = self.instances[id(node)][0].operator
            if operator is None:
                continue
            snapshots = _old_snapshots(state, node.key, old)
            found[node.key] = rescale(type(operator), snapshots, self.max_parallelism, node.parallelism)
        return found

    def _restore(self, snapshot: bytes) -> None:
        """Resume from :meth:`snapshot`. Steps the snapshot does not know (added since, stateless or with new
        state) start fresh, as in Flink; what the snapshot holds of steps no longer there is checked by
        :meth:`_check_restore` (refused when it is keyed state)."""
        try:
            state = pickle.loads(snapshot)
        except (AttributeError, ImportError, pickle.UnpicklingError, EOFError, TypeError) as error:
            # a class the snapshot names is gone or changed: written by another panes, or not a snapshot at all
            raise IncompatibleCheckpointError(
                f"cannot restore the snapshot: this panes cannot read it ({type(error).__name__}: {error}); it was "
                f"written by another version of panes (this one reads state format {STATE_FORMAT}), or it is not "
                f"a snapshot of LocalJob.snapshot().\n{RESTART_ADVICE}",
                changes=((None, "state format", "unreadable", str(STATE_FORMAT)),),
            ) from error
        self._check_restore(state)
        self._next_source = state["next_source"]
        self.records_read = state["records_read"]
        setter = getattr(self.clock, "set_current_time", None)
        if setter is not None:
            setter(state["clock"])
        fresh: list[Instance] = []
        rescaled = self._rescaled(state)
        for instance in self._all_instances():
            saved = state["instances"].get((instance.node.key, instance.index))
            if instance.node.key in rescaled:
                # a keyed step with another parallelism: its instance holds its keys' share of every old one's
                saved = state["instances"].get((instance.node.key, 0))
                if saved is not None:
                    # each new instance its own copy of the first old one's valves, ends and routes
                    rest = copy.deepcopy({name: value for name, value in saved.items() if name != "operator"})
                    saved = {**rest, "operator": rescaled[instance.node.key][instance.index]}
            if saved is None:
                fresh.append(instance)
                continue
            if instance.operator is not None and saved["operator"] is not None:
                started = time.perf_counter()
                instance.operator.restore_state(saved["operator"])
                instance.operator.counters.restores += 1
                instance.operator.counters.restore_ms += round((time.perf_counter() - started) * 1000)
            if instance.reader is not None and saved["reader"] is not None:
                instance.reader.restore(saved["reader"])
            if instance.writer is not None and saved.get("writer") is not None:
                instance.writer.restore_state(saved["writer"])
            if [max(1, len(mapping)) for mapping in instance.channels] == [v.num_inputs for v in saved["valves"]]:
                # the same inputs: the channels' watermarks and ends carry over
                instance.valves = saved["valves"]
                instance.ended = saved["ended"]
            else:
                fresh.append(instance)
            instance.finished = saved["finished"]
            partitioners = saved["partitioners"]
            for edge, partitioner in instance.output.routes:
                if _route_key(edge) in partitioners:
                    partitioner.restore_state(partitioners[_route_key(edge)])
        for instance in fresh:
            # a new step (or new inputs): the inputs that ended before the snapshot have ended for it too
            for index, edges in enumerate(instance.node.inputs):
                for edge in edges:
                    for upstream in self.instances[id(edge.upstream)]:
                        if upstream.finished:
                            instance.ended[index].add(instance.channels[index][(id(edge), upstream.index)])


def _old_snapshots(state: dict[str, Any], key: str, parallelism: int) -> list[bytes]:
    saved = [state["instances"].get((key, index)) for index in range(parallelism)]
    return [entry["operator"] for entry in saved if entry is not None and entry["operator"] is not None]


def _route_key(edge: Edge) -> tuple[str, int, str | None]:
    """An output edge as snapshots name it: the downstream step's uid, its input, the side output's tag."""
    return (edge.downstream.key, edge.input_index, None if edge.tag is None else edge.tag.tag_id)
