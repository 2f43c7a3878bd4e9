"""What the JSON and CSV row schemas share: the declared row type, and one parsed row as a value of it."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from panes.types import RecordType


def row_record_type(type_info: Any, schema_name: str) -> RecordType:
    """``type_info`` (``Types.ROW_NAMED(...)``, a Spark DDL string, a pyarrow schema) as a record type of rows;
    naming ``schema_name``, ``TypeError`` when it is missing (as PyFlink) and ``ValueError`` when it is not a row
    of named fields."""
    if type_info is None:
        raise TypeError(f"{schema_name} needs the row type: give Types.ROW_NAMED([...names], [...types])")
    found = RecordType.of(type_info)
    if found is None or not pa.types.is_struct(found.arrow_type):
        raise ValueError(
            f"{schema_name} reads and writes rows of named fields: give Types.ROW_NAMED([...names], [...types]) "
            f"(or a Spark DDL string such as 'user STRING, n BIGINT'), not {type_info!r}"
        )
    return found


def value_of(record_type: RecordType, table: pa.Table) -> Any:
    """The one row of ``table`` (columns of ``record_type``) as a value of ``record_type`` (its shape: a
    ``Row`` for ``Types.ROW_NAMED``, a ``dict`` for a DDL string)."""
    struct = pa.StructArray.from_arrays(
        [column.combine_chunks() for column in table.columns], fields=list(record_type.columns())
    )
    return record_type.decode(struct)[0]


def as_mapping(record_type: RecordType, element: Any) -> dict[str, Any]:
    """``element`` conformed to ``record_type`` (``SchemaMismatchError`` when it does not fit), as field name ->
    value."""
    conformed = record_type.conform(element)
    names = record_type.columns().names
    if isinstance(conformed, dict):
        return {name: conformed.get(name) for name in names}
    if hasattr(conformed, "as_dict"):
        return dict(conformed.as_dict())
    return dict(zip(names, tuple(conformed), strict=True))
