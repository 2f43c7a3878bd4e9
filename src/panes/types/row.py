"""``Row``: PyFlink's row, positional (``Row(1, "a")``) or named (``Row(name="a", n=1)``).

A row is an immutable sequence of values, optionally with a field name for each. Named rows keep the
keyword order (as PyFlink and PySpark do since Python 3.6), so ``Row(b=1, a=2)`` has the fields ``b, a``.
Values are read by position (``row[0]``), by name (``row["name"]``, ``row.name``) and by iteration;
``len(row)`` is the number of values and ``x in row`` searches the values (as PyFlink). Two rows are equal
when their names and values are; a row never equals a tuple. Unlike PyFlink's, a row cannot be changed
after it is made, which keeps ``hash(row)`` meaningful (it hashes like the tuple of its names and values,
so it raises ``TypeError`` when a value is unhashable).

As in PyFlink, a positional row of strings can act as a row class: ``Person = Row("name", "age")``, then
``Person("Alice", 11) == Row(name="Alice", age=11)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def _make_row(names: tuple[str, ...] | None, values: tuple[Any, ...]) -> Row:
    """A row of ``values`` named by ``names`` (``None``: positional), without checks (used by pickle)."""
    row = Row.__new__(Row)
    object.__setattr__(row, "_fields", names)
    object.__setattr__(row, "_values", values)
    return row


class Row:
    """A positional or named row (see the module docstring).

    ``Row(*values)`` makes a positional row and ``Row(**named)`` a named one; passing both raises
    ``TypeError``. ``row._fields`` is the tuple of names, or ``None`` for a positional row. Any name is a field
    name, ``self`` included.
    """

    __slots__ = ("_fields", "_values")

    _fields: tuple[str, ...] | None
    _values: tuple[Any, ...]

    def __init__(self, /, *values: Any, **named: Any) -> None:
        if values and named:
            raise TypeError("a Row takes positional values or named values, not both")
        if named:
            object.__setattr__(self, "_fields", tuple(named))
            object.__setattr__(self, "_values", tuple(named.values()))
        else:
            object.__setattr__(self, "_fields", None)
            object.__setattr__(self, "_values", values)

    def as_dict(self, recursive: bool = False) -> dict[str, Any]:
        """The named row as a ``dict`` (name -> value, in field order).

        With ``recursive=True`` named rows inside values (also inside lists and dicts) become dicts too.
        Raises ``TypeError`` for a positional row, which has no names.
        """
        if self._fields is None:
            raise TypeError(f"{self!r} is positional: only a named Row converts to a dict")
        if not recursive:
            return dict(zip(self._fields, self._values, strict=True))
        return {name: _as_plain(value) for name, value in zip(self._fields, self._values, strict=True)}

    def __call__(self, *values: Any) -> Row:
        """Use a positional row of names as a row class: ``Row("a", "b")(1, 2) == Row(a=1, b=2)``."""
        if self._fields is not None or not all(isinstance(name, str) for name in self._values):
            raise TypeError(f"only a positional Row of field names can make rows, not {self!r}")
        if len(values) != len(self._values):
            raise ValueError(f"{self!r} makes rows of {len(self._values)} values, got {len(values)}")
        if len(set(self._values)) != len(self._values):
            raise ValueError(f"{self!r} repeats a field name")
        return _make_row(self._values, values)

    def __getitem__(self, key: int | slice | str) -> Any:
        if isinstance(key, str):
            if self._fields is None:
                raise KeyError(f"{key!r}: {self!r} is positional and has no field names")
            try:
                return self._values[self._fields.index(key)]
            except ValueError:
                raise KeyError(key) from None
        return self._values[key]

    def __getattr__(self, name: str) -> Any:
        # only called when normal lookup fails; private names never are fields (keeps copy/pickle sane)
        if name.startswith("_") or self._fields is None or name not in self._fields:
            raise AttributeError(f"Row has no field {name!r}")
        return self._values[self._fields.index(name)]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Row cannot be changed; make a new one")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("a Row cannot be changed; make a new one")

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __contains__(self, item: object) -> bool:
        return item in self._values

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Row):
            return NotImplemented
        return self._fields == other._fields and self._values == other._values

    def __hash__(self) -> int:
        return hash(("Row", self._fields, self._values))

    def __repr__(self) -> str:
        if self._fields is None:
            return f"Row({', '.join(repr(value) for value in self._values)})"
        return f"Row({', '.join(f'{name}={value!r}' for name, value in zip(self._fields, self._values, strict=True))})"

    def __reduce__(self) -> tuple[Any, tuple[tuple[str, ...] | None, tuple[Any, ...]]]:
        return _make_row, (self._fields, self._values)


def _as_plain(value: Any) -> Any:
    if isinstance(value, Row) and value._fields is not None:
        return value.as_dict(recursive=True)
    if isinstance(value, list):
        return [_as_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _as_plain(item) for key, item in value.items()}
    return value


def as_row(value: Any) -> dict[str, Any]:
    """A value as a dict of columns, as sinks write values: a dict as it is, an object with ``asDict`` or
    ``_asdict`` (a ``Row``, a named tuple) or a dataclass by its fields, a tuple or list as ``_1, _2, ...``, an
    ``ErrorRecord`` as ``ErrorRecord.as_row``, any other value as the column ``value``."""
    import dataclasses

    from panes.errors import ErrorRecord

    if isinstance(value, ErrorRecord):
        return value.as_row()
    if isinstance(value, dict):
        return dict(value)
    if hasattr(value, "asDict"):
        return dict(value.asDict())
    if hasattr(value, "_asdict"):
        return dict(value._asdict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (tuple, list)):
        return {f"_{i + 1}": item for i, item in enumerate(value)}
    return {"value": value}
