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

from panes.java_hash import java_hash_code

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


def key_groups(keys: Any, max_parallelism: int) -> Any:
    """The key group of each key of an Arrow array, as ``assign_to_key_group`` gives it, computed with numpy
    for strings of ASCII characters, integers and booleans (nulls are the key ``None``); other keys one by
    one. Returns an ``int64`` numpy array."""
    import numpy as np
    import pyarrow as pa

    array = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    codes = _hash_codes(array)
    if codes is None:
        return np.array([assign_to_key_group(k, max_parallelism) for k in array.to_pylist()], dtype=np.int64)
    return _murmur(codes) % max_parallelism


def _hash_codes(array: Any) -> Any:
    """Java hash codes (``uint32``) of an Arrow array's values, or ``None`` when numpy cannot compute them."""
    import numpy as np
    import pyarrow as pa

    kind = array.type
    if pa.types.is_integer(kind):
        bits = array.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64).view(np.uint64)
        codes = ((bits ^ (bits >> np.uint64(32))) & np.uint64(_M32)).astype(np.uint32)
    elif pa.types.is_boolean(kind):
        codes = np.where(array.fill_null(False).to_numpy(zero_copy_only=False), 1231, 1237).astype(np.uint32)
    elif pa.types.is_string(kind):
        codes = _ascii_string_codes(array)
        if codes is None:
            return None
    else:
        return None
    if array.null_count:
        codes[array.is_null().to_numpy(zero_copy_only=False)] = 0
    return codes


def _ascii_string_codes(array: Any) -> Any:
    """``String.hashCode`` of each string (``31 * h + c`` over its characters), when all are ASCII."""
    import numpy as np

    count = len(array)
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int32)[array.offset : array.offset + count + 1].astype(
        np.int64
    )
    data_buffer = array.buffers()[2]
    first, last = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(data_buffer, dtype=np.uint8)[first:last] if data_buffer is not None else np.empty(0, np.uint8)
    if data.size and int(data.max()) >= 128:
        return None
    lengths = np.diff(offsets)
    codes = np.zeros(count, dtype=np.uint64)
    if data.size:
        owner = np.repeat(np.arange(count), lengths)
        exponent = offsets[1:][owner] - 1 - np.arange(first, last)
        powers = np.ones(int(lengths.max()), dtype=np.uint64)
        for i in range(1, len(powers)):
            powers[i] = (powers[i - 1] * np.uint64(31)) & np.uint64(_M32)
        terms = (data.astype(np.uint64) * powers[exponent]) & np.uint64(_M32)
        filled = lengths > 0
        sums = np.add.reduceat(terms, (offsets[:-1] - first)[filled])
        codes[filled] = sums & np.uint64(_M32)
    return codes.astype(np.uint32)


def _murmur(codes: Any) -> Any:
    """:func:`murmur_hash` of each ``uint32`` hash code, as an ``int64`` numpy array."""
    import numpy as np

    with np.errstate(over="ignore"):
        h = codes.astype(np.uint32) * np.uint32(0xCC9E2D51)
        h = (h << np.uint32(15)) | (h >> np.uint32(17))
        h = h * np.uint32(0x1B873593)
        h = (h << np.uint32(13)) | (h >> np.uint32(19))
        h = h * np.uint32(5) + np.uint32(0xE6546B64)
        h ^= np.uint32(4)
        h ^= h >> np.uint32(16)
        h = h * np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h = h * np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    signed = h.view(np.int32).astype(np.int64)
    return np.where(signed >= 0, signed, np.where(signed == -(1 << 31), 0, -signed))
