"""Functions of the DataStream API (Flink's names, PyFlink's method names).

Functions that produce results return (or ``yield``) an iterable; ``None`` means no result. A yielded
``(OutputTag, value)`` pair goes to that side output (PyFlink's convention); ``ctx.output(tag, value)``
does the same (Java's). One-method interfaces accept plain callables (``as_*`` helpers).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any, Generic, TypeAlias, TypeVar

from panes.functions.base import Function
from panes.tags import OutputTag

IN = TypeVar("IN")
IN1 = TypeVar("IN1")
IN2 = TypeVar("IN2")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")


class MapFunction(Function, Generic[IN, OUT]):
    @abstractmethod
    def map(self, value: IN) -> OUT: ...


class FlatMapFunction(Function, Generic[IN, OUT]):
    @abstractmethod
    def flat_map(self, value: IN) -> Iterable[OUT] | None: ...


class FilterFunction(Function, Generic[IN]):
    @abstractmethod
    def filter(self, value: IN) -> bool: ...


class KeySelector(Function, Generic[IN, KEY]):
    @abstractmethod
    def get_key(self, value: IN) -> KEY: ...


class Partitioner(Function, Generic[KEY]):
    """``partition_custom``'s partitioner (PyFlink's ``Partitioner``): ``partition(key, num_partitions)`` is the
    instance in ``[0, num_partitions)`` an element with ``key`` goes to."""

    @abstractmethod
    def partition(self, key: KEY, num_partitions: int) -> int: ...


class CoMapFunction(Function, Generic[IN1, IN2, OUT]):
    @abstractmethod
    def map1(self, value: IN1) -> OUT: ...

    @abstractmethod
    def map2(self, value: IN2) -> OUT: ...


class CoFlatMapFunction(Function, Generic[IN1, IN2, OUT]):
    @abstractmethod
    def flat_map1(self, value: IN1) -> Iterable[OUT] | None: ...

    @abstractmethod
    def flat_map2(self, value: IN2) -> Iterable[OUT] | None: ...


class TimeDomain(Enum):
    """Which clock fired a timer."""

    EVENT_TIME = "EVENT_TIME"
    PROCESSING_TIME = "PROCESSING_TIME"


class TimerService(ABC):
    """Time and timers of the current key (keyed functions only; other functions can read time)."""

    @abstractmethod
    def current_processing_time(self) -> int: ...

    @abstractmethod
    def current_watermark(self) -> int: ...

    @abstractmethod
    def register_processing_time_timer(self, timestamp: int) -> None: ...

    @abstractmethod
    def register_event_time_timer(self, timestamp: int) -> None: ...

    @abstractmethod
    def delete_processing_time_timer(self, timestamp: int) -> None: ...

    @abstractmethod
    def delete_event_time_timer(self, timestamp: int) -> None: ...


class ProcessContext(ABC):
    """The context of a process function call."""

    @abstractmethod
    def timestamp(self) -> int | None:
        """The timestamp of the element being processed (of the timer, in ``on_timer``); ``None`` if none."""

    @abstractmethod
    def timer_service(self) -> TimerService: ...

    @abstractmethod
    def output(self, output_tag: OutputTag[Any], value: Any) -> None:
        """Emit ``value`` to side output ``output_tag`` with the current timestamp."""


class KeyedProcessContext(ProcessContext):
    @abstractmethod
    def get_current_key(self) -> Any: ...


class OnTimerContext(KeyedProcessContext):
    @abstractmethod
    def time_domain(self) -> TimeDomain: ...


class ProcessFunction(Function, Generic[IN, OUT]):
    """Low-level processing of a (non-keyed) stream: ``process_element(value, ctx)``."""

    Context = ProcessContext

    @abstractmethod
    def process_element(self, value: IN, ctx: ProcessContext) -> Iterable[OUT] | None: ...


class KeyedProcessFunction(Function, Generic[KEY, IN, OUT]):
    """Processing of a keyed stream with keyed state (``open(runtime_context)``) and timers (``on_timer``)."""

    Context = KeyedProcessContext
    OnTimerContext: TypeAlias = OnTimerContext

    @abstractmethod
    def process_element(self, value: IN, ctx: KeyedProcessContext) -> Iterable[OUT] | None: ...

    def on_timer(self, timestamp: int, ctx: OnTimerContext) -> Iterable[OUT] | None:
        """Called when a timer registered through ``ctx.timer_service()`` fires; default: nothing."""
        return None


class CoProcessFunction(Function, Generic[IN1, IN2, OUT]):
    """Processing of two connected streams (keyed ones get keyed state and timers, as Java's legacy keyed
    co-process)."""

    Context = ProcessContext
    OnTimerContext: TypeAlias = OnTimerContext

    @abstractmethod
    def process_element1(self, value: IN1, ctx: ProcessContext) -> Iterable[OUT] | None: ...

    @abstractmethod
    def process_element2(self, value: IN2, ctx: ProcessContext) -> Iterable[OUT] | None: ...

    def on_timer(self, timestamp: int, ctx: OnTimerContext) -> Iterable[OUT] | None:
        """Called when a timer fires; timers need keyed inputs (Java's keyed ``CoProcessFunction``). Default:
        nothing."""
        return None


class KeyedCoProcessFunction(Function, Generic[KEY, IN1, IN2, OUT]):
    """Processing of two connected keyed streams with shared keyed state and timers."""

    Context = KeyedProcessContext
    OnTimerContext: TypeAlias = OnTimerContext

    @abstractmethod
    def process_element1(self, value: IN1, ctx: KeyedProcessContext) -> Iterable[OUT] | None: ...

    @abstractmethod
    def process_element2(self, value: IN2, ctx: KeyedProcessContext) -> Iterable[OUT] | None: ...

    def on_timer(self, timestamp: int, ctx: OnTimerContext) -> Iterable[OUT] | None:
        return None


class SinkFunction(Function, Generic[IN]):
    """Receives every element of a stream: ``invoke(value, context)``; ``context`` has the timestamp."""

    @abstractmethod
    def invoke(self, value: IN, context: Any) -> None: ...


# -- plain callables --------------------------------------------------------------------------------------


class _CallableMap(MapFunction[Any, Any]):
    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def map(self, value: Any) -> Any:
        return self.fn(value)


class _CallableFlatMap(FlatMapFunction[Any, Any]):
    def __init__(self, fn: Callable[[Any], Iterable[Any] | None]) -> None:
        self.fn = fn

    def flat_map(self, value: Any) -> Iterable[Any] | None:
        return self.fn(value)


class _CallableFilter(FilterFunction[Any]):
    def __init__(self, fn: Callable[[Any], bool]) -> None:
        self.fn = fn

    def filter(self, value: Any) -> bool:
        return bool(self.fn(value))


class _CallableKeySelector(KeySelector[Any, Any]):
    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def get_key(self, value: Any) -> Any:
        return self.fn(value)


class _CallableSink(SinkFunction[Any]):
    def __init__(self, fn: Callable[[Any], None]) -> None:
        self.fn = fn

    def invoke(self, value: Any, context: Any) -> None:
        self.fn(value)


_WRAPPERS = (_CallableMap, _CallableFlatMap, _CallableFilter, _CallableKeySelector, _CallableSink)


def function_name(function: Any) -> str:
    """How messages name a user function: the name of the callable a plain function was wrapped from
    (``<lambda>`` for a lambda), else the function object's class name."""
    inner = function.fn if isinstance(function, _WRAPPERS) else function
    name = getattr(inner, "__name__", None)
    return name if isinstance(name, str) else type(inner).__name__


def _wrap(fn: Any, interface: type[Any], wrapper: Callable[[Any], Any], shape: str) -> Any:
    if isinstance(fn, interface):
        return fn
    if callable(fn) and not isinstance(fn, Function):
        return wrapper(fn)
    raise TypeError(f"expected a {interface.__name__} or a callable {shape}, got {type(fn).__name__}")


def as_map_function(fn: Any) -> MapFunction[Any, Any]:
    result: MapFunction[Any, Any] = _wrap(fn, MapFunction, _CallableMap, "value -> result")
    return result


def as_flat_map_function(fn: Any) -> FlatMapFunction[Any, Any]:
    result: FlatMapFunction[Any, Any] = _wrap(fn, FlatMapFunction, _CallableFlatMap, "value -> iterable")
    return result


def as_filter_function(fn: Any) -> FilterFunction[Any]:
    result: FilterFunction[Any] = _wrap(fn, FilterFunction, _CallableFilter, "value -> bool")
    return result


def as_key_selector(fn: Any) -> KeySelector[Any, Any]:
    result: KeySelector[Any, Any] = _wrap(fn, KeySelector, _CallableKeySelector, "value -> key")
    return result


def as_sink_function(fn: Any) -> SinkFunction[Any]:
    result: SinkFunction[Any] = _wrap(fn, SinkFunction, _CallableSink, "value -> None")
    return result
