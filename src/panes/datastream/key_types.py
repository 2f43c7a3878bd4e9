"""What panes knows of a key's type before the job runs, and the check that two keyed inputs agree on it.

Python keys carry no declared type, so a key's type is known only when

- it is declared: ``key_by(selector, key_type)``, ``ConnectedStreams.key_by(s1, s2, key_type)``, a window
  join's ``where(selector, key_type)`` / ``equal_to(selector, key_type)``;
- or the stream is typed (``output_type``, a typed source) and keyed by one of its fields.

Known types are compared by their Arrow type (``"string"``, ``"int64"``, ...). Flink refuses to bring two
keyed inputs together when their key types differ: keys of different types never meet, so such a job would
silently join or co-process nothing. panes refuses the same jobs when it knows both types, and lets the
others through (what it cannot know, it does not guess).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from panes.datastream.plan import Channel, Plan, Transformation, resolve_types, stream_channels
from panes.types import RecordType


def field_key_type(selector: Any, channels: list[Channel], types: Mapping[Channel, RecordType | None]) -> str | None:
    """The Arrow type (as text) of the field ``selector`` reads when it is a field key and the stream of
    ``channels`` has one record type with that field (``types``); ``None`` otherwise."""
    from panes.functions.aggregators import FieldKey

    if not isinstance(selector, FieldKey):
        return None
    found = {types.get(channel) for channel in channels}
    if len(found) != 1:
        return None
    record_type = found.pop()
    if record_type is None:
        return None
    arrow_type = record_type.arrow_type
    if not hasattr(arrow_type, "num_fields"):
        return None
    names = [arrow_type.field(i).name for i in range(arrow_type.num_fields)]
    if isinstance(selector.field, str) and selector.field in names:
        return str(arrow_type.field(names.index(selector.field)).type)
    if isinstance(selector.field, int) and 0 <= selector.field < len(names):
        return str(arrow_type.field(selector.field).type)
    return None


def key_type_of(transformation: Transformation, selector: Any, declared: Any = None) -> str | None:
    """The key type of ``transformation``'s stream keyed by ``selector``: ``declared`` (a ``Types`` value,
    as ``key_by``'s ``key_type``) when given, else the field's type on a typed stream, else ``None``.
    Raises ``TypeError`` when ``declared`` is not a type declaration."""
    from panes.datastream.stream import declared_type

    record_type = declared_type(declared)
    if record_type is not None:
        return str(record_type.arrow_type)
    from panes.functions.aggregators import FieldKey

    if not isinstance(selector, FieldKey):
        return None  # only a field key of a typed stream has a type known before running
    types = resolve_types(Plan((transformation,)))  # type: ignore[arg-type]
    return field_key_type(selector, stream_channels(transformation), types)


def check_same_key_types(first: str | None, second: str | None, what: str, error: type[Exception] = ValueError) -> None:
    """Raise ``error`` when both key types are known and differ (Flink's condition: the two inputs' key
    types are equal; Flink's window join raises ``IllegalArgumentException``, a two-input operator over two
    keyed streams ``UnsupportedOperationException``); ``what`` names the operation for the message."""
    if first is not None and second is not None and first != second:
        raise error(
            f"{what}: the keys of the two inputs have different types, first {first}, second {second}; "
            "key both inputs by values of one type (convert one key in its selector, or declare key_type)"
        )
