"""Exceptions panes raises where Flink raises its own."""

from __future__ import annotations


class UnsupportedOperationError(RuntimeError):
    """An operation Flink refuses at runtime (Flink's ``UnsupportedOperationException``)."""
