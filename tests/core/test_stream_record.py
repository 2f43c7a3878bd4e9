"""``StreamRecord`` behaves as the frozen dataclass it was: immutable, equal and hashed by its fields, pickled and
copied whole, and records pickled by earlier versions (as a dataclass) still load."""

from __future__ import annotations

import copy
import copyreg
import dataclasses
import pickle
from typing import Any

import pytest

from panes.elements import StreamRecord


def test_fields_compare_and_hash_as_a_frozen_dataclass() -> None:
    record = StreamRecord({"a": 1}, 5)
    assert record == StreamRecord({"a": 1}, 5)
    assert record != StreamRecord({"a": 1}, 6)
    assert record != StreamRecord({"a": 2}, 5)
    assert StreamRecord(1) == StreamRecord(1, None)
    assert not StreamRecord(1).has_timestamp() and StreamRecord(1, 0).has_timestamp()
    assert hash(StreamRecord((1, 2), 3)) == hash(StreamRecord((1, 2), 3))
    assert StreamRecord(1, 2) != (1, 2)
    assert repr(record) == "StreamRecord(value={'a': 1}, timestamp=5)"
    match record:
        case StreamRecord(value, timestamp):
            assert (value, timestamp) == ({"a": 1}, 5)


def test_fields_cannot_be_assigned_or_deleted() -> None:
    record = StreamRecord(1, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.value = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del record.timestamp
    with pytest.raises(AttributeError):
        record.other = 1  # type: ignore[attr-defined]
    assert (record.value, record.timestamp) == (1, 2)


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickles_and_copies_whole(protocol: int) -> None:
    record = StreamRecord({"a": [1, 2]}, -7)
    assert pickle.loads(pickle.dumps(record, protocol=protocol)) == record
    deep = copy.deepcopy(record)
    assert deep == record and deep.value is not record.value
    assert copy.copy(record).value is record.value


class _PickledAsADataclass:
    """Pickles as a frozen dataclass ``StreamRecord`` did: a bare instance, then its fields as a state dict."""

    def __init__(self, value: Any, timestamp: int | None) -> None:
        self.fields = {"value": value, "timestamp": timestamp}

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # what the pickler checks ``__newobj__``'s class against
        return StreamRecord

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return (copyreg.__newobj__, (StreamRecord,), self.fields)  # type: ignore[attr-defined]


@pytest.mark.parametrize("protocol", range(2, pickle.HIGHEST_PROTOCOL + 1))
def test_records_pickled_as_a_dataclass_still_load(protocol: int) -> None:
    old = pickle.dumps([_PickledAsADataclass({"k": "x"}, 9), _PickledAsADataclass(2, None)], protocol=protocol)
    assert pickle.loads(old) == [StreamRecord({"k": "x"}, 9), StreamRecord(2)]
