"""What a key is: the one rule every host applies when it keys an element (``key_by``, keyed connections).

A key is what the key selector returns for the element, when it is not ``None`` and is hashable; a list (which
PyFlink accepts) becomes a :class:`ListKey`. Flink
refuses null keys ("Assigned key must not be null!"), so an element without a key — a ``key_by("field")``
whose field is absent or ``None``, or a key selector returning ``None`` — is a *bad record*
(``BadRecordError``), as is another unhashable key (a dict, a set): the message names the field (or the key
selector) and says what to change. A key selector that raises is a user function that failed (``UserFunctionError``, the
selector's exception as its cause). Either goes to the keyed step's error side output when it has one
(``side_output_errors``), or fails the job (see ``panes.errors``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from panes.errors import BadRecordError, UserFunctionError
from panes.functions.aggregators import FieldKey
from panes.functions.stream import function_name

KeySelector = Callable[[Any], Any]

_ADVICE = (
    "filter such records out or give them a key before key_by, or collect them with side_output_errors(tag) on "
    "the keyed step"
)


def extract_key(key_selector: KeySelector, value: Any) -> Any:
    """The key of ``value`` (see the module docstring); raises ``BadRecordError`` for a missing, ``None`` or
    unhashable key and ``UserFunctionError`` when the key selector raises."""
    try:
        key = key_selector(value)
    except BadRecordError:
        raise
    except Exception as error:
        if isinstance(key_selector, FieldKey):
            raise BadRecordError(
                f"key_by({key_selector.field!r}): {value!r} has no field {key_selector.field!r}; {_ADVICE}"
            ) from error
        raise UserFunctionError(error, function=describe_key_selector(key_selector)) from error
    if key is None:
        raise BadRecordError(f"{_null_key(key_selector, value)}; Flink refuses null keys: {_ADVICE}")
    if type(key) is list:
        key = ListKey.of(key)
    try:
        hash(key)
    except TypeError as error:
        raise BadRecordError(
            f"{_subject(key_selector)}: the key {key!r} of {value!r} is not hashable; return a hashable key (a "
            f"tuple rather than a dict, for example), or collect such records with side_output_errors(tag) on the "
            "keyed step"
        ) from error
    return key


_PLAIN_KEYS = frozenset({str, int, float, bytes, bool})
"""Types of keys that are hashable, not ``None`` and not lists: what :func:`extract_key` returns unchanged."""


def extract_keys(key_selector: KeySelector, values: Sequence[Any]) -> list[Any] | None:
    """The keys :func:`extract_key` gives ``values``, worked out together in the common case: a ``key_by`` field
    name over records that are all ``dict`` and hold it, every key a ``str``, ``int``, ``float``, ``bytes`` or
    ``bool``. ``None`` in any other case: the caller then keys each value with :func:`extract_key`, which
    says what is wrong with the one that is."""
    if type(key_selector) is not FieldKey or type(key_selector.field) is not str or not values:
        return None
    if set(map(type, values)) != {dict}:
        return None
    field = key_selector.field
    try:
        keys = [value[field] for value in values]
    except KeyError:
        return None
    return keys if set(map(type, keys)) <= _PLAIN_KEYS else None


class ListKey(tuple):  # type: ignore[type-arg]
    """A key that is a list (PyFlink accepts them, comparing keys by their serialized form): its items as a
    tuple, lists inside it too. Equal to a ``ListKey`` or a list with equal items, never to a plain tuple (as
    in PyFlink, where ``[1]`` and ``(1,)`` are different keys); shown as the list it stands for."""

    __slots__ = ()

    @staticmethod
    def of(items: list[Any]) -> ListKey:
        return ListKey(ListKey.of(item) if type(item) is list else item for item in items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ListKey):
            return tuple.__eq__(self, other)
        if isinstance(other, list):
            return list(self) == other
        return False

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(("list", tuple(self)))

    def __repr__(self) -> str:
        return repr(list(self))


def describe_key_selector(key_selector: KeySelector) -> str:
    """How messages name a key selector: ``key_by('user')`` for a field, else ``key selector <name>``."""
    if isinstance(key_selector, FieldKey):
        return f"key_by({key_selector.field!r})"
    owner = getattr(key_selector, "__self__", key_selector)  # a KeySelector's bound get_key
    return f"key selector {function_name(owner)}"


def _subject(key_selector: KeySelector) -> str:
    description = describe_key_selector(key_selector)
    return description if isinstance(key_selector, FieldKey) else f"the {description}"


def _null_key(key_selector: KeySelector, value: Any) -> str:
    if isinstance(key_selector, FieldKey):
        return f"key_by({key_selector.field!r}): the key field {key_selector.field!r} is None in {value!r}"
    return f"the {describe_key_selector(key_selector)} returned None for {value!r}"
