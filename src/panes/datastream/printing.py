"""How ``print()`` shows a value: as PyFlink prints it.

PyFlink's ``print()`` is Java's ``PrintSinkFunction``: a value of a declared type prints as its Java object's
``toString`` — a tuple as ``(hi,1)``, a row as ``+I[hi,1]`` (its row kind, then the fields), ``None`` as
``null``, a boolean as ``true``, a map as ``{k=1}`` — while a value without a declared type (pickled) prints as
Python's ``str``. :func:`printed` does the same from the stream's :class:`~panes.types.RecordType`. Records of
a Spark DDL string (dicts), which PyFlink has no counterpart for, print as Python's ``str``; arrays print as
``[1, 2]`` (Java prints an array's identity, which nothing can reproduce).
"""

from __future__ import annotations

import math
from typing import Any

from panes.types import RecordType, Row


def printed(value: Any, record_type: RecordType | None) -> str:
    """``value`` as PyFlink's ``print()`` shows it, for a stream of ``record_type`` (``None``: no declared type)."""
    if record_type is None or record_type.shape == "dict":
        return str(value)
    return java_text(value)


def java_text(value: Any) -> str:
    """``value`` as the ``toString`` of the Java object Flink holds for it (see the module docstring)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, Row):
        return "+I[" + ",".join(java_text(field) for field in value) + "]"
    if isinstance(value, tuple):
        return "(" + ",".join(java_text(field) for field in value) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{java_text(k)}={java_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, bytes, bytearray)):
        return "[" + ", ".join(java_text(item) for item in value) + "]"
    return str(value)


class SimpleStringEncoder:
    """PyFlink's ``Encoder.simple_string_encoder()``: a value as the line ``print()`` shows for it, in
    ``charset``. Until a stream's type is known (``typed``) a value is shown as it would be without one."""

    def __init__(self, charset: str = "UTF-8", record_type: RecordType | None = None) -> None:
        import codecs

        codecs.lookup(charset)  # LookupError for an encoding Python does not know
        self.charset = charset
        self.record_type = record_type

    def typed(self, record_type: RecordType | None) -> SimpleStringEncoder:
        """This encoder for the values of a stream of ``record_type``."""
        return SimpleStringEncoder(self.charset, record_type)

    def __call__(self, value: Any) -> str:
        return printed(value, self.record_type)
