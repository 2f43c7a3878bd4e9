"""How every host's operators treat a user function that raises (``report_failure``): routed to the error side
output with the key and window of the pane, or raised as a ``UserFunctionError`` naming them; the pane is
cleaned up all the same, so state does not leak. The aligned window operator (the Spark runner's) and the
general one (the local runner's) agree."""

from __future__ import annotations

from typing import Any

import pytest

from panes.errors import BadRecordError, ErrorRecord, UnsupportedOperationError, UserFunctionError
from panes.functions.stream import as_key_selector
from panes.operators.stateless import StreamMap
from panes.tags import OutputTag
from panes.testing import OneInputOperatorHarness
from panes.testing.harness import window_function_spec
from panes.windowing import TumblingEventTimeWindows
from panes.windowing.aligned import AlignedWindowOperator
from panes.windowing.operator import WindowOperator
from panes.windowing.windows import TimeWindow

ERRORS: OutputTag[Any] = OutputTag("errors")


def first(value: tuple[str, int]) -> str:
    return value[0]


def count_unless_b(key: str, ctx: Any, elements: Any) -> Any:
    if key == "b":
        raise ValueError("b")
    return [(key, len(list(elements)))]


def harness(aligned: bool, tag: OutputTag[Any] | None) -> OneInputOperatorHarness:
    kind = AlignedWindowOperator if aligned else WindowOperator
    operator = kind(TumblingEventTimeWindows.of(100), window_function_spec(count_unless_b), first)
    operator.error_tag = tag
    operator.task_name = "Window"
    return OneInputOperatorHarness(operator)


@pytest.mark.parametrize("aligned", [False, True])
def test_a_window_function_failure_is_routed_with_key_and_window_and_the_pane_is_cleaned(aligned: bool) -> None:
    h = harness(aligned, ERRORS)
    for value, ts in [("a", 1), ("b", 2), ("b", 3), ("a", 150)]:
        h.process_element((value, ts), ts)
    h.process_watermark(99)
    assert h.extract_output_values() == [("a", 1)]
    [record] = h.get_side_output(ERRORS)
    failure = record.value
    assert isinstance(failure, ErrorRecord) and record.timestamp == 99
    assert (failure.value, failure.key, failure.window, failure.operator) == (None, "b", TimeWindow(0, 100), "Window")
    assert failure.error_type == "ValueError" and failure.reason == "ValueError: b"
    assert h.operator.state_entries() == 1  # only a's pane [100, 200) is left
    h.process_watermark(1000)
    assert h.extract_output_values() == [("a", 1), ("a", 1)]


@pytest.mark.parametrize("aligned", [False, True])
def test_without_an_error_output_the_failure_names_operator_key_and_window(aligned: bool) -> None:
    h = harness(aligned, None)
    h.process_element(("b", 2), 2)
    with pytest.raises(UserFunctionError) as failure:
        h.process_watermark(99)
    assert str(failure.value).splitlines()[0] == (
        "Window failed for key 'b' in window TimeWindow(start=0, end=100): ValueError: b"
    )
    assert isinstance(failure.value.__cause__, ValueError)
    assert failure.value.operator == "Window"


@pytest.mark.parametrize("aligned", [False, True])
def test_an_incremental_aggregation_failure_is_routed_with_the_element_and_key(aligned: bool) -> None:
    def add(a: tuple[str, int], b: tuple[str, int]) -> tuple[str, int]:
        if b[1] == 7:
            raise ArithmeticError("7")
        return (a[0], a[1] + b[1])

    kind = AlignedWindowOperator if aligned else WindowOperator
    operator = kind(TumblingEventTimeWindows.of(100), window_function_spec(reduce=add), first)
    operator.error_tag = ERRORS
    h = OneInputOperatorHarness(operator)
    for value in [("a", 1), ("a", 7), ("a", 2)]:
        h.process_element(value, value[1])
    h.process_watermark(1000)
    assert h.extract_output_values() == [("a", 3)]
    [record] = h.get_side_output(ERRORS)
    assert (record.value.value, record.value.key, record.timestamp) == (("a", 7), "a", 7)
    assert record.value.window == TimeWindow(0, 100)


def test_bad_records_and_flinks_runtime_refusals_are_not_user_function_errors() -> None:
    class Refuse:
        def map(self, value: Any) -> Any:
            if value == 1:
                raise BadRecordError("one is bad")
            raise UnsupportedOperationError("never")

        def open(self, context: Any) -> None:
            return None

    operator = StreamMap(Refuse())
    operator.error_tag = ERRORS
    h = OneInputOperatorHarness(operator)
    h.process_element(1)
    [record] = h.get_side_output(ERRORS)
    assert record.value.error_type == "BadRecordError" and record.value.reason == "one is bad"
    with pytest.raises(UnsupportedOperationError):
        h.process_element(2)


def test_a_failure_reported_by_another_operator_passes_through_unchanged() -> None:
    reported = UserFunctionError(ZeroDivisionError("x"), operator="Downstream")

    class Forward:
        def map(self, value: Any) -> Any:
            raise reported

        def open(self, context: Any) -> None:
            return None

    operator = StreamMap(Forward(), as_key_selector(lambda v: v).get_key)
    operator.error_tag = ERRORS
    h = OneInputOperatorHarness(operator)
    with pytest.raises(UserFunctionError) as failure:
        h.process_element(1)
    assert failure.value is reported and h.get_side_output(ERRORS) == []


@pytest.mark.parametrize("aligned", [False, True])
def test_a_window_that_fires_at_once_for_a_late_element_reports_its_window(aligned: bool) -> None:
    kind = AlignedWindowOperator if aligned else WindowOperator
    operator = kind(TumblingEventTimeWindows.of(100), window_function_spec(count_unless_b), first, allowed_lateness=50)
    operator.error_tag = ERRORS
    late = OneInputOperatorHarness(operator)
    late.process_watermark(120)
    late.process_element(("b", 60), 60)  # its window [0, 100) is past the watermark but within the lateness
    [record] = late.get_side_output(ERRORS)
    assert (record.value.value, record.value.key, record.value.window) == (("b", 60), "b", TimeWindow(0, 100))


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("Map (1/1)", "Map"),
        ("Window(Reduce) (shard 2/4)", "Window(Reduce)"),
        ("Sink: JdbcSink (2/3)", "Sink: JdbcSink"),
        ("Timestamps/Watermarks", "Timestamps/Watermarks"),
        ("counts (by page)", "counts (by page)"),
    ],
)
def test_an_error_record_names_the_step_without_its_instance(given: str, kept: str) -> None:
    from panes.errors import ErrorRecord

    record = ErrorRecord({"v": 1}, None, "why", "ValueError", given)
    assert record.operator == kept
    assert ErrorRecord(**record.__dict__).operator == kept  # made again from its fields: the same
