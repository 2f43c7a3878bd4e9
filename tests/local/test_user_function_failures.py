"""A user function that raises: its element goes to the step's error side output when there is one (an
``ErrorRecord`` with the exception as the reason), else the job fails with a ``UserFunctionError`` naming
the operator (and the key and window), the user's exception as its cause."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from panes.datastream import (
    DataStream,
    KeyedProcessFunction,
    ListSink,
    OutputTag,
    ProcessFunction,
    StreamEnvironment,
)
from panes.errors import ErrorRecord, UserFunctionError
from panes.local import LocalRunner
from panes.watermarks import WatermarkStrategy
from panes.windowing import EventTimeTrigger, TumblingEventTimeWindows
from panes.windowing.windows import TimeWindow

ERRORS: OutputTag[Any] = OutputTag("errors")
BY_TS = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e[1])


def env(parallelism: int = 1) -> StreamEnvironment:
    return StreamEnvironment(LocalRunner(clock="stepping"), parallelism=parallelism)


def inverse(value: int) -> float:
    return 1 / value


class Inverse(ProcessFunction[int, float]):
    def process_element(self, value: int, ctx: Any) -> Any:
        yield 1 / value


STEPS: dict[str, Callable[[DataStream], DataStream]] = {
    "Map": lambda s: s.map(inverse),
    "FlatMap": lambda s: s.flat_map(lambda v: [inverse(v)]),
    "Filter": lambda s: s.filter(lambda v: inverse(v) > 0),
    "Process": lambda s: s.process(Inverse()),
}


def run_with_errors(stream: DataStream) -> tuple[list[Any], list[ErrorRecord]]:
    main, bad = ListSink(), ListSink()
    failing = stream.side_output_errors(ERRORS)
    failing.sink_to(main)
    failing.get_side_output(ERRORS).sink_to(bad)
    stream.env.execute()
    return main.values, bad.values


@pytest.mark.parametrize("name", sorted(STEPS))
def test_an_element_whose_function_raises_goes_to_the_error_output_and_the_others_go_on(name: str) -> None:
    e = env()
    main, bad = run_with_errors(STEPS[name](e.from_collection([2, 0, 4])))
    assert len(main) == 2
    [failure] = bad
    assert failure.value == 0 and failure.error_type == "ZeroDivisionError"
    assert failure.operator == name and "ZeroDivisionError" in failure.reason  # the step, not its instance
    assert failure.key is None and failure.window is None


@pytest.mark.parametrize("name", sorted(STEPS))
def test_without_an_error_output_the_job_fails_naming_the_operator(name: str) -> None:
    stream = STEPS[name](env().from_collection([2, 0, 4]))
    with pytest.raises(UserFunctionError) as failure:
        stream.execute_and_collect()
    first_line = str(failure.value).splitlines()[0]
    assert first_line.startswith(f"{name} (1/1)") and "ZeroDivisionError: division by zero" in first_line
    assert "side_output_errors" in str(failure.value)
    assert isinstance(failure.value.__cause__, ZeroDivisionError)


def test_a_key_selector_that_raises_sends_the_element_to_the_keyed_steps_error_output() -> None:
    e = env(parallelism=2)
    keyed = e.from_collection([1, 0, 2]).key_by(lambda v: 10 // v)
    main, bad = run_with_errors(keyed.reduce(lambda a, b: a + b))
    assert sorted(main) == [1, 2]
    [failure] = bad
    assert failure.value == 0 and failure.operator.startswith("Keyed Reduce") and failure.key is None
    assert "key selector <lambda>" in failure.reason and failure.error_type == "ZeroDivisionError"
    with pytest.raises(
        UserFunctionError, match=r"^Keyed Reduce \(\d/2\) failed: key selector <lambda> raised"
    ) as error:
        e.from_collection([0]).key_by(lambda v: 10 // v).reduce(lambda a, b: a + b).execute_and_collect()
    assert isinstance(error.value.__cause__, ZeroDivisionError)


def windowed(e: StreamEnvironment, data: list[tuple[str, int]]) -> Any:
    return e.from_collection(data).assign_timestamps_and_watermarks(BY_TS).key_by(lambda t: t[0])


def count_or_fail(key: str, ctx: Any, elements: Any) -> Any:
    if key == "b":
        raise ValueError(f"no counts for {key}")
    return [(key, ctx.window().start, len(list(elements)))]


DATA = [("a", 10), ("b", 20), ("a", 110), ("b", 120), ("a", 250)]


def test_a_window_function_that_raises_sends_the_pane_to_the_error_output_with_key_and_window() -> None:
    e = env()
    stream = windowed(e, DATA).window(TumblingEventTimeWindows.of(100))
    main, bad = run_with_errors(stream.process(count_or_fail))
    assert main == [("a", 0, 1), ("a", 100, 1), ("a", 200, 1)]
    assert [(f.key, f.window, f.value, f.timestamp) for f in bad] == [
        ("b", TimeWindow(0, 100), None, 99),
        ("b", TimeWindow(100, 200), None, 199),
    ]
    assert all(f.error_type == "ValueError" and "no counts for b" in f.reason for f in bad)


def test_a_window_function_failure_names_operator_key_and_window_in_the_first_line() -> None:
    stream = windowed(env(), DATA).window(TumblingEventTimeWindows.of(100)).process(count_or_fail)
    with pytest.raises(UserFunctionError) as failure:
        stream.execute_and_collect()
    first_line = str(failure.value).splitlines()[0]
    assert first_line.startswith("Window(Process) (1/1)")
    assert "key 'b'" in first_line and "window TimeWindow(start=0, end=100)" in first_line
    assert isinstance(failure.value.__cause__, ValueError)
    assert (failure.value.key, failure.value.window) == ("b", TimeWindow(0, 100))


def test_a_window_reduce_function_that_raises_sends_the_element_to_the_error_output() -> None:
    def add(a: tuple[str, int], b: tuple[str, int]) -> tuple[str, int]:
        if b[1] == 30:
            raise ArithmeticError("cannot add 30")
        return (a[0], a[1] + b[1])

    e = env()
    data = [("a", 10), ("b", 20), ("a", 30), ("b", 40)]
    main, bad = run_with_errors(windowed(e, data).window(TumblingEventTimeWindows.of(100)).reduce(add))
    assert sorted(main) == [("a", 10), ("b", 60)]
    [failure] = bad
    assert failure.value == ("a", 30) and failure.timestamp == 30
    assert (failure.key, failure.window) == ("a", TimeWindow(0, 100))


class FailingTrigger(EventTimeTrigger):
    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> Any:
        if element[0] == "b":
            raise RuntimeError("trigger refuses b")
        return super().on_element(element, timestamp, window, ctx)


def test_a_trigger_that_raises_is_routed_with_key_and_window_or_fails_the_job_naming_them() -> None:
    e = env()
    stream = windowed(e, DATA[:2]).window(TumblingEventTimeWindows.of(100)).trigger(FailingTrigger())
    main, bad = run_with_errors(stream.reduce(lambda a, b: a))
    # the element was in its pane before the trigger ran (Flink's order) and stays there: the window keeps its
    # cleanup timer, which fires it through the trigger at its end and then removes its state
    assert main == [("a", 10), ("b", 20)]
    [failure] = bad
    assert (failure.value, failure.key, failure.window) == (("b", 20), "b", TimeWindow(0, 100))
    assert failure.reason == "RuntimeError: trigger refuses b"
    again = env()
    windows = windowed(again, DATA[:2]).window(TumblingEventTimeWindows.of(100)).trigger(FailingTrigger())
    windows.reduce(lambda a, b: a).side_output_errors(ERRORS).sink_to(ListSink())
    assert again.execute().metrics["Window(Reduce)"].open_panes == 0  # no pane left behind
    plain = windowed(env(), DATA[:2]).window(TumblingEventTimeWindows.of(100)).trigger(FailingTrigger())
    with pytest.raises(UserFunctionError, match=r"^Window\(Reduce\) \(1/1\) failed for key 'b' in window Time"):
        plain.reduce(lambda a, b: a).execute_and_collect()


class Timeout(KeyedProcessFunction[str, tuple[str, int], str]):
    def process_element(self, value: tuple[str, int], ctx: Any) -> Any:
        ctx.timer_service().register_event_time_timer(value[1] + 50)
        return None

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        if ctx.get_current_key() == "b":
            raise KeyError("b")
        yield f"{ctx.get_current_key()}@{timestamp}"


def test_an_on_timer_that_raises_is_routed_with_its_key_and_time() -> None:
    e = env()
    main, bad = run_with_errors(windowed(e, DATA).process(Timeout()))
    assert main == ["a@60", "a@160", "a@300"]
    assert [(f.key, f.timestamp, f.value, f.window) for f in bad] == [("b", 70, None, None), ("b", 170, None, None)]
    with pytest.raises(UserFunctionError, match=r"^KeyedProcess \(1/1\) failed for key 'b': KeyError"):
        windowed(env(), DATA).process(Timeout()).execute_and_collect()


def test_a_failure_downstream_is_not_routed_to_an_upstream_error_output() -> None:
    e = env()
    upstream = e.from_collection([1, 0]).map(lambda v: v + 1).side_output_errors(ERRORS)
    downstream = upstream.map(lambda v: 1 // (v - 1)).name("Second")
    bad = ListSink()
    upstream.get_side_output(ERRORS).sink_to(bad)
    downstream.sink_to(ListSink())
    with pytest.raises(UserFunctionError, match=r"^Second \(1/1\)"):
        e.execute()
    assert bad.values == []


def test_a_sink_function_that_raises_fails_the_job_naming_the_sink() -> None:
    def refuse(value: int) -> None:
        raise OSError("disk full")

    e = env()
    e.from_collection([1]).map(lambda v: v).side_output_errors(ERRORS).add_sink(refuse)
    with pytest.raises(UserFunctionError, match=r"^Sink: FunctionSink \(1/1\) failed: OSError: disk full") as failure:
        e.execute()
    assert isinstance(failure.value.__cause__, OSError)
