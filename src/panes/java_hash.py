"""Java ``HashMap``/``HashSet`` iteration order, for the places where Flink's results depend on it.

Flink's merging-window bookkeeping (``MergingWindowSet``, ``TimeWindow.mergeWindows``) iterates Java hash
collections; which session's state becomes the merge target, and so the order of elements a window
function sees, follows from that iteration order. These classes keep Python dict semantics but iterate
as Java does: by bucket ``(h ^ (h >>> 16)) & (capacity - 1)`` of the element's Java ``hashCode``, then by
insertion order within a bucket. The capacity starts at 16 and doubles when the size exceeds 3/4 of it,
and also, as ``HashMap.treeifyBin`` does while the table is smaller than 64 buckets, when a new key lands
in a bucket that already holds 8 keys. (From 64 buckets on Java turns such a bucket into a tree, whose
iteration order is not modelled; with Flink's well-mixed window hashes that takes 9 keys in one of 64+
buckets.)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


def java_hash_code(obj: Any) -> int:
    """The Java ``hashCode`` panes assumes for ``obj``: its ``java_hash_code()`` when it has one."""
    method = getattr(obj, "java_hash_code", None)
    if method is not None:
        return int(method())
    if isinstance(obj, bool):
        return 1231 if obj else 1237
    if isinstance(obj, int):
        bits = obj & ((1 << 64) - 1)
        return (bits ^ (bits >> 32)) & 0xFFFFFFFF
    if isinstance(obj, str):
        data = obj.encode("utf-16-be")
        h = 0
        for i in range(0, len(data), 2):
            h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
        return h
    return hash(obj) & 0xFFFFFFFF


_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


def _spread(h: int) -> int:
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


class JavaHashMap(Generic[K, V]):
    """A dict that iterates in the order a Java ``HashMap`` built by the same operations would."""

    __slots__ = ("_capacity", "_entries", "_next_seq")

    def __init__(self, items: Iterable[tuple[K, V]] = ()) -> None:
        self._entries: dict[K, tuple[V, int, int]] = {}
        self._capacity = 16
        self._next_seq = 0
        for key, value in items:
            self.put(key, value)

    def put(self, key: K, value: V) -> V | None:
        previous = self._entries.get(key)
        if previous is not None:
            self._entries[key] = (value, previous[1], previous[2])
            return previous[0]
        spread = _spread(java_hash_code(key))
        if len(self._entries) >= _TREEIFY_THRESHOLD and self._capacity < _MIN_TREEIFY_CAPACITY:
            # Java appends the key to its bucket, and a bucket that now holds more than 8 keys makes a
            # table of fewer than 64 buckets double instead of turning the bucket into a tree
            mask = self._capacity - 1
            in_bucket = sum(1 for _, h, _ in self._entries.values() if h & mask == spread & mask)
            if in_bucket >= _TREEIFY_THRESHOLD:
                self._capacity *= 2
        self._entries[key] = (value, spread, self._next_seq)
        self._next_seq += 1
        if len(self._entries) > self._capacity * 3 // 4:
            self._capacity *= 2
        return None

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        return None if entry is None else entry[0]

    def remove(self, key: K) -> V | None:
        entry = self._entries.pop(key, None)
        return None if entry is None else entry[0]

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def keys(self) -> list[K]:
        mask = self._capacity - 1
        return sorted(self._entries, key=lambda k: (self._entries[k][1] & mask, self._entries[k][2]))

    def items(self) -> list[tuple[K, V]]:
        return [(key, self._entries[key][0]) for key in self.keys()]

    def values(self) -> list[V]:
        return [self._entries[key][0] for key in self.keys()]

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())

    def to_dict(self) -> dict[K, V]:
        return {key: entry[0] for key, entry in self._entries.items()}


class JavaHashSet(Generic[K]):
    """A set that iterates in Java ``HashSet`` order (see :class:`JavaHashMap`)."""

    __slots__ = ("_map",)

    def __init__(self, items: Iterable[K] = ()) -> None:
        self._map: JavaHashMap[K, bool] = JavaHashMap()
        for item in items:
            self._map.put(item, True)

    def add(self, item: K) -> bool:
        return self._map.put(item, True) is None

    def remove(self, item: K) -> bool:
        return self._map.remove(item) is not None

    def __contains__(self, item: object) -> bool:
        return item in self._map

    def __len__(self) -> int:
        return len(self._map)

    def __iter__(self) -> Iterator[K]:
        return iter(self._map.keys())

    def __repr__(self) -> str:
        return "{" + ", ".join(repr(k) for k in self) + "}"
