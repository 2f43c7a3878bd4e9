"""Runs of elements through a local job's source, timestamps and window at once, with the element-by-element output.

A local job pushes every element through the whole graph before it reads the next (``panes.local.job``). For the
usual shape of a job, one source read by one instance, its timestamps and watermarks, ``key_by`` and a window,
that is more work than the result needs: until the watermark moves, such a window emits nothing for an element on
time. :class:`RunChain` reads a run of elements (up to :data:`RUN_LENGTH`, never past a step's end, a
processing-time advance or an input the source could not read, which go through the job as before), gives them
their declared type and timestamps in one loop and hands the whole run to the window
(``panes.windowing.runs.process_run``), which keeps the state, the timer heap and the output of element by
element. Nothing else sees the elements in between: the chain is taken only where the source and the timestamps
step each send their records along one edge to the next step alone, every step of it has one instance, the
clock moves only where a step of the input ends (``advance="per_step"``, STREAMING execution), and the
timestamps step's generator emits nothing on an element (bounded out-of-orderness, ascending timestamps, none).

An element that fails on the way (a value that does not fit the source's type, a timestamp that cannot be read)
ends the run's bulk part: the run's elements before it go through at once, it and the rest of the run one by one
through the job, which fails or reports them exactly as it does element by element. A key that cannot be read
is reported where it stands in the run (``LocalJob.report_unroutable``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from panes.datastream.partitioning import KeyGroupStreamPartitioner, StreamPartitioner
from panes.datastream.sources import ProcessingTimeAdvance, StepEnd
from panes.elements import StreamRecord
from panes.errors import BadInput
from panes.local.graph import Edge, Node
from panes.local.instance import Instance
from panes.operators.keys import extract_key, extract_keys
from panes.time import LONG_MAX, LONG_MIN
from panes.watermarks.assigners import ColumnTimestampAssigner
from panes.watermarks.generators import (
    AscendingTimestampsWatermarks,
    BoundedOutOfOrdernessWatermarks,
    NoWatermarksGenerator,
)
from panes.watermarks.operator import TimestampsAndWatermarksOperator
from panes.watermarks.time_range import EventTimeRange
from panes.windowing.implementation import takes_runs
from panes.windowing.operator import WindowOperator
from panes.windowing.runs import install_timer_pass, process_run

if TYPE_CHECKING:
    from panes.local.job import LocalJob

RUN_LENGTH = 4096
"""The most elements one run reads (a run also ends where the source's input has something else than elements)."""

_SILENT_GENERATORS = (BoundedOutOfOrdernessWatermarks, AscendingTimestampsWatermarks, NoWatermarksGenerator)
"""Generators that emit nothing on an element and keep only the largest timestamp (or nothing)."""


class RunChain:
    """A job's source instance, its timestamps step (or none) and the window they feed, run by runs (see the
    module docstring); :meth:`find` returns one where the job has that shape."""

    def __init__(
        self,
        job: LocalJob,
        source: Instance,
        timestamps: TimestampsAndWatermarksOperator | None,
        window_edge: Edge,
        partitioner: StreamPartitioner,
        window: WindowOperator,
    ) -> None:
        self.job = job
        self.source = source
        self.timestamps = timestamps
        self.window_edge = window_edge
        self.partitioner = partitioner
        self.window = window
        self.source_type = source.output.checked.get(None) if source.output.checked else None
        self.shared_selector = (
            partitioner.key_selector
            if isinstance(partitioner, KeyGroupStreamPartitioner) and partitioner.key_selector == window.key_selector
            else None
        )
        """The key selector the edge's partitioner and the window both read keys with, or ``None``."""

    @staticmethod
    def find(job: LocalJob) -> RunChain | None:
        """The chain of ``job`` (its operators open), or ``None`` when the job does not have its shape."""
        if job.batch or not job.ticks_per_step or len(job._sources) != 1 or job._split_sources:
            return None
        source = job._sources[0]
        edge = _only_edge(source.node)
        if edge is None:
            return None
        timestamps: TimestampsAndWatermarksOperator | None = None
        sender = source
        instance = job.instances[id(edge.downstream)][0]
        if isinstance(instance.operator, TimestampsAndWatermarksOperator):
            timestamps = instance.operator
            if not _plain_timestamps(instance, timestamps, edge):
                return None
            sender = instance
            edge = _only_edge(instance.node)
            if edge is None:
                return None
            instance = job.instances[id(edge.downstream)][0]
        window = instance.operator
        if (
            not isinstance(window, WindowOperator)
            or takes_runs(window) is not None
            or instance.sorted is not None
            or instance.node.inputs != [[edge]]
        ):
            return None
        partitioner = next(p for e, p in sender.output.routes if e is edge)
        install_timer_pass(window, instance.output.main_sender())
        return RunChain(job, source, timestamps, edge, partitioner, window)

    # -- running ---------------------------------------------------------------------------------------------

    def advance(self, budget: int | None) -> bool:
        """Read and process one run of at most ``budget`` elements (``None``: :data:`RUN_LENGTH`) and what ended
        it; ``False`` when the source had ended already."""
        source = self.source
        if source.finished:
            return False
        reader = source.reader
        assert reader is not None
        limit = RUN_LENGTH if budget is None else min(budget, RUN_LENGTH)
        elements: list[Any] = []
        ended: tuple[bool, Any] | None = None
        while len(elements) < limit:
            has_element, element = reader.next()
            if not has_element or type(element) in (StepEnd, ProcessingTimeAdvance) or isinstance(element, BadInput):
                ended = (has_element, element)
                break
            elements.append(element)
        self.job._next_source += len(elements) + (ended is not None)
        self._process(elements)
        if ended is not None:
            self.job.consume(source, *ended)
        return True

    def _process(self, elements: list[Any]) -> None:
        if not elements:
            return
        values = [e.value if type(e) is StreamRecord else e for e in elements]
        previous = [e.timestamp if type(e) is StreamRecord else None for e in elements]
        good = len(values)
        if self.source_type is not None:
            values, good = _mapped(self.source_type.conformer(), values)
        timestamps: Sequence[int | None] = previous
        if self.timestamps is not None:
            timestamps, good = self._timestamps(values[:good], previous[:good])
        if good:
            self._deliver(values[:good], timestamps[:good])
        for element in elements[good:]:  # the one that failed, then the rest, one by one through the job
            self.job.consume(self.source, True, element)

    def _timestamps(self, values: list[Any], previous: list[int | None]) -> tuple[list[int], int]:
        """The timestamps the timestamps step gives ``values`` (whose records had ``previous``), up to the first it
        refuses; the step counts them and its generator sees them (as the largest timestamp)."""
        operator = self.timestamps
        assert operator is not None
        assigner, generator, emitter = operator._require_open()
        extract = assigner.extract_timestamp
        allowed = operator.event_time_range
        found: list[int] = _column_timestamps(assigner, values, allowed) or []
        append = found.append
        try:
            for value, before in zip(values[len(found) :], previous[len(found) :], strict=True):
                timestamp = extract(value, LONG_MIN if before is None else before)
                if type(timestamp) is not int or not LONG_MIN <= timestamp <= LONG_MAX or timestamp not in allowed:
                    break
                append(timestamp)
        except Exception:
            pass
        if found:
            generator.on_event(None, max(found), emitter)
            operator.counters.records_in += len(found)
            operator.counters.records_out += len(found)
        return found, len(found)

    def _deliver(self, values: list[Any], timestamps: Sequence[int | None]) -> None:
        """``values`` to the window, in order; one whose key cannot be routed is reported at its place. Where the
        edge's partitioner reads the key with the window's own key selector, the keys it reads are the window's
        (read once, handed over)."""
        shared = self.shared_selector
        if shared is not None:
            every = extract_keys(shared, values)  # the keys extract_key gives, read together (or None)
            if every is not None:
                process_run(self.window, values, timestamps, every)
                self.job.records_read += len(values)
                return
        select = self.partitioner.select
        keys: list[Any] = []
        start = 0
        for index, value in enumerate(values):
            try:
                if shared is None:
                    select(value, 1)
                else:
                    keys.append(extract_key(shared, value))  # what select(value, 1) does, keeping the key
            except Exception as error:
                process_run(self.window, values[start:index], timestamps[start:index], keys if shared else None)
                self.job.report_unroutable(self.window_edge, StreamRecord(value, timestamps[index]), error)
                start = index + 1
                keys = []
        process_run(self.window, values[start:], timestamps[start:], keys if shared else None)
        self.job.records_read += len(values)


def _only_edge(node: Node) -> Edge | None:
    """The one output edge of ``node`` (its main output) to a step of one instance, or ``None``."""
    if node.parallelism != 1 or len(node.outputs) != 1:
        return None
    edge = node.outputs[0]
    if edge.tag is not None or edge.downstream.parallelism != 1:
        return None
    return edge


def _plain_timestamps(instance: Instance, operator: TimestampsAndWatermarksOperator, edge: Edge) -> bool:
    """Whether the timestamps step takes runs: its only input is ``edge``, it has no error output and no declared
    type to check, and one generator that emits nothing on elements."""
    return (
        instance.node.inputs == [[edge]]
        and instance.sorted is None
        and operator.error_tag is None
        and not instance.output.checked
        and operator.split_watermarks is None
        and type(operator._require_open()[1]) in _SILENT_GENERATORS
    )


def _column_timestamps(assigner: Any, values: list[Any], allowed: EventTimeRange) -> list[int] | None:
    """The timestamps a ``ColumnTimestampAssigner`` gives ``values``, read together in the common case: every
    value a ``dict`` holding an ``int`` in ``allowed`` (what ``extract_timestamp`` then returns); ``None`` in any
    other case (the caller reads them one by one)."""
    if type(assigner) is not ColumnTimestampAssigner or set(map(type, values)) != {dict}:
        return None
    column = assigner.column
    found = [value.get(column) for value in values]
    if set(map(type, found)) != {int}:
        return None
    lowest, highest = min(found), max(found)
    if not LONG_MIN <= lowest <= highest <= LONG_MAX or lowest not in allowed or highest not in allowed:
        return None
    return found


def _mapped(function: Callable[[Any], Any], items: list[Any]) -> tuple[list[Any], int]:
    """``function`` of each of ``items`` up to the first that raises, and how many it took."""
    found: list[Any] = []
    append = found.append
    try:
        for item in items:
            append(function(item))
    except Exception:
        pass
    return found, len(found)
