"""The operator base classes (Flink's ``AbstractStreamOperator`` and ``OneInputStreamOperator``).

A runner (the harness, the local runner, the Spark runner) hosts an operator through this contract:
``setup(output, clock)``, optionally ``restore_state(bytes)``, ``open()``; then, for each input element,
``set_key_context_element(record)`` + ``process_element(record)``; ``process_watermark(watermark)``, which
fires event-time timers and then forwards the watermark; ``advance_processing_time(now)``; and
``snapshot_state() -> bytes`` between elements. Keyed operators keep state in a heap backend and timers
in named internal timer services, all of which snapshot together.

Every operator counts what it does in ``counters`` (``panes.operators.metrics``): ``process_record`` counts the
records in, and the output ``setup`` connects is wrapped in a :class:`CountingOutput` that counts the records
out per output (main, late data, errors, other side outputs); :meth:`AbstractStreamOperator.metrics` adds the
gauges (open panes, timers, state bytes).
"""

from __future__ import annotations

import pickle
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from panes.elements import StreamRecord, Watermark, WatermarkStatus
from panes.errors import BadRecordError, ErrorRecord, is_reported, located
from panes.functions.base import RuntimeContext
from panes.operators.keys import KeySelector, extract_key
from panes.operators.metrics import OperatorCounters, OperatorMetrics
from panes.operators.rescaling import Owner, dumped, heap_snapshots, same_for_all
from panes.state.backend import VOID_NAMESPACE, HeapKeyedStateBackend
from panes.state.store import NamespacedStateStore
from panes.tags import OutputTag
from panes.time import LONG_MIN
from panes.timers.clock import ManualProcessingTimeService, ProcessingTimeService
from panes.timers.heap import InternalTimer
from panes.timers.key_time import KeyTimeTimerService
from panes.timers.service import InternalTimerService, Triggerable
from panes.types import RecordType, SchemaMismatchError

if TYPE_CHECKING:
    from panes.watermarks.per_key import PerKeyWatermarks


class Output(Protocol):
    """Where an operator writes: main records, side-output records, watermarks and watermark status."""

    def collect(self, record: StreamRecord[Any]) -> None: ...

    def collect_side(self, tag: OutputTag[Any], record: StreamRecord[Any]) -> None: ...

    def emit_watermark(self, watermark: Watermark) -> None: ...

    def emit_watermark_status(self, status: WatermarkStatus) -> None: ...


class CollectingOutput:
    """An output that keeps everything: ``elements`` (records and watermarks in order) and ``side``."""

    def __init__(self) -> None:
        self.elements: list[StreamRecord[Any] | Watermark | WatermarkStatus] = []
        self.side: dict[OutputTag[Any], list[StreamRecord[Any]]] = {}

    def collect(self, record: StreamRecord[Any]) -> None:
        self.elements.append(record)

    def collect_side(self, tag: OutputTag[Any], record: StreamRecord[Any]) -> None:
        self.side.setdefault(tag, []).append(record)

    def emit_watermark(self, watermark: Watermark) -> None:
        self.elements.append(watermark)

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        self.elements.append(status)


class CountingOutput:
    """``output`` counting what passes into ``operator``'s counters (Flink's ``CountingOutput``): main records
    as ``records_out``; side records as ``late_out`` (the operator's ``late_data_tag``), ``error_out`` (its
    ``error_tag``) or ``side_out`` (any other tag). The tags are read at each record, so they may be set after
    ``setup``."""

    __slots__ = ("_counters", "_operator", "output")

    def __init__(self, output: Output, operator: AbstractStreamOperator) -> None:
        self.output = output
        self._operator = operator
        self._counters = operator.counters

    def collect(self, record: StreamRecord[Any]) -> None:
        self._counters.records_out += 1
        self.output.collect(record)

    def collect_side(self, tag: OutputTag[Any], record: StreamRecord[Any]) -> None:
        self._operator.count_side(tag, 1)
        self.output.collect_side(tag, record)

    def emit_watermark(self, watermark: Watermark) -> None:
        self.output.emit_watermark(watermark)

    def emit_watermark_status(self, status: WatermarkStatus) -> None:
        self.output.emit_watermark_status(status)


class TimestampedCollector:
    """Emits user results with a fixed timestamp (a window's max timestamp, a timer's time, ...).

    A result that is an ``(OutputTag, value)`` pair goes to that side output (PyFlink's convention).
    """

    __slots__ = ("_output", "timestamp")

    def __init__(self, output: Output) -> None:
        self._output = output
        self.timestamp: int | None = None

    def collect(self, value: Any) -> None:
        if type(value) is tuple and len(value) == 2 and isinstance(value[0], OutputTag):
            self._output.collect_side(value[0], StreamRecord(value[1], self.timestamp))
        else:
            self._output.collect(StreamRecord(value, self.timestamp))

    def collect_all(self, values: Any) -> None:
        """Emit each of ``values`` (an iterable, or ``None`` for nothing)."""
        if values is None:
            return
        output = self._output
        timestamp = self.timestamp
        for value in values:
            if type(value) is tuple and len(value) == 2 and isinstance(value[0], OutputTag):
                output.collect_side(value[0], StreamRecord(value[1], timestamp))
            else:
                output.collect(StreamRecord(value, timestamp))


class AbstractStreamOperator(ABC):
    """Lifecycle, output, processing-time clock and, when keyed, state and timers of an operator."""

    def __init__(self, key_selector: KeySelector | None = None) -> None:
        self.key_selector = key_selector
        self.counters = OperatorCounters()
        """What the operator did (see ``panes.operators.metrics``)."""
        self.output: Output = CountingOutput(CollectingOutput(), self)
        self.processing_time_service: ProcessingTimeService = ManualProcessingTimeService()
        self.backend = HeapKeyedStateBackend(self.current_processing_time)
        self._timer_services: dict[str, InternalTimerService] = {}
        self._restored: dict[str, Any] | None = None
        self._tracking = False
        self._watermark = LONG_MIN
        self.error_tag: OutputTag[Any] | None = None
        self.task_name = type(self).__name__
        self.subtask_index = 0
        self.parallelism = 1
        self.max_parallelism = 128

    # -- lifecycle --------------------------------------------------------------------------------------

    def setup(
        self,
        output: Output,
        processing_time_service: ProcessingTimeService | None = None,
        *,
        task_name: str | None = None,
        subtask_index: int = 0,
        parallelism: int = 1,
        max_parallelism: int = 128,
    ) -> None:
        """Connect the operator to its output (counted: :class:`CountingOutput`) and clock; runners also say
        which parallel instance it is."""
        self.output = output if isinstance(output, CountingOutput) else CountingOutput(output, self)
        if processing_time_service is not None:
            self.processing_time_service = processing_time_service
        if task_name is not None:
            self.task_name = task_name
        self.backend.owner = self.task_name
        self.subtask_index = subtask_index
        self.parallelism = parallelism
        self.max_parallelism = max_parallelism

    def current_processing_time(self) -> int:
        """Now on the operator's processing-time clock (the clock of state time-to-live, too)."""
        return self.processing_time_service.get_current_processing_time()

    def runtime_context(self) -> StreamingRuntimeContext:
        """The ``RuntimeContext`` handed to user functions' ``open``."""
        return StreamingRuntimeContext(self)

    def open(self) -> None:
        """Called once before the first element, after ``setup`` and any ``restore_state``."""

    def finish(self) -> None:
        """Called at the end of a bounded input, after the final watermark."""

    def close(self) -> None:
        """Release resources."""

    # -- keys, timers ------------------------------------------------------------------------------------

    def set_key_context_element(self, record: StreamRecord[Any]) -> None:
        """Make the key of ``record`` current (keyed operators only); a failing key selector is a bad record."""
        if self.key_selector is not None:
            self.backend.current_key = extract_key(self.key_selector, record.value)

    def process_record(self, record: StreamRecord[Any]) -> None:
        """Key and process one input record; a bad record or a user function that raises is reported
        (:meth:`report_failure`). Every host calls this for one-input operators; it counts ``records_in``."""
        self.counters.records_in += 1
        keyed = False
        try:
            self.set_key_context_element(record)
            keyed = True
            if self.backend.record_cleanups:
                self.backend.run_record_cleanups()
            self.process_element(record)  # type: ignore[attr-defined]
        except Exception as error:
            self.report_failure(record, error)
        if self.key_time is not None and keyed:
            self.element_seen(record)

    key_time: PerKeyWatermarks | None = None
    """Event time per key (``panes.watermarks.per_key``; the operator's timer services keep it), or ``None``."""

    def element_seen(self, record: StreamRecord[Any]) -> None:
        """Event time per key: ``record`` of the current key was processed (or failed), so the key's time moves
        on by its timestamp in every timer service (``KeyTimeTimerService.element_seen``), firing what it
        passes."""
        for service in self._timer_services.values():
            if isinstance(service, KeyTimeTimerService):
                service.element_seen(record.timestamp)

    def report_failure(self, record: StreamRecord[Any], error: Exception) -> None:
        """``record`` failed with ``error``: send it to the error side output as an ``ErrorRecord``, or raise
        the located error when there is none (the rules of ``panes.errors``).

        ``error`` is a ``BadRecordError``, a ``UserFunctionError`` raised where the function is known (a key
        selector: no key), or what user code raised, which becomes a ``UserFunctionError`` with the current key
        (keyed operators) and :meth:`failure_window`. Errors already reported by a step, and
        ``UnsupportedOperationError``, are raised unchanged. ``record`` is the element, or for a timer a record
        of ``None`` with the timer's time (see :meth:`get_internal_timer_service`)."""
        if is_reported(error):
            raise error
        key = self.backend.current_key if self.key_selector is not None else None
        failure = located(error, self.task_name, key, self.failure_window())
        if self.error_tag is None:
            raise failure from failure.__cause__
        self.output.collect_side(
            self.error_tag, StreamRecord(ErrorRecord.of(failure, record.value, record.timestamp), record.timestamp)
        )

    def late_output_tags(self) -> tuple[OutputTag[Any], ...]:
        """The side outputs that take late records (counted as ``late_out``): the operator's ``late_data_tag``
        when it has one."""
        tag = getattr(self, "late_data_tag", None)
        return () if tag is None else (tag,)

    def failure_window(self) -> Any:
        """The window the operator is working on, for reports of failing user functions (``None``: none)."""
        return None

    def _timer_failed(self, timer: InternalTimer, error: Exception, event_time: bool) -> None:
        """A timer's callback raised: report it with the timer's time (event time) as the failed record's."""
        self.report_failure(StreamRecord(None, timer.timestamp if event_time else None), error)

    def conform_result(
        self, record: StreamRecord[Any], record_type: RecordType, tag: OutputTag[Any] | str | None = None
    ) -> StreamRecord[Any] | None:
        """``record`` with its value in the canonical form of ``record_type`` (the declared type of the output it
        goes to: ``tag``, ``None`` for the main output), or ``None`` when it does not fit: then it went to the
        error side output (or this raised a ``BadRecordError`` naming the operator and the type, when there is
        none), and is counted there rather than on ``tag``'s output."""
        try:
            return StreamRecord(record_type.conform(record.value), record.timestamp)
        except SchemaMismatchError as error:
            problem = BadRecordError(f"a result of {self.task_name} does not fit its type {record_type.ddl()}: {error}")
            self.report_failure(record, problem)
            if tag is None:
                self.counters.records_out -= 1
            else:
                self.count_side(tag, -1)
            return None

    def count_side(self, tag: OutputTag[Any] | str, amount: int) -> None:
        """Count ``amount`` records sent to side output ``tag`` (an ``OutputTag`` or its id): ``late_out``,
        ``error_out`` or ``side_out`` (see :class:`CountingOutput`)."""
        tag_id = tag if isinstance(tag, str) else tag.tag_id
        counters = self.counters
        for late in self.late_output_tags():
            if late.tag_id == tag_id:
                counters.late_out += amount
                return
        if self.error_tag is not None and self.error_tag.tag_id == tag_id:
            counters.error_out += amount
        else:
            counters.side_out += amount

    def get_current_key(self) -> Any:
        return self.backend.current_key

    def set_current_key(self, key: Any) -> None:
        self.backend.current_key = key

    def get_internal_timer_service(
        self, name: str, triggerable: Triggerable, owner: str | None = None, key_time: PerKeyWatermarks | None = None
    ) -> InternalTimerService:
        """The timer service ``name`` (created on first use, restored from a snapshot when there is one).

        ``owner`` names what registers its timers in error messages (default: ``triggerable``'s class name);
        with ``key_time`` (default: the operator's :attr:`key_time`) each key has its own event time
        (``panes.timers.key_time``).
        """
        service = self._timer_services.get(name)
        key_time = self.key_time if key_time is None else key_time
        if service is None:
            arguments = (self.get_current_key, self.set_current_key, triggerable, self.processing_time_service)
            if key_time is None:
                service = InternalTimerService(*arguments, owner, on_failure=self._timer_failed)
            else:
                service = KeyTimeTimerService(*arguments, key_time, owner, on_failure=self._timer_failed)
            if self._tracking:
                service.track_changes()
            restored = (self._restored or {}).get("timers", {}).get(name)
            if restored is not None:
                service.restore(restored, (self._restored or {}).get("timer_changes", {}).get(name))
            self._timer_services[name] = service
        return service

    # -- time ----------------------------------------------------------------------------------------------

    def process_watermark(self, watermark: Watermark) -> None:
        """Fire the event-time timers up to ``watermark``, then forward it. With event time per key, the stream's
        watermark raises the floor under every key's time, and the floor (``stream watermark - max_lag``) goes
        downstream when it advanced."""
        previous = self._watermark
        self._watermark = watermark.timestamp
        for service in self._timer_services.values():
            service.advance_watermark(watermark.timestamp)
        key_time = self.key_time
        if key_time is None:
            self.output.emit_watermark(watermark)
        elif (floor := key_time.floor(watermark.timestamp)) > key_time.floor(previous):
            self.output.emit_watermark(Watermark(floor))

    def process_watermark_status(self, status: WatermarkStatus) -> None:
        self.output.emit_watermark_status(status)

    def end_key(self) -> None:
        """BATCH execution (``panes.operators.sorted_input``): the input of the current key ended; every timer
        service fires all its timers (``InternalTimerService.end_key``). Nothing is forwarded downstream."""
        for service in list(self._timer_services.values()):
            service.end_key()

    def advance_processing_time(self, now: int) -> None:
        """Fire the processing-time timers at or before ``now`` (the runner has moved its clock to ``now``)."""
        for service in self._timer_services.values():
            service.advance_processing_time(now)

    def next_event_time_timer(self) -> int | None:
        """The earliest pending event-time timer, for runners that schedule wake-ups."""
        times = [t for s in self._timer_services.values() if (t := s.next_event_time_timer()) is not None]
        return min(times) if times else None

    def next_processing_time_timer(self) -> int | None:
        """The earliest pending processing-time timer, for runners that schedule wake-ups."""
        times = [t for s in self._timer_services.values() if (t := s.next_processing_time_timer()) is not None]
        return min(times) if times else None

    def current_watermark(self) -> int:
        """The last watermark this operator processed (``LONG_MIN`` before any)."""
        return self._watermark

    # -- snapshots -------------------------------------------------------------------------------------------

    def state_entries(self) -> int:
        """How many keyed state entries (key and namespace: a window's pane, a key's value) the operator holds."""
        return self.backend.entry_count()

    def late_records_dropped(self) -> int:
        """Late records dropped so far (window operators without a late-data output count them)."""
        return self.counters.late_dropped

    def open_panes(self) -> int:
        """The ``open_panes`` gauge: keyed state entries here; window operators count their panes."""
        return self.state_entries()

    def timer_count(self) -> int:
        """Pending event-time and processing-time timers."""
        return sum(
            len(service.event_time_timers) + len(service.processing_time_timers)
            for service in self._timer_services.values()
        )

    def metrics(self, name: str | None = None, state_bytes: bool = True) -> OperatorMetrics:
        """The counters and gauges of this instance as the metrics of step ``name`` (default: the task name).

        ``state_bytes`` is the size of :meth:`snapshot_state`, which pickles the whole state: read it when it
        is wanted, not per element. It is 0 when the operator holds no keyed state, panes nor timers, and when
        not measured: ``state_bytes=False``, an operator whose changes are tracked (its host measures what it
        stores), or state that cannot be pickled."""
        size = 0
        holds_state = not self.backend.is_empty() or self.open_panes() or self.timer_count()
        if state_bytes and holds_state and not self._tracking:
            try:
                size = len(self.snapshot_state())
            except (pickle.PicklingError, TypeError, AttributeError):
                size = 0
        return OperatorMetrics(
            self.task_name if name is None else name,
            **self.counters.values(),
            open_panes=self.open_panes(),
            timers=self.timer_count(),
            state_bytes=size,
        )

    def snapshot_extra(self) -> Any:
        """Operator-specific state to include in snapshots (override with :meth:`restore_extra`)."""
        return None

    def restore_extra(self, data: Any) -> None:
        """Restore what :meth:`snapshot_extra` returned."""

    def extra_changes(self) -> Any:
        """What changed in the operator-specific state since the last snapshot or call (when changes are
        tracked); :meth:`apply_extra_changes` folds it into a :meth:`snapshot_extra`. By default the whole
        :meth:`snapshot_extra`: operators whose extras grow with their input override both."""
        return self.snapshot_extra()

    @staticmethod
    def apply_extra_changes(extra: Any, changes: Any) -> Any:
        """``extra`` (a :meth:`snapshot_extra`) with ``changes`` (an :meth:`extra_changes`) applied."""
        return changes

    @classmethod
    def rescale_snapshots(cls, snapshots: Sequence[bytes], owner: Owner, count: int) -> list[bytes]:
        """The :meth:`snapshot_state` of ``count`` instances holding the state of ``snapshots`` (one per old
        instance): keyed state and timers go to the instance ``owner`` gives their key, the extras as
        :meth:`rescale_extra` says (``panes.operators.rescaling``)."""
        parts, extras = heap_snapshots(snapshots, owner, count)
        return dumped(parts, cls.rescale_extra(extras, owner, count))

    @classmethod
    def rescale_extra(cls, extras: list[Any], owner: Owner, count: int) -> list[Any]:
        """The extras of ``count`` new instances from the old instances' ``extras``: by default every instance
        holds them alike (broadcast state, the watermarks of the inputs), so each new one gets the first's.
        An operator whose extras hold something per key or a count overrides this."""
        return same_for_all(extras, count)

    def snapshot_state(self) -> bytes:
        """All keyed state, timers and operator extras as bytes (values and keys must be picklable).

        When changes are tracked, the next :meth:`snapshot_changes` holds what changes after this snapshot."""
        data = {
            "keyed_state": self.backend.snapshot(),
            "timers": {name: service.snapshot() for name, service in self._timer_services.items()},
            "extra": self.snapshot_extra(),
            "watermark": self._watermark,
        }
        blob = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
        if self._tracking:
            self.forget_changes()
        return blob

    def forget_changes(self) -> None:
        """Start recording changes afresh (a full snapshot was just taken). Operators that track changes to
        their extras reset them too."""
        self.backend.forget_changes()
        for service in self._timer_services.values():
            service.forget_changes()

    def track_changes(self) -> None:
        """Record what changes from now on, for :meth:`snapshot_changes` (call before ``open()``)."""
        self._tracking = True
        self.backend.track_changes()
        for service in self._timer_services.values():
            service.track_changes()

    def snapshot_changes(self) -> bytes:
        """What changed since the last :meth:`snapshot_state` or :meth:`snapshot_changes`, as bytes: the keyed
        state entries written or removed, the timers' operations and the operator's extra changes. Its size
        follows the work done since then, not the state held. ``restore_state(snapshot, changes)`` replays
        them in order."""
        if not self._tracking:
            raise RuntimeError("changes are not tracked: call track_changes() before open()")
        data = {
            "keyed_state": self.backend.take_changes(),
            "kinds": self.backend.kinds(),
            "timers": {name: service.take_changes() for name, service in self._timer_services.items()},
            "extra": self.extra_changes(),
            "watermark": self._watermark,
        }
        return pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)

    def restore_state(self, snapshot: bytes, changes: Sequence[bytes] = ()) -> None:
        """Restore a :meth:`snapshot_state`, then the :meth:`snapshot_changes` taken after it, before
        ``open()``."""
        data = pickle.loads(snapshot)
        timer_changes: dict[str, list[dict[str, Any]]] = {}
        for blob in changes:
            change = pickle.loads(blob)
            HeapKeyedStateBackend.apply_changes(data["keyed_state"], change["keyed_state"])
            data["keyed_state"].setdefault("kinds", {}).update(change.get("kinds", {}))
            for name, timers in change["timers"].items():
                timer_changes.setdefault(name, []).append(timers)
                data["timers"].setdefault(name, {"event": [], "processing": [], "watermark": LONG_MIN})
            data["extra"] = self.apply_extra_changes(data["extra"], change["extra"])
            data["watermark"] = change["watermark"]
        data["timer_changes"] = timer_changes
        self._restored = data
        self.backend.restore(data["keyed_state"])
        for name, service in self._timer_services.items():
            if name in data["timers"]:
                service.restore(data["timers"][name], timer_changes.get(name))
        self.restore_extra(data["extra"])
        self._watermark = data.get("watermark", LONG_MIN)


class OneInputStreamOperator(AbstractStreamOperator):
    @abstractmethod
    def process_element(self, record: StreamRecord[Any]) -> None: ...

    def process_elements(
        self, values: Sequence[Any], timestamps: Sequence[int | None], seqs: Sequence[int], at: Callable[[int], None]
    ) -> None:
        """:meth:`process_record` of each of ``values`` (at ``timestamps``) in order, calling ``at(seqs[i])``
        before element ``i`` (a host numbers what an element emits by it). Operators that can work out something
        for many elements at once override it."""
        process = self.process_record
        for value, timestamp, seq in zip(values, timestamps, seqs, strict=True):
            at(seq)
            process(StreamRecord(value, timestamp))


class StreamingRuntimeContext(RuntimeContext):
    """The runtime context of a function hosted by ``operator``; keyed state needs a keyed operator."""

    def __init__(self, operator: AbstractStreamOperator) -> None:
        self._operator = operator
        self._store = NamespacedStateStore(operator.backend, VOID_NAMESPACE)

    def get_task_name(self) -> str:
        return self._operator.task_name

    def get_index_of_this_subtask(self) -> int:
        return self._operator.subtask_index

    def get_number_of_parallel_subtasks(self) -> int:
        return self._operator.parallelism

    def get_max_number_of_parallel_subtasks(self) -> int:
        return self._operator.max_parallelism

    def _keyed(self) -> NamespacedStateStore:
        if self._operator.key_selector is None:
            raise RuntimeError("Keyed state can only be used on a 'keyed stream', i.e., after a 'key_by()' operation.")
        return self._store

    def get_state(self, state_descriptor: Any) -> Any:
        return self._keyed().get_state(state_descriptor)

    def get_list_state(self, state_descriptor: Any) -> Any:
        return self._keyed().get_list_state(state_descriptor)

    def get_map_state(self, state_descriptor: Any) -> Any:
        return self._keyed().get_map_state(state_descriptor)

    def get_reducing_state(self, state_descriptor: Any) -> Any:
        return self._keyed().get_reducing_state(state_descriptor)

    def get_aggregating_state(self, state_descriptor: Any) -> Any:
        return self._keyed().get_aggregating_state(state_descriptor)
