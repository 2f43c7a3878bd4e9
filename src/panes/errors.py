"""Exceptions panes raises where Flink raises its own, and how bad records and failing user functions are
reported.

A *bad record* is an input element an operator cannot process because of the element itself (no
timestamp for an event-time window, a timestamp or key that cannot be extracted, a null key, which Flink
refuses, an invalid dynamic session gap): a :class:`BadRecordError`, whose message says what to change.

A *failing user function* is user code that raised while an operator ran it: a map, flat_map, filter or
process function, a key selector, a window function (reduce, aggregate, process), a trigger, an
``on_timer``. The operator reports it as a :class:`UserFunctionError` naming the operator and, where there is
one, the key and the window, the user's exception as its ``__cause__``.

Both follow one rule, on every runner. When the step has an error side output (``side_output_errors(tag)``),
the element goes there as an :class:`ErrorRecord` with the reason and processing continues: nothing is
dropped silently. (A failure while firing a timer — a window function evaluated when the watermark passes
the window, an ``on_timer`` — has no element: its ``ErrorRecord`` carries ``value=None``, the key, the window
and the timer's time; the pane is cleaned up as if it had fired.) Otherwise the job fails with that
exception. What the failing call changed before it raised stays (an element a trigger refused is already in
its pane). An exception leaving a step is *located* (its ``operator`` is set); every other step it passes on
its way out (the local runner pushes each element through the whole graph) lets it through unchanged, so a
failure is reported once, by the step where it happened. ``UnsupportedOperationError`` (what Flink refuses at
runtime, such as timers on a non-keyed stream) always fails the job.

An :class:`IncompatibleCheckpointError` refuses a restart: the job was changed in a way the state kept in its
checkpoint (or local snapshot) does not fit, or the checkpoint was written by a panes whose state format
differs (see ``panes.datastream.fingerprint``).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any


class UnsupportedOperationError(RuntimeError):
    """An operation Flink refuses at runtime (Flink's ``UnsupportedOperationException``)."""


RESTART_ADVICE = (
    "To run the changed job, start it from a new checkpoint directory (its state starts empty); to continue "
    "from this checkpoint, restore the previous version of the job (and of panes)."
)
"""What an :class:`IncompatibleCheckpointError` tells the user to do."""


class IncompatibleCheckpointError(UnsupportedOperationError):
    """A restart refused because the checkpoint's state does not fit the job (Flink refuses such a restore).

    ``operator`` is the uid of the first operator that changed (``None`` when the whole checkpoint is
    refused, e.g. another state format); ``changes`` lists ``(operator uid or None, what, old, new)``. The
    message names each operator, what changed (old and new) and what to do.
    """

    def __init__(
        self, message: str, operator: str | None = None, changes: tuple[tuple[str | None, str, str, str], ...] = ()
    ) -> None:
        super().__init__(message)
        self.operator = operator
        self.changes = changes


class BadRecordError(ValueError):
    """An element cannot be processed because of its content (see the module docstring). ``operator`` names
    the step that reported it (``None`` until one did)."""

    operator: str | None = None


class UserFunctionError(RuntimeError):
    """User code raised ``cause`` while the step ``operator`` ran it (see the module docstring).

    ``function`` says which function when the caller knows (``"key selector <lambda>"``), ``key`` and
    ``window`` what the step was working on (``None`` when there is none). The message's first line names
    the step, the key and the window, then the user's exception; the second says what to change.
    ``__cause__`` is ``cause``. ``operator`` is ``None`` until a step reports it (see :func:`located`).
    """

    def __init__(
        self,
        cause: BaseException,
        *,
        operator: str | None = None,
        function: str | None = None,
        key: Any = None,
        window: Any = None,
    ) -> None:
        super().__init__(cause)
        self.cause = cause
        self.__cause__ = cause
        self.operator = operator
        self.function = function
        self.key = key
        self.window = window

    @property
    def reason(self) -> str:
        """What raised what: ``"ZeroDivisionError: division by zero"``, prefixed with the function when known."""
        raised = f"{type(self.cause).__name__}: {self.cause}"
        return raised if self.function is None else f"{self.function} raised {raised}"

    def __str__(self) -> str:
        where = self.operator or "a step"
        failed = "failed" if self.key is None else f"failed for key {self.key!r}"
        if self.window is not None:
            failed += f" in window {self.window!r}"
        return (
            f"{where} {failed}: {self.reason}\n"
            "Fix the function, or set side_output_errors(tag) on this step to send what fails to an error side "
            "output as ErrorRecords and go on."
        )

    def __reduce__(self) -> Any:
        return _rebuild_user_function_error, (self.cause, self.operator, self.function, self.key, self.window)


def _rebuild_user_function_error(
    cause: BaseException, operator: str | None, function: str | None, key: Any, window: Any
) -> UserFunctionError:
    return UserFunctionError(cause, operator=operator, function=function, key=key, window=window)


def is_reported(error: BaseException) -> bool:
    """Whether ``error`` must fail the job as it is: Flink's runtime refusals, and failures a step already
    reported (located)."""
    return isinstance(error, UnsupportedOperationError) or getattr(error, "operator", None) is not None


def located(error: Exception, operator: str, key: Any = None, window: Any = None) -> Exception:
    """``error`` as it leaves step ``operator``: a bad record or a user function error gets ``operator`` set
    (when no step did yet); any other exception (user code that raised) becomes a :class:`UserFunctionError`
    with ``key`` and ``window``. Errors :func:`is_reported` are returned unchanged."""
    if is_reported(error):
        return error
    if isinstance(error, (BadRecordError, UserFunctionError)):
        error.operator = operator
        return error
    return UserFunctionError(error, operator=operator, key=key, window=window)


ERROR_RECORD_DDL = (
    "value STRING, timestamp BIGINT, reason STRING, error_type STRING, operator STRING, key STRING, window STRING"
)
"""The columns an error output has in a file sink or a DataFrame, whatever the records it refused
(:meth:`ErrorRecord.as_row`)."""


def _json_text(value: Any) -> str | None:
    import json

    return None if value is None else json.dumps(value, default=str, ensure_ascii=False)


_INSTANCE = re.compile(r" \((?:shard )?\d+/\d+\)$")
"""The instance a runner appends to a step's name in its messages: ``" (2/4)"`` (the local runner, a sink's
writer), ``" (shard 1/4)"`` (a keyed step's shard on Spark)."""


def step_name(operator: str) -> str:
    """``operator`` (a step's name as a runner's messages give it) without the instance: the step as the plan names
    it, the same on every runner."""
    return _INSTANCE.sub("", operator)


@dataclass(frozen=True)
class ErrorRecord:
    """An element on an error side output: the element (``None`` for a failure while firing a timer), its
    timestamp (``None`` if none), why it was refused, the type of the error (the user's exception's for a
    failing user function), the step that refused it, and the key and window the operator was working on
    (``None`` when there is none).

    ``operator`` is the step as the plan names it (``"Timestamps/Watermarks"``, ``"Window(Reduce)"``, a name given
    with ``.name(...)``, ``"Sink: JdbcSink"``), the same on every runner: an instance given at construction
    (``"Map (1/2)"``, ``"Window(Reduce) (shard 0/4)"``) is dropped (:func:`step_name`), since runners number
    their instances differently. The ``reason`` may name the instance."""

    value: Any
    timestamp: int | None
    reason: str
    error_type: str
    operator: str
    key: Any = None
    window: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "operator", step_name(self.operator))

    def as_row(self) -> dict[str, Any]:
        """The record as a row of :data:`ERROR_RECORD_DDL` (what file sinks and DataFrames hold): the value, the
        key and the window as JSON text (values JSON has no form for, as their ``str``), the rest as they are."""
        return {
            "value": _json_text(self.value),
            "timestamp": self.timestamp,
            "reason": self.reason,
            "error_type": self.error_type,
            "operator": self.operator,
            "key": _json_text(self.key),
            "window": None if self.window is None else str(self.window),
        }

    @staticmethod
    def of(error: Exception, value: Any, timestamp: int | None) -> ErrorRecord:
        """The record of ``value`` refused with ``error`` (a :func:`located` bad record or user function error)."""
        operator = getattr(error, "operator", None) or ""
        if isinstance(error, UserFunctionError):
            kind = type(error.cause).__name__
            return ErrorRecord(value, timestamp, error.reason, kind, operator, error.key, error.window)
        said = str(error).split("\n", 1)[0]  # the reason; a line after it says what to change
        reason = said if error.__cause__ is None else f"{said} ({error.__cause__!r})"
        return ErrorRecord(value, timestamp, reason, type(error).__name__, operator)


class BadInput(ABC):
    """What a source yields in place of an element it could not read (a line of a file that is not a row of its
    schema, a Kafka record its deserializer refused): runners send :meth:`record` to the source's error output
    (``side_output_errors``), or fail the job with :meth:`error` when it has none."""

    @abstractmethod
    def error(self, operator: str) -> BadRecordError:
        """The error that fails a job whose source ``operator`` has no error output; its message names what could
        not be read and says what to change."""

    @abstractmethod
    def record(self, operator: str) -> ErrorRecord:
        """The input on the error output of source ``operator``."""
