"""``key_by``'s partitioner: the instance owning a key's key group, the key refused as the keyed step refuses it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from panes.datastream.partitioning import KeyGroupStreamPartitioner
from panes.errors import BadRecordError
from panes.keygroups import assign_key_to_parallel_operator

KEYS = st.one_of(st.text(max_size=8), st.integers(-(2**40), 2**40), st.tuples(st.text(max_size=3), st.integers()))


@given(key=KEYS, channels=st.integers(1, 16), max_parallelism=st.sampled_from([1, 16, 128, 32768]))
def test_each_key_goes_to_the_instance_owning_its_key_group(key: Any, channels: int, max_parallelism: int) -> None:
    if channels > max_parallelism:
        channels = max_parallelism
    partitioner = KeyGroupStreamPartitioner(lambda value: value["k"], max_parallelism)
    expected = assign_key_to_parallel_operator(key, max_parallelism, channels)
    assert partitioner.select({"k": key}, channels) == [expected]
    assert 0 <= expected < channels


@pytest.mark.parametrize("channels", [1, 4])
def test_a_missing_or_null_key_is_refused_with_one_instance_or_many(channels: int) -> None:
    partitioner = KeyGroupStreamPartitioner(lambda value: value["k"], 128)
    with pytest.raises(BadRecordError, match="null"):
        partitioner.select({"k": None}, channels)
    with pytest.raises(BadRecordError, match="not hashable"):
        partitioner.select({"k": {"a": 1}}, channels)
