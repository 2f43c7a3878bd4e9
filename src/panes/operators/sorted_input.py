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

from panes.elements import StreamRecord
from panes.operators.base import AbstractStreamOperator, OneInputStreamOperator
from panes.operators.keys import extract_key
from panes.operators.two_input import TwoInputStreamOperator
from panes.time import LONG_MIN


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
