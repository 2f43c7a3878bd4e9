"""Java hash codes and ``HashMap``/``HashSet`` iteration order, on which Flink's merge targets depend.

Every expected order and hash value below was produced by OpenJDK 17 running Java's and Flink 2.3.0's own classes
(``java.util.HashMap``/``HashSet``, ``Long.hashCode``, ``String.hashCode``, and, from the ``flink-dist`` jar,
``MathUtils.longToIntWithBitMixing`` and ``TimeWindow.hashCode``) on the same inputs. (The bit-mixing values
were once worked out by hand with MurmurHash3's finalizer, which Flink does not use; a session scenario run
on real Flink, ``tests/scenarios/54_*``, showed the merge target it chose differ.)
"""

from __future__ import annotations

import numpy as np
import pytest

from panes.java_hash import JavaHashMap, JavaHashSet, java_hash_code
from panes.time import LONG_MAX, LONG_MIN
from panes.windowing import GlobalWindow, TimeWindow
from panes.windowing.windows import long_to_int_with_bit_mixing


def _signed(h: int) -> int:
    return h - (1 << 32) if h >= (1 << 31) else h


@pytest.mark.parametrize(
    ("value", "mixed"),
    [
        (0, 0),
        (1, 269157861),
        (-1, -221528709),
        (3, -485218064),
        (59, 1823867422),
        (LONG_MAX, 2036719293),
        (LONG_MIN, 2043586954),
        (1234567890123, -552196177),
    ],
)
def test_long_to_int_with_bit_mixing_matches_flink(value: int, mixed: int) -> None:
    assert long_to_int_with_bit_mixing(value) == mixed


def _mix_with_numpy(value: int) -> int:
    """SplitMix64's finalizer in wrapping uint64 arithmetic, folded to a signed int."""
    with np.errstate(over="ignore"):
        x = np.uint64(value & ((1 << 64) - 1))
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return int(np.uint32(x & np.uint64(0xFFFFFFFF)).astype(np.int32))


@pytest.mark.parametrize(
    ("value", "mixed"),
    [
        (5, -1095023140),
        (-5, -223893682),
        (2**40 + 7, 1391444830),
        (-(2**62), -280854565),
        (LONG_MAX - 3, -115840363),
        (987654321, -2132286536),
    ],
)
def test_bit_mixing_agrees_with_wrapping_uint64_arithmetic(value: int, mixed: int) -> None:
    assert long_to_int_with_bit_mixing(value) == _mix_with_numpy(value) == mixed


def test_time_window_hash_is_the_mixed_sum_with_long_overflow() -> None:
    assert TimeWindow(1, 2).java_hash_code() == -485218064  # mix(3)
    assert TimeWindow(17, 42).java_hash_code() == 1823867422  # mix(59)
    # start + end overflows a long: MAX - 10 + MAX wraps to -12
    assert TimeWindow(LONG_MAX - 10, LONG_MAX).java_hash_code() == -2127106671
    assert GlobalWindow().java_hash_code() == 0


def test_java_hash_codes_of_keys() -> None:
    assert java_hash_code(-1) == 0  # Long.hashCode(-1) = (int)(-1 ^ (-1 >>> 32)) = 0
    assert java_hash_code(1 << 32) == 1
    assert java_hash_code(7) == 7
    assert _signed(java_hash_code("a")) == 97
    assert _signed(java_hash_code("key1")) == 3288498
    assert _signed(java_hash_code("é")) == 233
    assert _signed(java_hash_code("\U0001f600")) == 1772899  # a surrogate pair, hashed as two chars
    assert java_hash_code(True) == 1231
    assert java_hash_code(False) == 1237


def test_hash_map_iterates_by_bucket_then_insertion_order() -> None:
    m: JavaHashMap[int, int] = JavaHashMap()
    for key in (17, 1, 33, 2, 16, 0):
        m.put(key, 0)
    assert m.keys() == [16, 0, 17, 1, 33, 2]


def test_hash_map_order_after_growing_and_after_remove_and_put() -> None:
    m: JavaHashMap[int, int] = JavaHashMap()
    for k in range(20, -1, -1):
        m.put(k * 16 + 1, 0)  # 21 keys: the table grows from 16 to 32 buckets after the 13th
    assert m.keys() == [
        321,
        257,
        193,
        129,
        65,
        1,
        273,
        209,
        145,
        81,
        17,
        289,
        225,
        161,
        97,
        33,
        305,
        241,
        177,
        113,
        49,
    ]
    m.remove(161)
    m.put(161, 0)  # back in its bucket, now last there
    assert m.keys() == [
        321,
        257,
        193,
        129,
        65,
        1,
        273,
        209,
        145,
        81,
        17,
        289,
        225,
        97,
        33,
        161,
        305,
        241,
        177,
        113,
        49,
    ]


def test_hash_map_of_strings_and_updates_in_place() -> None:
    m: JavaHashMap[str, int] = JavaHashMap()
    for key in ("key2", "key1", "b", "a", "zz"):
        m.put(key, 0)
    assert m.keys() == ["key1", "zz", "key2", "a", "b"]
    assert m.put("key2", 5) == 0  # replacing a value keeps the position and returns the old value
    assert m.keys() == ["key1", "zz", "key2", "a", "b"]
    assert m.get("key2") == 5
    assert m.get("missing") is None
    assert m.items()[2] == ("key2", 5)
    assert len(m) == 5
    assert "a" in m


def test_hash_set_of_time_windows_iterates_in_java_order() -> None:
    s = JavaHashSet([TimeWindow(5, 8), TimeWindow(10, 13)])
    assert list(s) == [TimeWindow(5, 8), TimeWindow(10, 13)]
    assert not s.add(TimeWindow(5, 8))  # already there
    assert s.remove(TimeWindow(5, 8))
    assert not s.remove(TimeWindow(5, 8))
    assert list(s) == [TimeWindow(10, 13)]
