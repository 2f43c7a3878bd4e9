"""``Types`` and ``TypeInformation``: PyFlink's way to declare the type of a stream's values, as Arrow types.

``Types.ROW_NAMED(["user", "n"], [Types.STRING(), Types.LONG()])`` declares the same record as the DDL
``"user STRING, n BIGINT"``, except that its values are :class:`~panes.types.row.Row` objects instead of
dicts. The static methods are PyFlink's, with Java's widths:

====================================================  ==================================================
``Types``                                             Arrow type (Python values)
====================================================  ==================================================
``BOOLEAN()``                                         ``bool_()`` (``bool``)
``BYTE()``, ``SHORT()``, ``INT()``, ``LONG()``        ``int8()``, ``int16()``, ``int32()``, ``int64()``
``FLOAT()``, ``DOUBLE()``                             ``float32()``, ``float64()``
``CHAR()``                                            ``string()``, holding exactly one character
``STRING()``                                          ``string()``
``BIG_INT()``, ``BIG_DEC()``                          ``decimal128(38, 0)``, ``decimal128(38, 18)``
``SQL_DATE()``, ``LOCAL_DATE()``                      ``date32()`` (``datetime.date``)
``SQL_TIME()``, ``LOCAL_TIME()``                      ``time64("us")`` (``datetime.time``)
``SQL_TIMESTAMP()``, ``LOCAL_DATE_TIME()``            ``timestamp("us")``, naive ``datetime``
``INSTANT()``                                         ``timestamp("us", tz="UTC")``, aware ``datetime``
``PRIMITIVE_ARRAY(t)``                                ``list_(t)``; ``PRIMITIVE_ARRAY(BYTE())`` is ``binary()``
``BASIC_ARRAY(t)``, ``OBJECT_ARRAY(t)``, ``LIST(t)``  ``list_(t)``
``MAP(k, v)``                                         ``map_(k, v)``
``ROW(types)``, ``ROW_NAMED(names, types)``           ``struct``, fields ``f0, f1, ...`` or ``names``
``TUPLE(types)``                                      ``struct``, fields ``_1, _2, ...`` (Spark's tuples)
``PICKLED_BYTE_ARRAY()``                              no schema: values are pickled Python objects
====================================================  ==================================================

Every field, element and map value may be ``None``. Type informations are immutable, compare equal when
they describe the same type, and their ``repr`` is the ``Types`` call that makes them.
"""

# ruff: noqa: N802  (the static methods of Types keep PyFlink's names: Types.LONG(), Types.ROW_NAMED(...))

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

__all__ = ["CHAR_METADATA", "TypeInformation", "Types"]

CHAR_METADATA = {b"panes.type": b"CHAR"}
"""Arrow field metadata marking a ``string`` field that holds exactly one character (``Types.CHAR()``)."""

_BASIC: dict[str, pa.DataType] = {
    "BOOLEAN": pa.bool_(),
    "BYTE": pa.int8(),
    "SHORT": pa.int16(),
    "INT": pa.int32(),
    "LONG": pa.int64(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "CHAR": pa.string(),
    "STRING": pa.string(),
    "BIG_INT": pa.decimal128(38, 0),
    "BIG_DEC": pa.decimal128(38, 18),
    "SQL_DATE": pa.date32(),
    "SQL_TIME": pa.time64("us"),
    "SQL_TIMESTAMP": pa.timestamp("us"),
    "INSTANT": pa.timestamp("us", tz="UTC"),
    "LOCAL_DATE": pa.date32(),
    "LOCAL_TIME": pa.time64("us"),
    "LOCAL_DATE_TIME": pa.timestamp("us"),
}
_PRIMITIVE_ELEMENTS = ("BOOLEAN", "BYTE", "SHORT", "INT", "LONG", "FLOAT", "DOUBLE", "CHAR")
_BASIC_ARRAY_ELEMENTS = (*_PRIMITIVE_ELEMENTS, "STRING")


class TypeInformation(ABC):
    """The type of a stream's values (Flink's ``TypeInformation``), made by the static methods of
    :class:`Types`. :meth:`arrow_type` is the Arrow type of one value."""

    @abstractmethod
    def arrow_type(self) -> pa.DataType:
        """The Arrow type of one value of this type."""

    def arrow_field(self, name: str) -> pa.Field:
        """A nullable Arrow field ``name`` of this type (with :data:`CHAR_METADATA` for ``Types.CHAR()``)."""
        return pa.field(name, self.arrow_type())

    @abstractmethod
    def __repr__(self) -> str: ...


@dataclass(frozen=True, repr=False)
class BasicTypeInfo(TypeInformation):
    """A basic type: a number, a string, a decimal, a date or a time (``Types.LONG()``, ...)."""

    name: str

    def arrow_type(self) -> pa.DataType:
        return _BASIC[self.name]

    def arrow_field(self, name: str) -> pa.Field:
        return pa.field(name, self.arrow_type(), metadata=CHAR_METADATA if self.name == "CHAR" else None)

    def __repr__(self) -> str:
        return f"Types.{self.name}()"


@dataclass(frozen=True, repr=False)
class PickledBytesTypeInfo(TypeInformation):
    """No schema: values are arbitrary Python objects, moved pickled (a ``binary`` column)."""

    def arrow_type(self) -> pa.DataType:
        return pa.binary()

    def __repr__(self) -> str:
        return "Types.PICKLED_BYTE_ARRAY()"


@dataclass(frozen=True, repr=False)
class ArrayTypeInfo(TypeInformation):
    """A list of values of one type; ``kind`` is the ``Types`` method (``"LIST"``, ``"OBJECT_ARRAY"``, ...)."""

    kind: str
    element_type: TypeInformation

    def arrow_type(self) -> pa.DataType:
        if self.kind == "PRIMITIVE_ARRAY" and self.element_type == Types.BYTE():
            return pa.binary()  # Java's byte[] is Python's bytes, as in PyFlink
        return pa.list_(self.element_type.arrow_field("item"))

    def __repr__(self) -> str:
        return f"Types.{self.kind}({self.element_type!r})"


@dataclass(frozen=True, repr=False)
class MapTypeInfo(TypeInformation):
    """A map from keys of one type to values of another (keys are never ``None``)."""

    key_type: TypeInformation
    value_type: TypeInformation

    def arrow_type(self) -> pa.DataType:
        return pa.map_(self.key_type.arrow_field("key").with_nullable(False), self.value_type.arrow_field("value"))

    def __repr__(self) -> str:
        return f"Types.MAP({self.key_type!r}, {self.value_type!r})"


@dataclass(frozen=True, repr=False)
class RowTypeInfo(TypeInformation):
    """A row of named fields; its values are :class:`~panes.types.row.Row` objects with these names."""

    field_names: tuple[str, ...]
    field_types: tuple[TypeInformation, ...]
    named: bool = True

    def arrow_type(self) -> pa.DataType:
        return pa.struct([t.arrow_field(n) for n, t in zip(self.field_names, self.field_types, strict=True)])

    def __repr__(self) -> str:
        types = ", ".join(repr(t) for t in self.field_types)
        if self.named:
            return f"Types.ROW_NAMED({list(self.field_names)!r}, [{types}])"
        return f"Types.ROW([{types}])"


@dataclass(frozen=True, repr=False)
class TupleTypeInfo(TypeInformation):
    """A tuple of fields by position; the Arrow fields are named ``_1, _2, ...`` as Spark names tuples'."""

    field_types: tuple[TypeInformation, ...]

    def arrow_type(self) -> pa.DataType:
        return pa.struct([t.arrow_field(f"_{i + 1}") for i, t in enumerate(self.field_types)])

    def __repr__(self) -> str:
        return f"Types.TUPLE([{', '.join(repr(t) for t in self.field_types)}])"


def _part(value: object, what: str) -> TypeInformation:
    if not isinstance(value, TypeInformation):
        raise TypeError(f"{what} must be a TypeInformation (such as Types.LONG()), not {type(value).__name__}")
    if isinstance(value, PickledBytesTypeInfo):
        raise TypeError(f"{what}: PICKLED_BYTE_ARRAY describes a whole value, it cannot be part of a type")
    return value


def _parts(values: Sequence[TypeInformation], what: str) -> tuple[TypeInformation, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{what} must be a list of TypeInformation, not {type(values).__name__}")
    return tuple(_part(value, f"{what}[{i}]") for i, value in enumerate(values))


def _array(kind: str, element_type: TypeInformation, allowed: tuple[str, ...]) -> TypeInformation:
    element = _part(element_type, f"the element type of {kind}")
    if not (isinstance(element, BasicTypeInfo) and element.name in allowed):
        raise TypeError(f"{kind} takes one of {', '.join(f'Types.{n}()' for n in allowed)}, not {element!r}")
    return ArrayTypeInfo(kind, element)


class Types:
    """PyFlink's ``Types``: a static method per type (see the module docstring for the Arrow types).

    The composite ones raise ``TypeError`` when a part is not a ``TypeInformation`` or is
    ``PICKLED_BYTE_ARRAY()``, and ``ROW_NAMED`` raises ``ValueError`` when names and types differ in
    number or a name repeats.
    """

    @staticmethod
    def BOOLEAN() -> TypeInformation:
        return BasicTypeInfo("BOOLEAN")

    @staticmethod
    def BYTE() -> TypeInformation:
        return BasicTypeInfo("BYTE")

    @staticmethod
    def SHORT() -> TypeInformation:
        return BasicTypeInfo("SHORT")

    @staticmethod
    def INT() -> TypeInformation:
        return BasicTypeInfo("INT")

    @staticmethod
    def LONG() -> TypeInformation:
        return BasicTypeInfo("LONG")

    @staticmethod
    def FLOAT() -> TypeInformation:
        return BasicTypeInfo("FLOAT")

    @staticmethod
    def DOUBLE() -> TypeInformation:
        return BasicTypeInfo("DOUBLE")

    @staticmethod
    def CHAR() -> TypeInformation:
        return BasicTypeInfo("CHAR")

    @staticmethod
    def STRING() -> TypeInformation:
        return BasicTypeInfo("STRING")

    @staticmethod
    def BIG_INT() -> TypeInformation:
        return BasicTypeInfo("BIG_INT")

    @staticmethod
    def BIG_DEC() -> TypeInformation:
        return BasicTypeInfo("BIG_DEC")

    @staticmethod
    def SQL_DATE() -> TypeInformation:
        return BasicTypeInfo("SQL_DATE")

    @staticmethod
    def SQL_TIME() -> TypeInformation:
        return BasicTypeInfo("SQL_TIME")

    @staticmethod
    def SQL_TIMESTAMP() -> TypeInformation:
        return BasicTypeInfo("SQL_TIMESTAMP")

    @staticmethod
    def INSTANT() -> TypeInformation:
        return BasicTypeInfo("INSTANT")

    @staticmethod
    def LOCAL_DATE() -> TypeInformation:
        return BasicTypeInfo("LOCAL_DATE")

    @staticmethod
    def LOCAL_TIME() -> TypeInformation:
        return BasicTypeInfo("LOCAL_TIME")

    @staticmethod
    def LOCAL_DATE_TIME() -> TypeInformation:
        return BasicTypeInfo("LOCAL_DATE_TIME")

    @staticmethod
    def PICKLED_BYTE_ARRAY() -> TypeInformation:
        """No schema: values are pickled Python objects (``RecordType.of`` returns ``None`` for it)."""
        return PickledBytesTypeInfo()

    @staticmethod
    def PRIMITIVE_ARRAY(element_type: TypeInformation) -> TypeInformation:
        """An array of BOOLEAN, BYTE, SHORT, INT, LONG, FLOAT, DOUBLE or CHAR (of BYTE: ``bytes``)."""
        return _array("PRIMITIVE_ARRAY", element_type, _PRIMITIVE_ELEMENTS)

    @staticmethod
    def BASIC_ARRAY(element_type: TypeInformation) -> TypeInformation:
        """An array of a primitive type or STRING."""
        return _array("BASIC_ARRAY", element_type, _BASIC_ARRAY_ELEMENTS)

    @staticmethod
    def OBJECT_ARRAY(element_type: TypeInformation) -> TypeInformation:
        """An array of any type."""
        return ArrayTypeInfo("OBJECT_ARRAY", _part(element_type, "the element type of OBJECT_ARRAY"))

    @staticmethod
    def LIST(element_type: TypeInformation) -> TypeInformation:
        """A list of any type."""
        return ArrayTypeInfo("LIST", _part(element_type, "the element type of LIST"))

    @staticmethod
    def MAP(key_type: TypeInformation, value_type: TypeInformation) -> TypeInformation:
        """A map; keys are never ``None``, values may be."""
        return MapTypeInfo(_part(key_type, "the key type of MAP"), _part(value_type, "the value type of MAP"))

    @staticmethod
    def ROW(field_types: Sequence[TypeInformation]) -> TypeInformation:
        """A row whose fields are named ``f0, f1, ...`` (Flink's default names)."""
        types = _parts(field_types, "ROW field_types")
        return RowTypeInfo(tuple(f"f{i}" for i in range(len(types))), types, named=False)

    @staticmethod
    def ROW_NAMED(field_names: Sequence[str], field_types: Sequence[TypeInformation]) -> TypeInformation:
        """A row with the given field names and types."""
        types = _parts(field_types, "ROW_NAMED field_types")
        if isinstance(field_names, str) or not isinstance(field_names, Sequence):
            raise TypeError(f"ROW_NAMED field_names must be a list of str, not {type(field_names).__name__}")
        names = tuple(field_names)
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"ROW_NAMED field names are str, not {type(name).__name__} ({name!r})")
        if len(names) != len(types):
            raise ValueError(f"ROW_NAMED needs one type per name: {len(names)} names, {len(types)} types")
        if len(set(names)) != len(names):
            raise ValueError(f"ROW_NAMED field names must be unique: {list(names)!r}")
        return RowTypeInfo(names, types)

    @staticmethod
    def TUPLE(field_types: Sequence[TypeInformation]) -> TypeInformation:
        """A tuple; its Arrow fields are named ``_1, _2, ...``."""
        return TupleTypeInfo(_parts(field_types, "TUPLE field_types"))
