"""Sorted inputs: how a keyed operator runs in BATCH execution (Flink's ``SortingDataInput`` and
``MultiInputSortingDataInput`` with the batch state backend and timer service).

A :class:`SortedKeyedInput` takes all the records of a keyed operator's inputs first (:meth:`add`), then
:meth:`drain` hands them to the operator sorted by key and, within a key, by timestamp (records of both inputs
of a two-input operator merged in that order), one key at a time: after the last record of a key the
operator's ``end_key`` fires every timer of that key (event time first, at watermark ``LONG_MAX``, then
processing time), before the next key starts at watermark ``LONG_MIN``. Nothing is late, and a window fires
once, with everything its key put in it, in timestamp order.

Order of keys: Flink orders keys by their serialized bytes, which the DataStream API does not specify; here
keys are in their natural order (``sorted``) when they can be compared with each other, else in the order
they first arrived. Records with equal key and timestamp keep their arrival order; records without a
timestamp sort first within their key (Flink reads a missing timestamp as ``LONG_MIN``). Any host (the
local runner, the Spark runner's shards) uses this one class.
"""

from __future__ import annotations

from typing import Any

from panes.elements import StreamRecord, Watermark
from panes.operators.base import AbstractStreamOperator, OneInputStreamOperator, Output
from panes.operators.keys import extract_key
from panes.operators.two_input import TwoInputStreamOperator
from panes.state.backend import VOID_NAMESPACE
from panes.state.descriptors import ListStateDescriptor
from panes.time import LONG_MAX, LONG_MIN
from panes.timers.clock import ProcessingTimeService


class SortedKeyedInput:
    """Buffers the records of ``operator`` (a keyed one- or two-input operator) and processes them key by key
    (see the module docstring). A record whose key cannot be read is reported at once, as the operator
    reports it in STREAMING execution (error output or failure)."""

    def __init__(self, operator: AbstractStreamOperator) -> None:
        if operator.key_selector is None:
            raise ValueError(f"{operator.task_name} is not keyed: only keyed operators take sorted inputs")
        self.operator = operator
        self._records: list[tuple[Any, int, int, int, StreamRecord[Any]]] = []

    def __len__(self) -> int:
        return len(self._records)

    def add(self, record: StreamRecord[Any], input_index: int = 0) -> None:
        """Keep ``record`` of input ``input_index`` (0 or 1) until :meth:`drain`."""
        operator = self.operator
        selector = operator.key_selector
        if input_index == 1:
            assert isinstance(operator, TwoInputStreamOperator)
            selector = operator.key_selector2
        assert selector is not None
        try:
            key = extract_key(selector, record.value)
        except Exception as error:
            operator.report_failure(record, error)
            return
        timestamp = LONG_MIN if record.timestamp is None else record.timestamp
        self._records.append((key, timestamp, len(self._records), input_index, record))

    def drain(self) -> None:
        """Process everything added so far, one key at a time, firing each key's timers when it ends."""
        records, self._records = self._records, []
        if not records:
            return
        rank = key_ranks([entry[0] for entry in records])
        records.sort(key=lambda entry: (rank[entry[0]], entry[1], entry[2]))
        operator = self.operator
        current = records[0][0]
        for key, _, _, input_index, record in records:
            if key != current:
                operator.set_current_key(current)
                operator.end_key()
                current = key
            if isinstance(operator, TwoInputStreamOperator):
                (operator.process_record1 if input_index == 0 else operator.process_record2)(record)
            else:
                assert isinstance(operator, OneInputStreamOperator)
                operator.process_record(record)
        operator.set_current_key(current)
        operator.end_key()


def key_ranks(keys: list[Any]) -> dict[Any, int]:
    """The position of each distinct key of ``keys``: natural order when they compare, else first arrival."""
    distinct = list(dict.fromkeys(keys))
    try:
        ordered = sorted(distinct)
    except TypeError:
        ordered = distinct
    return {key: position for position, key in enumerate(ordered)}


class BroadcastFirstInput:
    """BATCH execution of a broadcast operator (``panes.operators.broadcast``): every element of the broadcast
    input (input 1) first, in arrival order, then the other input: key by key through a :class:`SortedKeyedInput`
    when the operator is keyed, in arrival order otherwise. Flink's batch execution reads the broadcast side of
    a broadcast connected stream before the other side in the same way."""

    def __init__(self, operator: TwoInputStreamOperator) -> None:
        self.operator = operator
        self._broadcast: list[StreamRecord[Any]] = []
        self._keyed = SortedKeyedInput(operator) if operator.key_selector is not None else None
        self._plain: list[StreamRecord[Any]] = []

    def __len__(self) -> int:
        return len(self._broadcast) + len(self._plain) + (len(self._keyed) if self._keyed is not None else 0)

    def add(self, record: StreamRecord[Any], input_index: int = 0) -> None:
        if input_index == 1:
            self._broadcast.append(record)
        elif self._keyed is not None:
            self._keyed.add(record, 0)
        else:
            self._plain.append(record)

    def drain(self) -> None:
        broadcast, self._broadcast = self._broadcast, []
        for record in broadcast:
            self.operator.process_record2(record)
        if self._keyed is not None:
            self._keyed.drain()
        plain, self._plain = self._plain, []
        for record in plain:
            self.operator.process_record1(record)


def sorted_input_for(operator: AbstractStreamOperator) -> SortedKeyedInput | BroadcastFirstInput | None:
    """How ``operator`` takes its input in BATCH execution: a broadcast operator broadcast side first, a keyed
    operator key by key, any other element by element (``None``)."""
    if getattr(operator, "has_broadcast_input", False):
        assert isinstance(operator, TwoInputStreamOperator)
        return BroadcastFirstInput(operator)
    if operator.key_selector is not None:
        return SortedKeyedInput(operator)
    return None


class SortedUntilEndOfInput(OneInputStreamOperator):
    """STREAMING execution of a keyed operator that emits only at the end of its input (Flink 2's
    ``isOutputOnlyAfterEndOfStream``, FLIP-331: a window of ``GlobalWindows.create_with_end_of_stream_trigger()``):
    Flink runs such an operator on sorted input even in STREAMING execution, so its function (and an evictor) sees
    each key's elements in timestamp order, as in BATCH execution.

    The records are kept in keyed list state (so snapshots, changes and rescaling hold them as any keyed state)
    until the final watermark (``LONG_MAX``); then they go to ``inner`` through a :class:`SortedKeyedInput`, key by
    key and in timestamp order, each key ending as in BATCH execution, and the final watermark follows. Earlier
    watermarks are forwarded (``inner`` emits nothing before the end)."""

    BUFFER = ListStateDescriptor("sorted-until-end-of-input")

    def __init__(self, inner: OneInputStreamOperator) -> None:
        if inner.key_selector is None:
            raise ValueError(f"{inner.task_name} is not keyed: only keyed operators take sorted inputs")
        super().__init__(inner.key_selector)
        self.inner = inner
        self._arrivals = 0

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
        super().setup(
            output,
            processing_time_service,
            task_name=task_name,
            subtask_index=subtask_index,
            parallelism=parallelism,
            max_parallelism=max_parallelism,
        )
        # the inner operator emits through this one's counted output and counts into its counters
        self.inner.setup(
            self.output,
            processing_time_service,
            task_name=task_name,
            subtask_index=subtask_index,
            parallelism=parallelism,
            max_parallelism=max_parallelism,
        )
        self.inner.counters = self.counters

    def open(self) -> None:
        self.inner.error_tag = self.error_tag
        self.inner.open()
        self._buffer = self.runtime_context().get_list_state(self.BUFFER)

    def close(self) -> None:
        self.inner.close()

    def process_element(self, record: StreamRecord[Any]) -> None:
        self._arrivals += 1
        self._buffer.add((self._arrivals, record.timestamp, record.value))

    def process_watermark(self, watermark: Watermark) -> None:
        if watermark.timestamp < LONG_MAX:
            self._watermark = watermark.timestamp
            self.output.emit_watermark(watermark)
            return
        buffered: list[tuple[int, int | None, Any, Any]] = []

        def collect(key: Any, state: Any) -> None:
            buffered.extend((arrival, ts, value, key) for arrival, ts, value in state.get())
            state.clear()

        self.backend.apply_to_all_keys(VOID_NAMESPACE, self.BUFFER, collect)
        sorted_input = SortedKeyedInput(self.inner)
        for _, timestamp, value, _ in sorted(buffered, key=lambda entry: entry[0]):
            sorted_input.add(StreamRecord(value, timestamp))
        self.inner.counters.records_in -= len(buffered)  # counted once, when they arrived here
        sorted_input.drain()
        self._watermark = LONG_MAX
        self.inner.process_watermark(watermark)

    def open_panes(self) -> int:
        """The keys whose elements wait for the end of input, and the panes the inner operator holds."""
        return self.state_entries() + self.inner.open_panes()

    def timer_count(self) -> int:
        return self.inner.timer_count()

    def next_event_time_timer(self) -> int | None:
        """``LONG_MAX`` while elements wait for the end of input (a runner that wakes the operator for its
        timers wakes it then), else the inner operator's next timer."""
        if self.state_entries():
            return LONG_MAX
        return self.inner.next_event_time_timer()

    def snapshot_extra(self) -> Any:
        return {"arrivals": self._arrivals}

    def restore_extra(self, data: Any) -> None:
        if data:
            self._arrivals = data["arrivals"]

    def extra_changes(self) -> Any:
        return self.snapshot_extra()
