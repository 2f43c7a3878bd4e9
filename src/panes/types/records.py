"""``RecordType``: how the values of a stream map to an Arrow column, and back.

A record type is an Arrow type and a *shape*, the Python form of its values:

* ``"dict"``: a struct whose values are ``dict`` (declared with a DDL string, a pyarrow schema or struct);
* ``"row"``: a struct whose values are named :class:`~panes.types.row.Row` (``Types.ROW``, ``ROW_NAMED``);
* ``"tuple"``: a struct whose values are ``tuple`` (``Types.TUPLE``; fields ``_1, _2, ...``);
* ``"scalar"``: any other type, whose values are themselves (``Types.LONG()``, ``pa.list_(pa.string())``).

A runner moves a stream of a record type as typed columns: :meth:`RecordType.conform` checks each value
where it enters the stream (a value that does not fit raises :class:`SchemaMismatchError`, a bad record),
:meth:`RecordType.encode` makes the Arrow array and :meth:`RecordType.decode` gives the values back, equal
to what ``conform`` returned. Arrow types are kept in the form of their Spark type (see
:func:`~panes.types.ddl.normalize_type`): a pyarrow ``large_string`` is declared as ``string``, a timestamp
in any unit and zone as ``timestamp("us", tz="UTC")`` and so on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Literal, cast

import pyarrow as pa

from panes.types.conform import compile_conformer
from panes.types.ddl import normalize_type, parse_ddl, to_ddl
from panes.types.errors import SchemaInferenceError, SchemaMismatchError
from panes.types.inference import infer
from panes.types.row import _make_row
from panes.types.typeinfo import PickledBytesTypeInfo, RowTypeInfo, TupleTypeInfo, TypeInformation

__all__ = ["RecordType", "SchemaInferenceError", "SchemaMismatchError", "Shape", "infer_record_type"]

Shape = Literal["dict", "row", "tuple", "scalar"]
_SHAPES = ("dict", "row", "tuple", "scalar")


class RecordType:
    """The Arrow type and shape of a stream's values (see the module docstring).

    ``RecordType(arrow_type, shape=None)`` takes a ``pa.DataType`` (or a ``pa.Field``, whose metadata is
    kept and whose name and nullability are not) and a shape; without one, a struct is ``"dict"`` and any
    other type ``"scalar"``. :meth:`of` builds one from what users declare. Raises ``ValueError`` for an
    unknown shape or one that does not go with the type (``"dict"``, ``"row"`` and ``"tuple"`` are
    structs, ``"scalar"`` is not), and ``TypeError`` for a type panes cannot move: one with no Spark
    equivalent, a struct with a repeated field name, or a map whose keys are structs, lists or maps.

    Record types are immutable, hashable, picklable and equal when their shapes and types (with field
    nullability and metadata) are.
    """

    __slots__ = ("_conform", "_root", "arrow_type", "shape")

    arrow_type: pa.DataType
    shape: Shape
    _root: pa.Field
    _conform: Any

    def __init__(self, arrow_type: pa.DataType | pa.Field, shape: Shape | None = None) -> None:
        field = arrow_type if isinstance(arrow_type, pa.Field) else None
        data_type = field.type if field is not None else arrow_type
        if not isinstance(data_type, pa.DataType):
            raise TypeError(f"RecordType takes a pyarrow DataType or Field, not {type(arrow_type).__name__}")
        try:
            data_type = normalize_type(data_type)
        except ValueError as error:
            raise TypeError(f"panes cannot move this type: {error}") from None
        _check_movable(data_type, "the record")
        is_struct = pa.types.is_struct(data_type)
        if shape is None:
            shape = "dict" if is_struct else "scalar"
        if shape not in _SHAPES:
            raise ValueError(f"shape must be one of {', '.join(_SHAPES)}, not {shape!r}")
        if is_struct == (shape == "scalar"):
            raise ValueError(
                f"shape {shape!r} does not go with {data_type}: only a struct has dict, row or tuple shape"
            )
        metadata = field.metadata if field is not None and not is_struct else None
        root = pa.field("value", data_type, nullable=shape == "scalar", metadata=metadata)
        object.__setattr__(self, "arrow_type", data_type)
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "_root", root)
        object.__setattr__(self, "_conform", None)  # compiled at the first conform (many types never conform)

    @staticmethod
    def of(declared: object) -> RecordType | None:
        """The record type of what a user declared, or ``None`` for ``Types.PICKLED_BYTE_ARRAY()``.

        ``declared`` is a :class:`TypeInformation` (``ROW``/``ROW_NAMED`` have shape ``"row"``, ``TUPLE``
        ``"tuple"``, the others ``"scalar"``), a Spark DDL column list such as ``"user STRING, n BIGINT"``
        (shape ``"dict"``; a single type such as ``"BIGINT"`` is not a column list, declare it with
        ``Types.LONG()`` or ``pa.int64()``), a ``pa.Schema`` (shape ``"dict"``), a ``pa.DataType``
        (``"dict"`` for a struct, else ``"scalar"``) or a ``RecordType`` (returned as it is).

        Raises ``ValueError`` for a malformed DDL string and ``TypeError`` for anything else, or for a type
        panes cannot move (see the class docstring).
        """
        if isinstance(declared, RecordType):
            return declared
        if isinstance(declared, PickledBytesTypeInfo):
            return None
        if isinstance(declared, RowTypeInfo):
            return RecordType(declared.arrow_type(), "row")
        if isinstance(declared, TupleTypeInfo):
            return RecordType(declared.arrow_type(), "tuple")
        if isinstance(declared, TypeInformation):
            return RecordType(declared.arrow_field("value"), "scalar")
        if isinstance(declared, str):
            return RecordType(pa.struct(list(_parse_columns(declared))), "dict")
        if isinstance(declared, pa.Schema):
            return RecordType(pa.struct(list(declared)), "dict")
        if isinstance(declared, pa.DataType):
            return RecordType(declared)
        raise TypeError(
            f"cannot use {type(declared).__name__} ({declared!r}) as a record type: declare it with Types "
            "(Types.ROW_NAMED(['user', 'n'], [Types.STRING(), Types.LONG()])), a Spark DDL column list "
            "('user STRING, n BIGINT'), a pyarrow Schema or DataType, or a RecordType"
        )

    def columns(self) -> pa.Schema:
        """The Arrow schema of the columns: the struct's fields, or one nullable field ``value``."""
        if self.shape == "scalar":
            return pa.schema([self._root])
        return pa.schema([self.arrow_type.field(i) for i in range(self.arrow_type.num_fields)])

    def ddl(self) -> str:
        """The Spark DDL column list of :meth:`columns`, such as ``"user STRING, n BIGINT"``."""
        return to_ddl(self.columns())

    def conform(self, value: Any) -> Any:
        """``value`` in its canonical form, which equals ``decode(encode([value]))[0]``.

        Raises :class:`SchemaMismatchError` when the value does not fit, naming the field, the expected
        type in Spark DDL spelling and the value with its Python type (the rules are in
        :mod:`panes.types.conform`). Conforming a canonical value returns an equal value.
        """
        return self.conformer()(value)

    def conformer(self) -> Callable[[Any], Any]:
        """The function :meth:`conform` applies (compiled at the first use), for callers that conform many
        values."""
        conform = self._conform
        if conform is None:
            conform = compile_conformer(self._root, self.shape)
            object.__setattr__(self, "_conform", conform)
        return cast("Callable[[Any], Any]", conform)

    def encode(self, values: Sequence[Any]) -> pa.Array:
        """An Arrow array of :attr:`arrow_type` holding ``values``, which must be canonical (as
        :meth:`conform` returns them) or ``None`` (a null entry: runners put rows of several streams in one
        batch); others may raise pyarrow's errors or be converted loosely."""
        if self.shape == "row":
            values = [None if value is None else tuple(value) for value in values]
        return pa.array(values, type=self.arrow_type)

    def decode(self, array: pa.Array | pa.ChunkedArray) -> list[Any]:
        """The canonical Python values of ``array``, in the shape of this record type.

        An array of another Arrow type is first cast to :attr:`arrow_type` (for example a timestamp in
        another time zone, or a ``large_string``); raises ``TypeError`` when it cannot be.
        """
        if not isinstance(array, (pa.Array, pa.ChunkedArray)):
            raise TypeError(f"decode takes a pyarrow Array or ChunkedArray, not {type(array).__name__}")
        if array.type != self.arrow_type:
            array = self._cast(array)
        if self.shape == "scalar":
            return _pylist(array)
        names = tuple(self.arrow_type.field(i).name for i in range(self.arrow_type.num_fields))
        if array.null_count or not names:  # rare: a record that is null, or one without fields
            return [None if item is None else self._shaped(names, tuple(item.values())) for item in _pylist(array)]
        columns = [_pylist(column) for column in array.flatten()]
        if self.shape == "dict":
            return list(map(_dict_maker(names), *columns))
        return [self._shaped(names, values) for values in zip(*columns, strict=True)]

    def _cast(self, array: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
        """``array`` as :attr:`arrow_type`, when its type is another Arrow form of the same Spark type
        (pyarrow's own cast would also fill missing struct fields with nulls)."""
        try:
            same = _plain(normalize_type(array.type)) == _plain(self.arrow_type)
            if same:
                return array.cast(self.arrow_type)
            why = "another type"
        except (ValueError, pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
            why = str(error)
        raise TypeError(f"cannot decode an array of {array.type} as {self!r}: {why}")

    def _shaped(self, names: tuple[str, ...], values: tuple[Any, ...]) -> Any:
        if self.shape == "row":
            return _make_row(names, values)
        if self.shape == "tuple":
            return values
        return dict(zip(names, values, strict=True))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a RecordType cannot be changed")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RecordType):
            return NotImplemented
        return self.shape == other.shape and bool(self._root.equals(other._root, check_metadata=True))

    def __hash__(self) -> int:
        return hash((self.shape, str(self.arrow_type)))

    def __repr__(self) -> str:
        if self.shape == "scalar":
            return f"RecordType(scalar: {to_ddl(self.arrow_type)})"
        return f"RecordType({self.shape}: {self.ddl()})"

    def __reduce__(self) -> tuple[Any, tuple[pa.Field, Shape]]:
        return RecordType, (self._root, self.shape)


def _plain(t: pa.DataType) -> pa.DataType:
    """``t`` with every field nullable and without metadata (keys stay not nullable)."""
    if pa.types.is_struct(t):
        return pa.struct([pa.field(t.field(i).name, _plain(t.field(i).type)) for i in range(t.num_fields)])
    if pa.types.is_list(t):
        return pa.list_(_plain(t.value_type))
    if pa.types.is_map(t):
        return pa.map_(_plain(t.key_type), _plain(t.item_type))
    return t


@functools.lru_cache(maxsize=256)
def _dict_maker(names: tuple[str, ...]) -> Callable[..., dict[str, Any]]:
    """A function of one value per name that returns them as a dict in that order (compiled for ``names``:
    what ``dict(zip(names, values))`` gives, at a fraction of the cost per record)."""
    arguments = ", ".join(f"v{index}" for index in range(len(names)))
    entries = ", ".join(f"{name!r}: v{index}" for index, name in enumerate(names))
    namespace: dict[str, Any] = {}
    exec(f"def make({arguments}):\n    return {{{entries}}}", namespace)
    return cast(Callable[..., dict[str, Any]], namespace["make"])


def _pylist(array: pa.Array | pa.ChunkedArray) -> list[Any]:
    return cast(list[Any], array.to_pylist(maps_as_pydicts="strict"))


def _parse_columns(text: str) -> pa.Schema:
    try:
        return parse_ddl(text)
    except ValueError:
        try:
            parse_ddl(f"value {text}")
        except ValueError:
            raise
        raise ValueError(
            f"{text!r} is a single type, but a DDL string declares a column list such as 'value {text}'; "
            "declare a single type with Types (Types.LONG(), ...) or pyarrow (pa.int64(), ...)"
        ) from None


def _check_movable(t: pa.DataType, where: str) -> None:
    """Refuse what conform cannot handle: repeated struct field names, map keys that are not scalars."""
    if pa.types.is_struct(t):
        names = [t.field(i).name for i in range(t.num_fields)]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise TypeError(f"{where} repeats the field name(s) {', '.join(map(repr, repeated))}")
        for i in range(t.num_fields):
            _check_movable(t.field(i).type, f"field {t.field(i).name!r}")
    elif pa.types.is_list(t):
        _check_movable(t.value_type, f"the elements of {where}")
    elif pa.types.is_map(t):
        if pa.types.is_nested(t.key_type):
            raise TypeError(f"the keys of {where} are {t.key_type}: map keys must be scalars (dict keys in Python)")
        _check_movable(t.item_type, f"the values of {where}")


def infer_record_type(values: Sequence[Any]) -> RecordType:
    """The record type of ``values``, which the first value decides (see :mod:`panes.types.inference`).

    Raises :class:`SchemaInferenceError` when there are no values, when a part is ``None`` (or empty) in
    every value, or for a value of a Python type with no Arrow equivalent.
    """
    arrow_type, shape = infer(values)
    return RecordType(arrow_type, cast(Shape, shape))
