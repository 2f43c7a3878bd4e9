"""Record types: how the values of a stream map to Arrow columns, and how users declare them.

A stream whose values have a known type can be moved by a runner as typed Arrow columns instead of
pickled Python objects. Users declare the type with PyFlink's :class:`Types`
(``Types.ROW_NAMED(["user", "n"], [Types.STRING(), Types.LONG()])``), a Spark DDL column list
(``"user STRING, n BIGINT"``) or pyarrow; :meth:`RecordType.of` turns any of them into a
:class:`RecordType`, and :func:`infer_record_type` infers one from the values. A record type checks values
(:meth:`RecordType.conform`, raising :class:`SchemaMismatchError`), encodes them into an Arrow array and
decodes them back unchanged.

This package is part of the core: it imports only the standard library, numpy and pyarrow.
"""

from panes.types.ddl import parse_ddl, to_ddl
from panes.types.errors import SchemaInferenceError, SchemaMismatchError
from panes.types.records import RecordType, infer_record_type
from panes.types.row import Row
from panes.types.typeinfo import TypeInformation, Types

__all__ = [
    "RecordType",
    "Row",
    "SchemaInferenceError",
    "SchemaMismatchError",
    "TypeInformation",
    "Types",
    "infer_record_type",
    "parse_ddl",
    "to_ddl",
]
