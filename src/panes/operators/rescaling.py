"""Rescaling: a keyed step's state, snapshotted by its instances at one parallelism, redistributed by key to the
instances of another, as Flink restores key-group ranges into any parallelism up to the max parallelism.

A key belongs to key group ``murmur(hashCode(key)) % max_parallelism``, and a key group to instance
``key_group * parallelism // max_parallelism`` (``panes.keygroups``), so a key's state moves to the instance
that will receive its records. What is kept per key moves with the key: keyed state entries, timers, panes.
What an instance keeps for all its keys is not split: state every instance holds alike (broadcast state, the
stagger of a window's offset) goes to every new instance; counts (a window's dropped late records) go to the
first; the watermark an instance reached becomes the lowest of the old instances' (a new instance has seen
the watermarks of all of them only up to that).

Every operator that keeps keyed state says how its snapshots redistribute (:func:`rescale`): the heap-backed
operators (``AbstractStreamOperator``) share one rule for keyed state and timers and say how their extras
split (``rescale_extra``); the columnar window operators split their columns.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from panes.time import LONG_MIN


class Owner:
    """The new instance ``[0, count)`` that owns a key when a step has ``count`` instances (its key group's share):
    ``owner(key)`` for one key, :meth:`of_keys` for an Arrow array of them."""

    def __init__(self, max_parallelism: int, count: int) -> None:
        from panes import keygroups  # imported here: keygroups imports the windowing package, which imports this

        self.max_parallelism = max_parallelism
        self.count = count
        self._keygroups = keygroups

    def __call__(self, key: Any) -> int:
        return self._keygroups.assign_key_to_parallel_operator(key, self.max_parallelism, self.count)

    def of_keys(self, keys: Any) -> Any:
        """The owners of the keys of an Arrow array, as an ``int64`` numpy array."""
        groups = self._keygroups.key_groups(keys, self.max_parallelism)
        return self._keygroups.operator_index_for_key_group(self.max_parallelism, self.count, groups)


class Rescalable(Protocol):
    """What can redistribute its snapshots (a class, or the classmethod of one)."""

    @classmethod
    def rescale_snapshots(cls, snapshots: Sequence[bytes], owner: Owner, count: int) -> list[bytes]: ...


def rescale(kind: Rescalable, snapshots: Sequence[bytes], max_parallelism: int, count: int) -> list[bytes]:
    """The snapshots of ``count`` instances of an operator of class ``kind`` holding the state of ``snapshots``
    (one per old instance, full snapshots, not changes), each key's state at the instance that owns it now."""
    if count <= 0:
        raise ValueError(f"a step needs at least one instance to hold its state (got {count})")
    return kind.rescale_snapshots(snapshots, Owner(max_parallelism, count), count)


def split_keyed(items: dict[Any, Any], key_of: Callable[[Any], Any], owner: Owner, count: int) -> list[dict[Any, Any]]:
    """``items`` split into ``count`` dicts, each item where its key (``key_of(item key)``) is owned."""
    parts: list[dict[Any, Any]] = [{} for _ in range(count)]
    for slot, value in items.items():
        parts[owner(key_of(slot))][slot] = value
    return parts


def split_keyed_state(snapshots: Sequence[dict[str, Any] | None], owner: Owner, count: int) -> list[dict[str, Any]]:
    """``count`` keyed-state snapshots (``HeapKeyedStateBackend.snapshot``) holding the entries of ``snapshots``
    (``None``: none), each key's at its ``owner``; every part knows every state's kind and time-to-live."""
    parts: list[dict[str, Any]] = [{"tables": {}, "kinds": {}, "ttl": []} for _ in range(count)]
    for keyed in snapshots:
        if keyed is None:
            continue
        for part in parts:
            part["kinds"].update(keyed.get("kinds", {}))
            part["ttl"] = sorted(set(part["ttl"]) | set(keyed.get("ttl", ())))
        for name, table in keyed["tables"].items():
            for index, piece in enumerate(split_keyed(table, lambda slot: slot[0], owner, count)):
                if piece:
                    parts[index]["tables"].setdefault(name, {}).update(piece)
    return parts


def heap_snapshots(snapshots: Sequence[bytes], owner: Owner, count: int) -> tuple[list[dict[str, Any]], list[Any]]:
    """Redistribute the keyed state and timers of ``AbstractStreamOperator`` snapshots (see
    ``AbstractStreamOperator.snapshot_state``): the new instances' data without ``extra``, and the old
    instances' extras (for the operator's ``rescale_extra``)."""
    datas = [pickle.loads(blob) for blob in snapshots]
    watermark = min((data.get("watermark", LONG_MIN) for data in datas), default=LONG_MIN)
    keyed_parts = split_keyed_state([data["keyed_state"] for data in datas], owner, count)
    parts: list[dict[str, Any]] = [
        {"keyed_state": keyed, "timers": {}, "extra": None, "watermark": watermark} for keyed in keyed_parts
    ]
    for data in datas:
        for name, timers in data["timers"].items():
            for part in parts:
                found = part["timers"].setdefault(name, {"event": [], "processing": [], "watermark": None})
                marks = [m for m in (found["watermark"], timers["watermark"]) if m is not None]
                found["watermark"] = min(marks)
            for kind in ("event", "processing"):
                for timer in timers[kind]:
                    parts[owner(timer[1])]["timers"][name][kind].append(timer)
            for key, held in timers.get("keys", {}).items():  # event time per key (panes.timers.key_time)
                parts[owner(key)]["timers"][name].setdefault("keys", {})[key] = held
            if timers.get("stream_quiet") is not None:  # every instance saw the stream's watermark: the latest
                for part in parts:
                    found = part["timers"][name]
                    found["stream_quiet"] = max(
                        (q for q in (found.get("stream_quiet"), timers["stream_quiet"]) if q is not None),
                        key=lambda quiet: -(2**63) if quiet[0] is None else quiet[0],
                    )
    return parts, [data.get("extra") for data in datas]


def dumped(parts: list[dict[str, Any]], extras: list[Any]) -> list[bytes]:
    """The new instances' snapshots: ``parts`` with their ``extras``."""
    blobs = []
    for part, extra in zip(parts, extras, strict=True):
        part["extra"] = extra
        blobs.append(pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL))
    return blobs


def same_for_all(extras: list[Any], count: int) -> list[Any]:
    """Extras every instance holds alike (broadcast state, watermarks of inputs): the first old instance's, to
    every new one."""
    return [extras[0] if extras else None for _ in range(count)]
