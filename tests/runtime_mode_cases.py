"""Jobs whose results depend on the runtime execution mode, written once for the local and the Spark runner.

Each case builds its pipeline on an environment and returns its sink; ``EXPECTED[mode]`` is what Flink gives.
The PyFlink cases translate flink-python/pyflink/datastream/tests/test_data_stream.py: ``DataStreamBatchTests.
test_reduce_with_state`` (and its streaming twin), ``ProcessDataStreamBatchTests.test_keyed_sum`` and
``test_keyed_min_by_and_max`` (BATCH), and ``DataStreamTests.test_keyed_co_process`` (both modes, parallelism
1: one function instance, so the timer its field guards is registered once). The others follow Flink's
documented BATCH semantics (docs: dev/datastream/execution_mode.md; source: ``BatchExecutionInternalTimeService``,
``BatchGroupedReduceOperator``, ``SortingDataInput``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from panes.datastream import (
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    ListSink,
    ReduceFunction,
    RuntimeExecutionMode,
    StreamEnvironment,
)
from panes.state import ValueStateDescriptor
from panes.testing.scenario import Scenario
from panes.types import Row, Types
from panes.watermarks import WatermarkStrategy
from panes.windowing import CountEvictor, GlobalWindows, TumblingEventTimeWindows
from tests.conftest import DERIVED_SCENARIOS

BATCH = RuntimeExecutionMode.BATCH
STREAMING = RuntimeExecutionMode.STREAMING


class StatefulConcat(ReduceFunction[Any]):
    """PyFlink's ``MyReduceFunction``: concatenates names and checks a counter kept in keyed state."""

    def open(self, runtime_context: Any) -> None:
        self.state = runtime_context.get_state(ValueStateDescriptor("test_state"))

    def reduce(self, value1: Any, value2: Any) -> Any:
        count = self.state.value()
        count = 2 if count is None else count + 1
        result = (value1[0] + value2[0], value1[1])
        assert result[0] != "ab" or count == 2
        assert result[0] != "cde" or count == 3
        self.state.update(count)
        return result


def reduce_with_state(env: StreamEnvironment) -> ListSink:
    data = [("a", 0), ("c", 1), ("d", 1), ("b", 0), ("e", 1)]
    sink = ListSink()
    env.from_collection(data).key_by(lambda x: x[1]).reduce(StatefulConcat()).sink_to(sink)
    return sink


def keyed_sum(env: StreamEnvironment) -> ListSink:
    """PyFlink's batch ``test_keyed_sum``: four chained keyed sums, each emitting one result per key."""
    rows = Types.ROW_NAMED(["v1", "v2"], [Types.INT(), Types.INT()])
    data = [Row(v1=1, v2=1), Row(v1=1, v2=2), Row(v1=1, v2=3), Row(v1=5, v2=1), Row(v1=5, v2=5)]

    def twelve(data: Any) -> Any:
        for i in data:
            yield 12, i

    def each(data: Any) -> Any:
        yield from data

    sink = ListSink()
    (
        env.from_collection(data, type_info=rows)
        .key_by(lambda x: x[0])
        .sum("v2")
        .key_by(lambda x: x[1])
        .sum()
        .flat_map(twelve, output_type=Types.TUPLE([Types.INT(), Types.INT()]))
        .key_by(lambda x: x[0])
        .sum(1)
        .flat_map(each, output_type=Types.INT())
        .key_by(lambda x: x)
        .sum()
        .sink_to(sink)
    )
    return sink


def keyed_min_by_and_max(env: StreamEnvironment) -> ListSink:
    """PyFlink's batch ``test_keyed_min_by_and_max``, with its constant list key ``[1]``."""
    rows = Types.ROW_NAMED(["v1", "v2", "v3"], [Types.INT(), Types.STRING(), Types.INT()])
    data = [Row(v1=1, v2="9", v3=0), Row(v1=1, v2="5", v3=1), Row(v1=1, v2="6", v3=2)]
    data += [Row(v1=5, v2="5", v3=0), Row(v1=5, v2="3", v3=1)]

    def pairs(data: Any) -> Any:
        for i in data:
            yield int(i), 1

    def each(data: Any) -> Any:
        yield from data

    sink = ListSink()
    (
        env.from_collection(data, type_info=rows)
        .key_by(lambda x: x[0])
        .min_by("v2")
        .map(lambda x: (x[0], x[1], x[2]), output_type=Types.TUPLE([Types.INT(), Types.STRING(), Types.INT()]))
        .key_by(lambda x: x[2])
        .max(0)
        .flat_map(pairs, output_type=Types.TUPLE([Types.INT(), Types.INT()]))
        .key_by(lambda x: [1])
        .min_by()
        .flat_map(each, output_type=Types.INT())
        .key_by(lambda x: x)
        .max_by()
        .sink_to(sink)
    )
    return sink


class TimerOnce(KeyedCoProcessFunction[Any, Any, Any, Any]):
    """PyFlink's ``MyKeyedCoProcessFunction``: a field of the instance makes it register one timer only."""

    def open(self, runtime_context: Any) -> None:
        self.timer_registered = False
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element1(self, value: Any, ctx: Any) -> Any:
        if not self.timer_registered:
            ctx.timer_service().register_event_time_timer(3)
            self.timer_registered = True
        return self._count(value)

    def process_element2(self, value: Any, ctx: Any) -> Any:
        return self._count(value)

    def _count(self, value: Any) -> Any:
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        return [(value[0], count)]

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        return [("on_timer", timestamp)]


def keyed_co_process(env: StreamEnvironment) -> ListSink:
    """The PyFlink test as written: the environment's parallelism is 1."""
    env.set_parallelism(1)
    return _keyed_co_process(env, None)


def keyed_co_process_operator_parallelism(env: StreamEnvironment) -> ListSink:
    """The same job with parallelism 1 set on the keyed operator only (``set_parallelism`` on its result)."""
    return _keyed_co_process(env, 1)


def _keyed_co_process(env: StreamEnvironment, parallelism: int | None) -> ListSink:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, _: v[1])
    rows = Types.ROW([Types.STRING(), Types.INT()])
    first = env.from_collection([("a", 1), ("b", 2), ("c", 3)], type_info=rows)
    second = env.from_collection([("b", 2), ("c", 3), ("d", 4)], type_info=rows)
    sink = ListSink()
    processed = (
        first.assign_timestamps_and_watermarks(strategy)
        .connect(second.assign_timestamps_and_watermarks(strategy))
        .key_by(lambda x: x[0], lambda x: x[0])
        .process(TimerOnce())
    )
    if parallelism is not None:
        processed = processed.set_parallelism(parallelism)
    processed.map(lambda x: (x[0], x[1] + 1)).sink_to(sink)
    return sink


LATE_ELEMENT_SCENARIOS = {
    STREAMING: Scenario.load(DERIVED_SCENARIOS / "57_late_elements_that_batch_mode_keeps.scenario.json"),
    BATCH: Scenario.load(DERIVED_SCENARIOS / "batch" / "02_late_elements_kept_in_batch_mode.scenario.json"),
}
"""The case's elements (as the scenario files list them), with what Flink 2.3.0 emitted for them in each mode."""
LATE_ELEMENT_EVENTS = [(e["key"], e["ts"]) for e in LATE_ELEMENT_SCENARIOS[STREAMING].events]
"""(key, timestamp); read in two micro-batches, the watermark after the first (4999) being the one Flink has
after the element at 5000, element by element."""


def _flink_windows(scenario: Scenario) -> list[tuple[str, int, list[int]]]:
    """Flink's panes as the case emits them: (key, window start, timestamps)."""
    assert scenario.expected is not None
    return [(pane["key"], pane["window_start"], sorted(pane["ts_in_order"])) for pane in scenario.expected["main"]]


def late_element_in_a_window(env: StreamEnvironment) -> ListSink:
    """Elements that are late in STREAMING (the watermark passed their window after the first micro-batch) are
    in their windows in BATCH (which reads the micro-batches as one input)."""
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, _: v[1])
    sink = ListSink()
    (
        env.from_micro_batches([LATE_ELEMENT_EVENTS[:2], LATE_ELEMENT_EVENTS[2:]])
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda x: x[0])
        .window(TumblingEventTimeWindows.of(1000))
        .process(lambda key, ctx, elements: [(key, ctx.window().start, sorted(e[1] for e in elements))])
        .sink_to(sink)
    )
    return sink


class HourlyTimer(KeyedProcessFunction[Any, Any, Any]):
    """Counts per key and asks for a processing-time timer an hour away; its callback asks for another."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.count.update((self.count.value() or 0) + 1)
        ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 3_600_000)
        return []

    def on_timer(self, timestamp: int, ctx: Any) -> Any:
        ctx.timer_service().register_processing_time_timer(timestamp + 3_600_000)
        return [(ctx.get_current_key(), self.count.value())]


def processing_time_timers(env: StreamEnvironment) -> ListSink:
    """BATCH fires a key's processing-time timers when its input ends (and ignores the timers its callbacks
    register); STREAMING over a bounded input ends before the hour passes."""
    sink = ListSink()
    env.from_collection(["a", "b", "a"]).key_by(lambda x: x).process(HourlyTimer()).sink_to(sink)
    return sink


SORTED_INPUT = DERIVED_SCENARIOS / "sorted_input"
END_OF_STREAM_SCENARIOS = {
    STREAMING: Scenario.load(SORTED_INPUT / "01_end_of_stream_window_count_evictor.scenario.json"),
    BATCH: Scenario.load(SORTED_INPUT / "02_end_of_stream_window_count_evictor_in_batch_mode.scenario.json"),
}
"""The case's elements, with what Flink 2.3.0 emitted for them in each mode (``tools/flink_oracle``)."""
END_OF_STREAM_EVENTS = [(e["key"], e["value"], e["ts"]) for e in END_OF_STREAM_SCENARIOS[STREAMING].events]
assert [(e["key"], e["value"], e["ts"]) for e in END_OF_STREAM_SCENARIOS[BATCH].events] == END_OF_STREAM_EVENTS


def _flink_panes(scenario: Scenario) -> list[tuple[str, list[int]]]:
    assert scenario.expected is not None
    return [(pane["key"], pane["values_in_order"]) for pane in scenario.expected["main"]]


def end_of_stream_count_evictor(env: StreamEnvironment) -> ListSink:
    """Issue 10: ``GlobalWindows.create_with_end_of_stream_trigger()`` with ``CountEvictor.of(3)``. Flink's batch
    execution hands a key's elements to the window sorted by timestamp, so the evictor keeps the three latest
    by timestamp (key ``a``: 5, 3, 6); Flink 2 runs such a window (it emits only at the end of input) on sorted
    input in STREAMING too (FLIP-331, issue 21), so both modes keep the same, as real Flink 2.3.0 did on
    ``tests/scenarios/sorted_input``."""
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, _: v[2])
    sink = ListSink()
    (
        env.from_collection(END_OF_STREAM_EVENTS)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda x: x[0])
        .window(GlobalWindows.create_with_end_of_stream_trigger())
        .evictor(CountEvictor.of(3))
        .process(lambda key, ctx, elements: [(key, [e[1] for e in elements])])
        .sink_to(sink)
    )
    return sink


Case = Callable[[StreamEnvironment], ListSink]

KEYED_CO_PROCESS = [("a", 2), ("b", 2), ("b", 3), ("c", 2), ("c", 3), ("d", 2), ("on_timer", 4)]

EXPECTED: dict[str, dict[RuntimeExecutionMode, list[Any]]] = {
    "reduce_with_state": {
        BATCH: [("ab", 0), ("cde", 1)],
        STREAMING: [("a", 0), ("ab", 0), ("c", 1), ("cd", 1), ("cde", 1)],
    },
    "keyed_sum": {BATCH: [24]},
    "keyed_min_by_and_max": {BATCH: [1]},
    "keyed_co_process": {mode: list(KEYED_CO_PROCESS) for mode in (BATCH, STREAMING)},
    "keyed_co_process_operator_parallelism": {mode: list(KEYED_CO_PROCESS) for mode in (BATCH, STREAMING)},
    "late_element_in_a_window": {mode: _flink_windows(LATE_ELEMENT_SCENARIOS[mode]) for mode in (BATCH, STREAMING)},
    "processing_time_timers": {BATCH: [("a", 2), ("b", 1)], STREAMING: []},
    "end_of_stream_count_evictor": {mode: _flink_panes(END_OF_STREAM_SCENARIOS[mode]) for mode in (BATCH, STREAMING)},
}

CASES: dict[str, Case] = {
    "reduce_with_state": reduce_with_state,
    "keyed_sum": keyed_sum,
    "keyed_min_by_and_max": keyed_min_by_and_max,
    "keyed_co_process": keyed_co_process,
    "keyed_co_process_operator_parallelism": keyed_co_process_operator_parallelism,
    "late_element_in_a_window": late_element_in_a_window,
    "processing_time_timers": processing_time_timers,
    "end_of_stream_count_evictor": end_of_stream_count_evictor,
}


def comparable(values: list[Any]) -> list[Any]:
    """``values`` as plain tuples, sorted (outputs of different keys may leave in any order)."""
    return sorted((tuple(v) if isinstance(v, (tuple, Row)) else v for v in values), key=repr)
