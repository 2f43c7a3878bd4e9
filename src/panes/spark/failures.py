"""Exceptions raised in Spark's Python workers, raised again on the driver with their own type.

An exception raised where Spark runs panes code (a fused step, a keyed step, a sink writer, a
``foreachBatch`` function) reaches the driver wrapped by Spark: as a ``StreamingQueryException`` whose
first line is Spark's error class, with the Python traceback somewhere inside its text, or as a
``PythonException`` of a batch job. So that ``except BadRecordError`` (or any other exception type panes
or the user's code raises) works on Spark as on the local runner, every such entry point runs under
:func:`carrying` (or :func:`carried_iterator` for generators): an exception leaving it is raised again as
a :class:`CarriedError` whose message ends with a *marker line*, the original exception pickled and
encoded. On the driver, :func:`reraise_carried` finds the marker in Spark's exception and raises the
original exception (same type, same message) with Spark's exception as its ``__cause__``.

The exception is rebuilt from its class, ``args`` and attributes without calling its constructor; when its
attributes do not pickle, from its class and ``args`` alone.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import logging
import pickle
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec, TypeVar

from panes.errors import UserFunctionError

_MARK = "panes-error"
_PATTERN = re.compile(_MARK + r"\[([A-Za-z0-9+/=]+)\]")

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


class CarriedError(RuntimeError):
    """An exception raised in a Spark task, on its way to the driver (see the module docstring)."""


def exception_state(error: BaseException) -> bytes:
    """``error`` as bytes: its class (by value when the class lives in a script), its ``args`` and attributes,
    pickled with cloudpickle (as Spark pickles functions); :func:`rebuilt_exception` makes it again."""
    from pyspark import cloudpickle

    state = (type(error), error.args, dict(vars(error)))
    try:
        blob: bytes = cloudpickle.dumps(state)  # type: ignore[no-untyped-call]
        _rebuilt(pickle.loads(blob))
    except Exception:  # attributes that do not pickle: the type and message still travel
        blob = cloudpickle.dumps((type(error), error.args, {}))  # type: ignore[no-untyped-call]
    return blob


def rebuilt_exception(blob: bytes) -> BaseException:
    """The exception of an :func:`exception_state`."""
    return _rebuilt(pickle.loads(blob))


def _marker(error: BaseException) -> str:
    """The marker line carrying ``error`` (its :func:`exception_state`, base64-encoded)."""
    return f"{_MARK}[{base64.b64encode(exception_state(error)).decode()}]"


def _rebuilt(state: tuple[type[BaseException], tuple[object, ...], dict[str, object]]) -> BaseException:
    """The exception of a marker, made without calling its constructor (which may take other arguments)."""
    kind, args, attributes = state
    error = kind.__new__(kind, *args)
    error.args = args
    vars(error).update(attributes)
    return error


def _carries(error: BaseException) -> bool:
    return any(_PATTERN.search(text) for text in _texts(error))


def _carried(error: Exception) -> Exception:
    """``error`` as it leaves a panes entry point: itself when it already carries one (a Spark exception of a
    job that panes code ran), else a :class:`CarriedError` with the marker line."""
    if _carries(error):
        return error
    return CarriedError(f"{type(error).__name__}: {error}\n{_marker(error)}")


def carrying(function: Callable[P, R]) -> Callable[P, R]:
    """``function``, whose exceptions leave as :class:`CarriedError` (with the original as ``__cause__``)."""

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        except Exception as error:
            carrier = _carried(error)
            if carrier is error:
                raise
            raise carrier from error

    return call


def carrying_iterators(function: Callable[P, Iterator[T]]) -> Callable[P, Iterator[T]]:
    """``function`` returning an iterator (a generator function, say), whose exceptions while it is iterated
    leave as :class:`CarriedError`."""

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
        return carried_iterator(function(*args, **kwargs))

    return call


def carried_iterator(items: Iterator[T]) -> Iterator[T]:
    """``items``, whose exceptions while iterating leave as :class:`CarriedError`."""
    try:
        yield from items
    except Exception as error:
        carrier = _carried(error)
        if carrier is error:
            raise
        raise carrier from error


def _texts(error: BaseException) -> Iterator[str]:
    """The texts of ``error`` and of what it wraps, where a marker may be (Spark's and Py4J's exceptions
    keep the Python worker's traceback in their message or description)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield str(current)
        for name in ("desc", "_desc", "java_exception"):
            value = getattr(current, name, None)
            if value is not None:
                yield str(value)
        current = current.__cause__ or current.__context__


def carried(error: BaseException) -> BaseException | None:
    """The exception a panes entry point carried inside ``error`` (the first one raised), or ``None``."""
    for text in _texts(error):
        found = _PATTERN.search(text)
        if found is not None:
            try:
                return _rebuilt(pickle.loads(base64.b64decode(found.group(1))))
            except Exception:  # not ours after all, or from another version: leave Spark's exception as it is
                return None
    return None


class _InterruptedCalls(logging.Filter):
    """Drops Py4J's report of a call into the JVM that an interruption (Ctrl-C, SIGTERM) broke off: Py4J logs it
    with its traceback on the root logger, while the interruption itself reaches the caller anyway."""

    def filter(self, record: logging.LogRecord) -> bool:
        broken_off = record.getMessage().endswith("while sending command.")  # "Exception", "KeyboardInterrupt"
        return not (broken_off and "py4j" in record.pathname)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """While the block runs (a driver waiting for a query): Ctrl-C raises ``KeyboardInterrupt`` at once (Python's
    own handler, in the main thread, instead of pyspark's, which calls into the JVM from inside the signal
    handler and can turn the interruption into a Py4J error), and an interrupted call into the JVM prints no
    Py4J traceback; everything else is logged as before. See :func:`was_interrupted`."""
    quiet = _InterruptedCalls()
    root = logging.getLogger()
    root.addFilter(quiet)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler) if main else None
    servers = _accumulator_servers()
    handlers = [server.__dict__.get("handle_error") for server in servers]
    for server in servers:
        server.handle_error = _quiet_broken_connection(server.handle_error)
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        root.removeFilter(quiet)
        for server, handler in zip(servers, handlers, strict=True):
            if handler is None:
                del server.handle_error  # inherited again
            else:
                server.handle_error = handler


def _accumulator_servers() -> list[Any]:
    """pyspark's accumulator server classes (a socket server in the driver), whose ``handle_error`` prints a
    traceback when an interruption breaks a connection off."""
    try:
        from pyspark import accumulators
    except ImportError:
        return []
    return [
        getattr(accumulators, name)
        for name in ("AccumulatorTCPServer", "AccumulatorUnixServer")
        if hasattr(accumulators, name)
    ]


def _quiet_broken_connection(handle_error: Callable[..., None]) -> Callable[..., None]:
    """``handle_error`` of a socket server, silent for a connection an interruption broke off (``EOFError``,
    ``ConnectionError``), as it is for the interruption itself."""

    def handle(*args: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, (EOFError, ConnectionError)):
            return
        handle_error(*args)

    return handle


def was_interrupted(error: BaseException) -> bool:
    """Whether ``error`` is, or was caused by, an interruption (a ``KeyboardInterrupt`` that broke a call into the
    JVM surfaces as a Py4J error)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


class PythonWorkerStartError(RuntimeError):
    """Spark could not start a Python worker in time (``Python worker failed to connect back``)."""


def known_failure(error: BaseException) -> BaseException | None:
    """A panes error saying what happened and what to change, for a Spark failure whose cause is known;
    ``None`` for others.

    - ``Python worker failed to connect back``: a Python process Spark started (the source of explicit
      micro-batches, a ``foreachBatch`` sink's, a worker without Spark's daemon) did not connect back within the
      10 s Spark 4 allows (fixed in ``PythonWorkerFactory``, no setting changes it): the machine was too busy."""
    if any("Python worker failed to connect back" in text for text in _texts(error)):
        return PythonWorkerStartError(
            "Spark could not start a Python worker in time: it did not connect back to Spark within the 10 s Spark "
            "allows (a fixed limit), because the machine was too busy. Run the job again when the machine is less "
            "loaded, or give Spark fewer task slots (a smaller local[N], or spark.executor.cores); a job with a "
            "checkpoint_location (panes run --checkpoint) continues where it stopped"
        )
    return None


def reraise_carried(action: Callable[[], T]) -> T:
    """Run ``action`` (a call into Spark); an exception carrying one from a panes entry point is replaced by
    that exception, with Spark's as its ``__cause__`` (a ``UserFunctionError`` keeps the user's exception as its
    ``__cause__``, as on the local runner, and Spark's as its ``__context__``); a Spark failure of a known cause
    (:func:`known_failure`) by the panes error that explains it."""
    try:
        return action()
    except Exception as error:
        original = carried(error) or known_failure(error)
        if original is None:
            raise
        if isinstance(original, UserFunctionError):
            original.__cause__ = original.cause
            original.__context__ = error
            raise original  # noqa: B904 (its __cause__ is the user's exception)
        raise original from error


def with_carried(function: Callable[P, R]) -> Callable[P, R]:
    """A method or function calling into Spark, raising carried exceptions as :func:`reraise_carried` does."""

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        return reraise_carried(lambda: function(*args, **kwargs))

    return call
