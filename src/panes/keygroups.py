"""Key groups: how keys spread over parallel operator instances (Flink's ``KeyGroupRangeAssignment``).

``key group = murmur(hashCode(key)) % max_parallelism`` and ``instance = key_group * parallelism //
max_parallelism``. ``hashCode`` is Java's for str, int and bool (so a key lands in the key group it would
in Flink), element-wise like ``java.util.List`` for tuples, and a stable CRC of the pickled value otherwise
(Python's own ``hash`` of str changes between processes and cannot be used).
"""

from __future__ import annotations

import pickle
import zlib
from typing import Any

from panes.windowing.java_hash import java_hash_code

_M32 = 0xFFFFFFFF


def _to_int32(value: int) -> int:
    value &= _M32
    return value - (1 << 32) if value >= (1 << 31) else value


def _rotl(value: int, bits: int) -> int:
    value &= _M32
    return ((value << bits) | (value >> (32 - bits))) & _M32


def murmur_hash(code: int) -> int:
    """Flink's ``MathUtils.murmurHash(int)``: a non-negative 32-bit mix of a hash code."""
    code = (code * 0xCC9E2D51) & _M32
    code = _rotl(code, 15)
    code = (code * 0x1B873593) & _M32
    code = _rotl(code, 13)
    code = (code * 5 + 0xE6546B64) & _M32
    code ^= 4
    code ^= code >> 16
    code = (code * 0x85EBCA6B) & _M32
    code ^= code >> 13
    code = (code * 0xC2B2AE35) & _M32
    code ^= code >> 16
    signed = _to_int32(code)
    if signed >= 0:
        return signed
    return -signed if signed != -(1 << 31) else 0


def stable_hash_code(key: Any) -> int:
    """A 32-bit hash code of ``key`` that is the same in every process (see the module docstring)."""
    if isinstance(key, (str, int, bool)) or hasattr(key, "java_hash_code"):
        return _to_int32(java_hash_code(key))
    if isinstance(key, tuple):
        h = 1
        for item in key:
            h = (31 * h + stable_hash_code(item)) & _M32
        return _to_int32(h)
    if key is None:
        return 0
    return _to_int32(zlib.crc32(pickle.dumps(key, protocol=4)))


def assign_to_key_group(key: Any, max_parallelism: int) -> int:
    """The key group ``[0, max_parallelism)`` of ``key``."""
    return murmur_hash(stable_hash_code(key)) % max_parallelism


def operator_index_for_key_group(max_parallelism: int, parallelism: int, key_group: int) -> int:
    """The parallel instance ``[0, parallelism)`` that owns ``key_group``."""
    return key_group * parallelism // max_parallelism


def assign_key_to_parallel_operator(key: Any, max_parallelism: int, parallelism: int) -> int:
    """The parallel instance ``[0, parallelism)`` that processes ``key``."""
    return operator_index_for_key_group(max_parallelism, parallelism, assign_to_key_group(key, max_parallelism))
