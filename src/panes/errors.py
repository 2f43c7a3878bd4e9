"""Exceptions panes raises where Flink raises its own, and how bad records are reported.

A *bad record* is an input element an operator cannot process because of the element itself (no
timestamp for an event-time window, a timestamp or key that cannot be extracted, a null key, which Flink
refuses, an invalid dynamic session gap). By default it fails the job, with a message that says what to
change. When the transformation has an error side output (``side_output_errors(tag)``), the record goes
there instead as an :class:`ErrorRecord` with the reason, and processing continues: nothing is dropped
silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class UnsupportedOperationError(RuntimeError):
    """An operation Flink refuses at runtime (Flink's ``UnsupportedOperationException``)."""


class BadRecordError(ValueError):
    """An element cannot be processed because of its content (see the module docstring)."""


@dataclass(frozen=True)
class ErrorRecord:
    """A bad record on an error side output: the element, its timestamp (``None`` if none), why it was
    refused, and by which operator instance."""

    value: Any
    timestamp: int | None
    reason: str
    error_type: str
    operator: str
