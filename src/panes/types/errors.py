"""What goes wrong with record types: a value that does not fit its type, a type that cannot be inferred."""

from __future__ import annotations

from panes.errors import BadRecordError


class SchemaMismatchError(BadRecordError):
    """A value does not fit its record type.

    The message names where (``field 'a.b'``, ``value[2]`` or ``value``), the expected type in Spark DDL
    spelling and the value with its Python type, for example ``field 'a': 1.5 (float) does not fit
    BIGINT``. It is a :class:`~panes.errors.BadRecordError`, so an operator with an error side output
    routes the record there instead of failing the job.
    """


class SchemaInferenceError(ValueError):
    """No record type can be inferred from the values: a part is ``None`` (or an empty list or map) in
    every value, or a value has a Python type with no Arrow equivalent. The message names the part and
    says to declare a schema."""
