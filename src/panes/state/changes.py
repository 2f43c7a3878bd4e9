"""What changed in a table of state since it was last stored, so a store writes only that.

A :class:`Changes` records, per slot (a key of a table), that its value was replaced (or removed), that
items were appended to the list it holds since a length, or which entries of the map it holds were set or
removed (map state: a key's map is stored entry by entry, not rewritten whole). :meth:`Changes.take` turns
that into a :class:`TableDelta` of the table and starts over; :func:`apply_delta` replays deltas onto a
restored table.
A delta holds only the slots that changed, so storing one costs what the work since the last one touched,
not what the table holds (the Spark runner appends deltas to a shard's log in its state store).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class TableDelta:
    """Slots of a table that changed: new values (``upserts``), items appended to lists (``appends``),
    removed slots (``removed``) and entries of maps (``entries``: slot -> (entries set, keys removed)); a
    slot appears in only one kind."""

    upserts: dict[Any, Any] = field(default_factory=dict)
    appends: dict[Any, list[Any]] = field(default_factory=dict)
    removed: list[Any] = field(default_factory=list)
    entries: dict[Any, tuple[dict[Any, Any], list[Any]]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.upserts or self.appends or self.removed or self.entries)


class Changes:
    """The slots of one table changed since the last :meth:`take` (see the module docstring)."""

    __slots__ = ("slots",)

    def __init__(self) -> None:
        self.slots: dict[Any, int | set[Any] | None] = {}

    def replaced(self, slot: Any) -> None:
        """The slot's value was set, mutated in place or removed."""
        self.slots[slot] = None

    def replaced_all(self, slots: Any) -> None:
        """Each of ``slots`` (an iterable) was :meth:`replaced`."""
        self.slots.update(dict.fromkeys(slots))

    def appended(self, slot: Any, length: int) -> None:
        """Items were appended to the list in ``slot``, which held ``length`` items when it was last stored
        (only the first call since then counts)."""
        if slot not in self.slots:
            self.slots[slot] = length

    def entry(self, slot: Any, key: Any) -> None:
        """The entry ``key`` of the map in ``slot`` was set or removed (a slot already replaced stays so)."""
        recorded = self.slots.get(slot, 0)
        if isinstance(recorded, set):
            recorded.add(key)
        elif slot not in self.slots:
            self.slots[slot] = {key}

    def take(self, table: dict[Any, Any]) -> TableDelta:
        """The delta of ``table`` since the last call; starts recording afresh."""
        delta = TableDelta()
        for slot, since in self.slots.items():
            value = table.get(slot)
            if value is None:
                delta.removed.append(slot)
            elif since is None:
                delta.upserts[slot] = value
            elif isinstance(since, set):
                delta.entries[slot] = ({k: value[k] for k in since if k in value}, [k for k in since if k not in value])
            else:
                delta.appends[slot] = value[since:]
        self.slots = {}
        return delta


def apply_delta(table: dict[Any, Any], delta: TableDelta) -> None:
    """Replay ``delta`` onto ``table`` (in place)."""
    for slot in delta.removed:
        table.pop(slot, None)
    table.update(delta.upserts)
    for slot, items in delta.appends.items():
        stored = table.get(slot)
        if stored is None:
            table[slot] = list(items)
        else:
            stored.extend(items)
    # deltas stored before map entries were tracked have no ``entries``
    for slot, (puts, removed) in getattr(delta, "entries", {}).items():
        entries = table.setdefault(slot, {})
        for key in removed:
            entries.pop(key, None)
        entries.update(puts)
        if not entries:
            del table[slot]
